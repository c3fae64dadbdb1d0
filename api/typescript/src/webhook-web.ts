// The webhook verifier on Web Crypto (crypto.subtle), for runtimes without
// node:crypto (browsers' workers, Deno, edge functions); asynchronous as
// crypto.subtle is. Its answers are verifyWebhook's (test/webhook.test.ts
// holds them to each other).
import { decodeEvent, matchAny, signedPayload, toHex, type RawBody, type VerifyOptions } from "./webhook-rules.js";
import type { Event } from "./types.js";

/** verifyWebhookAsync is verifyWebhook on Web Crypto: it resolves, or rejects with a WebhookSignatureError. */
export async function verifyWebhookAsync(rawBody: RawBody, header: string | null | undefined, secret: string, opts?: VerifyOptions): Promise<void> {
  const { payload, signatures } = signedPayload(rawBody, header, opts);
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, payload));
  matchAny(signatures, toHex(mac));
}

/** parseEventAsync is parseEvent on Web Crypto. */
export async function parseEventAsync(rawBody: RawBody, header: string | null | undefined, secret: string, opts?: VerifyOptions): Promise<Event> {
  await verifyWebhookAsync(rawBody, header, secret, opts);
  return decodeEvent(rawBody);
}
