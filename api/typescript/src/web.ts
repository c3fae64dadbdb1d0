// @memocart/client/web: the client and the Web Crypto webhook verifier,
// without the Node one, so that nothing imports node:crypto (browsers,
// workers, edge runtimes).
export * from "./client.js";
export * from "./errors.js";
export type * from "./types.js";
export { decimalProperties } from "./schema.js";
export {
  DEFAULT_TOLERANCE_SEC,
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  SIGNATURE_HEADER,
  WebhookSignatureError,
  type RawBody,
  type SignatureFailure,
  type VerifyOptions,
} from "./webhook-rules.js";
export { parseEventAsync, verifyWebhookAsync } from "./webhook-web.js";
