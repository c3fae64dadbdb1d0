import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import {
  parseEvent,
  parseEventAsync,
  verifyWebhook,
  verifyWebhookAsync,
  WebhookSignatureError,
  type SignatureFailure,
  type VerifyOptions,
} from "../src/index.js";

const testSecret = "whsec_0123456789abcdefghijklmnopqrstuv";

/** sign is the service's signature of body at unix second t (models.SignWebhook). */
function sign(secret: string, t: number, body: string | Uint8Array): string {
  const mac = createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  return `t=${t},v1=${mac}`;
}

/** outcome runs both verifiers and checks they agree: null when valid, else the reason refused. */
async function outcome(body: string | Uint8Array, header: string | null | undefined, opts: VerifyOptions): Promise<SignatureFailure | null> {
  const reason = (err: unknown): SignatureFailure => {
    assert.ok(err instanceof WebhookSignatureError, `${err}`);
    return err.reason;
  };
  let sync: SignatureFailure | null = null;
  try {
    verifyWebhook(body, header, testSecret, opts);
  } catch (err) {
    sync = reason(err);
  }
  const web = await verifyWebhookAsync(body, header, testSecret, opts).then(
    () => null,
    (err: unknown) => reason(err),
  );
  assert.equal(web, sync, "the Web Crypto verifier answers as the Node one");
  return sync;
}

// A signature computed outside this code (Python's hmac, as the Go
// client's test has it), so the verifiers and the test's signer cannot
// share a mistake.
test("a known signature", async () => {
  const body = `{"id":"evt_AAAAAAAAAAAAAAAAAAAAAAAA"}`;
  const header = "t=1795000000,v1=b5ddd1d0baa39300420f945bc0e731f948318500d6ba45407ce888bd859991dd";
  assert.equal(await outcome(body, header, { now: () => (1795000000 + 60) * 1000 }), null);
  assert.equal(sign(testSecret, 1795000000, body), header);
});

test("verifyWebhook", async (t) => {
  const now = Date.UTC(2026, 10, 22, 1, 4, 41);
  const ts = now / 1000;
  const body = `{"id":"evt_T7cYw1QnLk0ZbR4pXv9sMf2D","type":"refund.sent"}`;
  const valid = sign(testSecret, ts, body);
  const sig = valid.slice(-64);
  const wrongSig = sign("whsec_another", ts, body).slice(-64);
  const cases: [string, string | Uint8Array, string | null | undefined, VerifyOptions, SignatureFailure | null][] = [
    ["valid", body, valid, {}, null],
    ["valid, body as bytes", Buffer.from(body), valid, {}, null],
    ["valid, spaces after commas", body, `t=${ts}, v1=${sig}`, {}, null],
    ["wrong secret", body, sign("whsec_another", ts, body), {}, "mismatch"],
    ["tampered body", body.replace("refund.sent", "refund.failed"), valid, {}, "mismatch"],
    ["timestamp changed", body, `t=${ts + 1},v1=${sig}`, {}, "mismatch"],
    ["six minutes old", body, sign(testSecret, ts - 360, body), {}, "expired"],
    ["six minutes ahead", body, sign(testSecret, ts + 360, body), {}, "expired"],
    ["four minutes old", body, sign(testSecret, ts - 240, body), {}, null],
    ["six minutes old, tolerance 10 min", body, sign(testSecret, ts - 360, body), { toleranceSec: 600 }, null],
    ["two minutes old, tolerance 1 min", body, sign(testSecret, ts - 120, body), { toleranceSec: 60 }, "expired"],
    ["several signatures, matching first", body, `t=${ts},v1=${sig},v1=${wrongSig}`, {}, null],
    ["several signatures, matching last", body, `t=${ts},v1=${wrongSig},v1=${sig}`, {}, null],
    ["several signatures, none matching", body, `t=${ts},v1=${wrongSig},v1=${sig.slice(0, 63)}x`, {}, "mismatch"],
    ["a signature cut short", body, `t=${ts},v1=${sig.slice(0, 32)}`, {}, "mismatch"],
    ["no header", body, "", {}, "missing"],
    ["header absent", body, null, {}, "missing"],
    ["no v1", body, `t=${ts}`, {}, "missing"],
    ["no t", body, `v1=${sig}`, {}, "missing"],
    ["t not a number", body, `t=soon,v1=${sig}`, {}, "missing"],
    ["upper-case hex", body, `t=${ts},v1=${sig.toUpperCase()}`, {}, "mismatch"],
  ];
  for (const [name, b, header, opts, want] of cases) {
    await t.test(name, async () => {
      assert.equal(await outcome(b, header, { now: () => now, ...opts }), want);
    });
  }
});

// A verified delivery decodes into its typed event, amounts as strings; an
// unverified one is refused without being decoded.
test("parseEvent", async () => {
  const body = readFileSync(new URL("../../../client/testdata/refund_sent.json", import.meta.url));
  const now = Date.UTC(2026, 10, 22, 1, 4, 41);
  const opts = { now: () => now };
  const header = sign(testSecret, now / 1000, body);
  for (const e of [parseEvent(body, header, testSecret, opts), await parseEventAsync(body, header, testSecret, opts)]) {
    const o = e.data.order;
    const r = e.data.refund!;
    assert.equal(e.id, "evt_T7cYw1QnLk0ZbR4pXv9sMf2D");
    assert.equal(e.type, "refund.sent");
    assert.equal(e.created_at, "2026-11-22T01:04:40Z");
    assert.equal(e.mode, "test");
    assert.equal(o.status, "failed");
    assert.equal(o.total, "409.47");
    assert.equal(o.payment.amount, "409.47");
    assert.equal(o.failure_reason, "The product could not be bought.");
    assert.equal(o.cancellation_reason, null);
    assert.equal(o.metadata["erp"], "77");
    assert.equal(e.data.payment, undefined);
    assert.equal(r.amount, "409.47");
    assert.equal(r.destination?.memo, "42");
    assert.equal(r.sent_at, e.created_at);
  }

  const forged = sign("whsec_another", now / 1000, body);
  assert.throws(() => parseEvent(body, forged, testSecret, opts), (err: unknown) => err instanceof WebhookSignatureError && err.reason === "mismatch");
  await assert.rejects(parseEventAsync(body, forged, testSecret, opts), (err: unknown) => err instanceof WebhookSignatureError && err.reason === "mismatch");
  const bad = `{"id":`;
  assert.throws(() => parseEvent(bad, sign(testSecret, now / 1000, bad), testSecret, opts), /memocart: decoding the event/);
});

// @memocart/client/web is for runtimes without node:crypto: no module it
// loads imports a node: module.
test("the web entry point imports nothing of Node", () => {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const src = readFileSync(file, "utf8");
    for (const [, spec] of src.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)) {
      assert.ok(!spec!.startsWith("node:"), `${file} imports ${spec}`);
      if (spec!.startsWith(".")) visit(join(dirname(file), spec!));
    }
  };
  visit(fileURLToPath(new URL("../src/web.js", import.meta.url)));
  assert.ok(seen.size >= 5, `followed ${[...seen].join(", ")}`);
  const index = readFileSync(fileURLToPath(new URL("../src/webhook.js", import.meta.url)), "utf8");
  assert.match(index, /from "node:crypto"/, "the check would see a node: import");
});
