import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Memocart } from "../src/index.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

// src/schema.ts is what npm run generate writes from api/openapi.json
// today: a contract change not regenerated (and so not followed by the
// compiler through the client) fails here.
test("src/schema.ts is generated from api/openapi.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "memocart-schema-"));
  try {
    const out = join(dir, "schema.ts");
    execFileSync(process.execPath, [join(root, "scripts/generate.mjs"), out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    const want = readFileSync(out, "utf8");
    const got = readFileSync(join(root, "src/schema.ts"), "utf8");
    assert.ok(got === want, "src/schema.ts differs from what api/openapi.json generates: run npm --prefix api/typescript run generate");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Every operation under /v1 has a method of its operationId, and every
// method of the client that sends a request is one of them (the others
// are the iterators and the wait, built on them).
test("every operation has a method", () => {
  const doc = JSON.parse(readFileSync(join(root, "../openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ops = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith("/v1/")) continue;
    for (const [method, op] of Object.entries(item)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) {
        assert.ok(op.operationId, `${method} ${path} has an operationId`);
        ops.add(op.operationId);
      }
    }
  }
  const built = new Set(["orders", "refunds", "events", "eventsAfter", "waitForOrderStatus"]);
  const methods = new Set(Object.getOwnPropertyNames(Memocart.prototype).filter((m) => m !== "constructor" && !built.has(m)));
  assert.deepEqual([...methods].sort(), [...ops].sort());
});
