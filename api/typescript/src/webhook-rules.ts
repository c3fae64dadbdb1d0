// The rules of a webhook delivery's signature, shared by the Node
// verifier (webhook.ts, node:crypto) and the Web Crypto one
// (webhook-web.ts): the header's parts, the timestamp's age, the signed
// text and the comparison. Only the HMAC differs between them.
import { decodeJSON } from "./json.js";
import type { Event } from "./types.js";

/**
 * The headers of a webhook delivery. SIGNATURE_HEADER carries
 * "t=<unix seconds>,v1=<hex>", where <hex> is HMAC-SHA256(endpoint secret,
 * "<t>.<raw body>"); there may be several v1 values. EVENT_ID_HEADER
 * repeats the event's id (deduplicate by it), EVENT_TYPE_HEADER its type.
 */
export const SIGNATURE_HEADER = "Memocart-Signature";
export const EVENT_ID_HEADER = "Memocart-Event-Id";
export const EVENT_TYPE_HEADER = "Memocart-Event-Type";

/**
 * DEFAULT_TOLERANCE_SEC is how far a delivery's timestamp may be from the
 * receiver's clock, either way: an older delivery is a replay to refuse.
 */
export const DEFAULT_TOLERANCE_SEC = 300;

/** The options of the verifiers. */
export interface VerifyOptions {
  /** How far the timestamp may be from now, in seconds (DEFAULT_TOLERANCE_SEC; 0 or less keeps it). */
  toleranceSec?: number;
  /** The clock the timestamp is checked against, in milliseconds (Date.now otherwise). */
  now?: () => number;
}

/** Why a delivery was refused: no usable header, a timestamp out of tolerance, or no matching signature. */
export type SignatureFailure = "missing" | "expired" | "mismatch";

const messages: Record<SignatureFailure, string> = {
  missing: "memocart: no webhook signature: the header is missing or has no t= and v1= parts",
  expired: "memocart: webhook signature timestamp outside the tolerance: a replay, or a clock far off",
  mismatch: "memocart: no v1 webhook signature matches the body and timestamp",
};

/** WebhookSignatureError is a refused delivery; `reason` says why. Answer it with a 400. */
export class WebhookSignatureError extends Error {
  override name = "WebhookSignatureError";
  readonly reason: SignatureFailure;
  constructor(reason: SignatureFailure) {
    super(messages[reason]);
    this.reason = reason;
  }
}

/** A raw request body: the bytes as they came (a Buffer is one), or their text. */
export type RawBody = string | Uint8Array;

const encoder = new TextEncoder();

/**
 * signedPayload checks the header and the timestamp and returns what the
 * HMAC covers ("<t>." then the raw body, as bytes) and the v1 values to
 * compare with it. The service's own check is models.VerifyWebhookSignature;
 * this is the same rule.
 */
export function signedPayload(rawBody: RawBody, header: string | null | undefined, opts: VerifyOptions = {}): { payload: Uint8Array; signatures: string[] } {
  let ts = "";
  const signatures: string[] = [];
  for (const part of (header ?? "").split(",")) {
    const p = part.trim();
    const eq = p.indexOf("=");
    if (eq < 0) continue;
    const k = p.slice(0, eq);
    const v = p.slice(eq + 1);
    if (k === "t") ts = v;
    else if (k === "v1") signatures.push(v);
  }
  if (ts === "" || signatures.length === 0 || !/^[+-]?\d+$/.test(ts)) throw new WebhookSignatureError("missing");
  const tolerance = opts.toleranceSec && opts.toleranceSec > 0 ? opts.toleranceSec : DEFAULT_TOLERANCE_SEC;
  const age = (opts.now ?? Date.now)() / 1000 - Number(ts);
  if (age > tolerance || age < -tolerance) throw new WebhookSignatureError("expired");
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const prefix = encoder.encode(`${ts}.`);
  const payload = new Uint8Array(prefix.length + body.length);
  payload.set(prefix);
  payload.set(body, prefix.length);
  return { payload, signatures };
}

/**
 * matchAny compares each v1 value with the expected hex digest in constant
 * time (the time does not depend on where they differ), and throws unless
 * one is equal. Hex is compared as text, as the service writes it: lower
 * case.
 */
export function matchAny(signatures: readonly string[], expectedHex: string): void {
  let ok = false;
  for (const s of signatures) {
    if (s.length !== expectedHex.length) continue;
    let diff = 0;
    for (let i = 0; i < s.length; i++) diff |= s.charCodeAt(i) ^ expectedHex.charCodeAt(i);
    ok = ok || diff === 0;
  }
  if (!ok) throw new WebhookSignatureError("mismatch");
}

/** toHex writes bytes as lower-case hex. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** decodeEvent reads a verified body as the client reads the contract (amounts as strings). */
export function decodeEvent(rawBody: RawBody): Event {
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  try {
    return decodeJSON(text) as Event;
  } catch (err) {
    throw new Error(`memocart: decoding the event: ${(err as Error).message}`, { cause: err });
  }
}
