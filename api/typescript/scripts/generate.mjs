// Writes the types of api/openapi.json to the file named by the first
// argument (npm run generate: src/schema.ts), with openapi-typescript as
// its CLI writes them but for one rule: an amount the contract types
// `number` (a JSON number "written from the decimal, never through a
// float") is typed `string`, because the client reads its digits as they
// came (src/json.ts) rather than through a float. The file ends with the
// names of those properties, which that reader needs.
//
// test/schema.test.ts runs this again and fails when the committed file
// differs: a contract change the client does not follow fails npm test.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER, STRING } from "openapi-typescript";

// The second argument names another document (the tests give crafted ones).
const out = process.argv[2];
const spec = process.argv[3] ? pathToFileURL(process.argv[3]) : new URL("../../openapi.json", import.meta.url);
if (!out) {
  console.error("usage: node scripts/generate.mjs <output.ts> [openapi.json]");
  process.exit(2);
}

const names = decimalProperties(JSON.parse(readFileSync(spec, "utf8")));
const ast = await openapiTS(spec, {
  // A property with a default is optional to send: the service fills it in
  // (openapi-typescript would type it required).
  defaultNonNullable: false,
  transform(schema) {
    if (schema.type === "number") return STRING;
    return undefined;
  },
});
const footer = `
/**
 * The properties api/openapi.json types \`number\`: decimal amounts, sent
 * as JSON numbers with the currency's digits. The client keeps each as the
 * string of its digits (see src/json.ts); their types above say \`string\`.
 */
export const decimalProperties = ${JSON.stringify(names)} as const;
`;
writeFileSync(out, COMMENT_HEADER + astToString(ast) + footer);

// decimalProperties returns the sorted names of the object properties the
// document types `number`. The reader converts by property name, so the
// rule holds only while a name means an amount wherever it appears: it
// throws when a `number` is not a property's own schema (an array item, a
// map value), when a name is `number` in one place and may be another JSON
// number in another (an integer; a string elsewhere is no matter: the
// reader converts number literals only), or when a type list allows a
// number but not a string (the type could then not be `string`).
function decimalProperties(doc) {
  const decimal = new Set();
  const other = new Set();
  const resolve = (s) => {
    while (s && typeof s.$ref === "string") {
      s = s.$ref
        .slice(2)
        .split("/")
        .reduce((o, k) => o[k.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
    }
    return s;
  };
  // walk visits every schema; property is the name of the object property
  // whose own schema node is, if it is one.
  const walk = (node, where, property) => {
    if (Array.isArray(node)) {
      node.forEach((n, i) => walk(n, `${where}/${i}`));
      return;
    }
    if (!node || typeof node !== "object") return;
    if (property !== undefined) {
      const t = resolve(node)?.type;
      if (t === "number") decimal.add(property);
      else if (t === undefined || t === "integer" || (Array.isArray(t) && (t.includes("integer") || t.includes("number")))) {
        other.add(property);
      }
    } else if (node.type === "number") {
      throw new Error(`${where}: a number that is not an object property's own schema`);
    }
    if (Array.isArray(node.type) && node.type.includes("number") && !node.type.includes("string")) {
      throw new Error(`${where}: a number that cannot be typed as a string`);
    }
    for (const [k, v] of Object.entries(node)) {
      if (k === "examples" || k === "example" || k === "enum" || k === "default") continue;
      if (k === "properties" && v && typeof v === "object" && !Array.isArray(v)) {
        for (const [name, sub] of Object.entries(v)) walk(sub, `${where}/properties/${name}`, name);
      } else {
        walk(v, `${where}/${k}`);
      }
    }
  };
  walk(doc, "#");
  const both = [...decimal].filter((n) => other.has(n));
  if (both.length > 0) {
    throw new Error(`properties typed number in one place and otherwise in another: ${both.join(", ")}`);
  }
  return [...decimal].sort();
}
