// @memocart/client: the TypeScript client of the Memocart API (see
// README.md). This entry point is for Node: it has both webhook verifiers;
// @memocart/client/web has all but the one on node:crypto.
export * from "./web.js";
export { parseEvent, verifyWebhook } from "./webhook.js";
export type { components, operations, paths } from "./schema.js";
