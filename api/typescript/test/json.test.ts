import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { decodeJSON } from "../src/json.js";

// The amounts' names are read as keys only: a key of another name, the
// same text inside a string (escaped quotes, a trailing backslash) and
// string amounts are left as JSON.parse reads them.
test("decodeJSON keeps the contract's number amounts as strings", () => {
  const cases: [string, unknown][] = [
    [`{"total":409.47}`, { total: "409.47" }],
    [`{"total" : 10.00 , "quantity":2}`, { total: "10.00", quantity: 2 }],
    [`{"total":1e3}`, { total: "1e3" }],
    [`{"total":"409.47"}`, { total: "409.47" }],
    [`{"total":null}`, { total: null }],
    [`{"items":[{"unit_price":0.50,"line_total":1.00}],"subtotal":1.00}`, { items: [{ unit_price: "0.50", line_total: "1.00" }], subtotal: "1.00" }],
    [`{"title":"a \\"total\\":1.5 b","n":1.5}`, { title: 'a "total":1.5 b', n: 1.5 }],
    [`{"title":"ends in \\\\","total":2.50}`, { title: "ends in \\", total: "2.50" }],
    [`{"metadata":{"price":"9"},"price":3.10}`, { metadata: { price: "9" }, price: "3.10" }],
    [`[1.10, {"tax":0.80}]`, [1.1, { tax: "0.80" }]],
  ];
  for (const [text, want] of cases) assert.deepEqual(decodeJSON(text), want, text);
  assert.throws(() => decodeJSON(`{"total":}`), SyntaxError);
});

const root = fileURLToPath(new URL("../../", import.meta.url));

// The generator refuses a document where reading amounts by name would
// be wrong: a name that is an integer elsewhere, or a number that is not
// an object property's own (an array of numbers).
test("the generator refuses ambiguous amounts", () => {
  const dir = mkdtempSync(join(tmpdir(), "memocart-gen-"));
  try {
    const doc = JSON.parse(readFileSync(join(root, "../openapi.json"), "utf8"));
    const generate = (d: unknown) => {
      writeFileSync(join(dir, "openapi.json"), JSON.stringify(d));
      return execFileSync(process.execPath, [join(root, "scripts/generate.mjs"), join(dir, "schema.ts"), join(dir, "openapi.json")], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      });
    };
    generate(doc);
    assert.match(readFileSync(join(dir, "schema.ts"), "utf8"), /export const decimalProperties = \[.*"total".*\] as const;/);

    const integerTotal = structuredClone(doc);
    integerTotal.components.schemas.EventList.properties.total = { type: "integer" };
    assert.throws(() => generate(integerTotal), /typed number in one place and otherwise in another: total/);

    const numberItems = structuredClone(doc);
    numberItems.components.schemas.Cart.properties.weights = { type: "array", items: { type: "number" } };
    assert.throws(() => generate(numberItems), /not an object property's own schema/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
