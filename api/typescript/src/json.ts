import { decimalProperties } from "./schema.js";

// The contract sends an order's and a cart's amounts as JSON numbers with
// the currency's digits ("total": 409.47, "subtotal": 10.00). JSON.parse
// would make floats of them (10.00 becomes 10, and sums drift), so the
// client reads each such number as the string of its digits: "409.47",
// "10.00". The names come from api/openapi.json (decimalProperties,
// written by npm run generate, which checks that no such name is another
// kind of number anywhere in the document).
const decimalNames = new Set<string>(decimalProperties);

// One pass over the text that matches whole string tokens, so that a
// quote inside a string never starts a match; a key of decimalNames
// followed by a number literal gets that literal quoted.
const token = /("(?:[^"\\]|\\.)*")(\s*:\s*)(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=\s*[,}\]])|"(?:[^"\\]|\\.)*"/g;

/**
 * decodeJSON parses an answer or a webhook body as the client reads the
 * contract: JSON, with the amounts the contract types `number` kept as
 * strings of their digits.
 */
export function decodeJSON(text: string): unknown {
  const quoted = text.replace(token, (match, key: string | undefined, colon: string, num: string) => {
    if (key === undefined || !decimalNames.has(JSON.parse(key) as string)) return match;
    return `${key}${colon}"${num}"`;
  });
  return JSON.parse(quoted);
}
