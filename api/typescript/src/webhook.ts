// The webhook verifier for Node: node:crypto's HMAC, synchronous. The
// rules are in webhook-rules.ts; webhook-web.ts is the same check on Web
// Crypto, for runtimes without node:crypto.
import { createHmac, timingSafeEqual } from "node:crypto";
import { decodeEvent, signedPayload, WebhookSignatureError, type RawBody, type VerifyOptions } from "./webhook-rules.js";
import type { Event } from "./types.js";

/**
 * verifyWebhook checks a webhook delivery, or throws a
 * WebhookSignatureError: rawBody is the request body before any decoding,
 * header the Memocart-Signature value, secret the endpoint's (whsec_…).
 * The timestamp must be within the tolerance of the clock, and one v1
 * signature must be the HMAC-SHA256 of "<t>.<raw body>" under secret,
 * compared in constant time.
 */
export function verifyWebhook(rawBody: RawBody, header: string | null | undefined, secret: string, opts?: VerifyOptions): void {
  const { payload, signatures } = signedPayload(rawBody, header, opts);
  const expected = Buffer.from(createHmac("sha256", secret).update(payload).digest("hex"));
  let ok = false;
  for (const s of signatures) {
    const got = Buffer.from(s);
    ok = (got.length === expected.length && timingSafeEqual(got, expected)) || ok;
  }
  if (!ok) throw new WebhookSignatureError("mismatch");
}

/**
 * parseEvent verifies a delivery as verifyWebhook does and decodes its
 * body into the typed event. Deliveries come at least once and in any
 * order: deduplicate by the event's id.
 */
export function parseEvent(rawBody: RawBody, header: string | null | undefined, secret: string, opts?: VerifyOptions): Event {
  verifyWebhook(rawBody, header, secret, opts);
  return decodeEvent(rawBody);
}
