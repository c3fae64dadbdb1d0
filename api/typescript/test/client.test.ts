import assert from "node:assert/strict";
import { test } from "node:test";
import { MemocartError, type CreateCartParams } from "../src/index.js";
import { fakeAPI, type Answer } from "./fake.js";

const cartBody = `{"cart":{"id":"crt_AAAAAAAAAAAAAAAAAAAAAAAA","status":"ready","currency":"USD",
 "subtotal":10.00,"shipping":5.00,"tax":0.80,"service_fee":0.50,"total":16.30,"ship_to_country":"US",
 "created_at":"2026-11-22T00:20:17Z","expires_at":"2026-11-22T00:50:17Z","metadata":{"total":"9"},
 "items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","marketplace":"amazon","product_id":"B08N5WRWNW",
  "title":"A \\"total\\": 1.5 thing","image_url":"https://example.com/a.jpg","quantity":1,"unit_price":"10.00","line_total":10.00}]}}`;

const cartParams: CreateCartParams = {
  items: [{ product_url: "https://www.amazon.com/dp/B08N5WRWNW", quantity: 1 }],
  ship_to_country: "US",
};

function unavailable(retryAfter?: string): Answer {
  return {
    status: 503,
    body: `{"error":{"code":"service_unavailable","message":"Try again."}}`,
    ...(retryAfter === undefined ? {} : { headers: { "Retry-After": retryAfter } }),
  };
}

// A POST failed by a 5xx, a 429 and a dropped connection is sent again
// with the same key and body, and the next POST draws another key.
test("retries reuse the idempotency key", async () => {
  const api = await fakeAPI(
    [
      unavailable(),
      { status: 429, body: `{"error":{"code":"rate_limited","message":"Slow down."}}`, headers: { "Retry-After": "0" } },
      { hangUp: true },
      { status: 201, body: cartBody },
    ],
    { maxAttempts: 5, maxElapsedMs: 60_000 },
  );
  const cart = await api.client.createCart(cartParams);
  assert.equal(cart.id, "crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(api.requests.length, 4, "three retries");
  const key = api.requests[0]!.idempotencyKey;
  assert.match(key ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a random UUID (122 random bits)");
  for (const [i, r] of api.requests.entries()) {
    assert.equal(r.idempotencyKey, key, `attempt ${i + 1} reuses the key`);
    assert.equal(r.body, api.requests[0]!.body, `attempt ${i + 1} sends the same body`);
    assert.equal(r.method, "POST");
    assert.equal(r.path, "/v1/carts");
    assert.equal(r.auth, "Bearer mc_test_key");
  }
  assert.deepEqual(JSON.parse(api.requests[0]!.body), cartParams);

  api.setAnswers([{ status: 201, body: cartBody }]);
  await api.client.createCart(cartParams);
  const nextKey = api.requests[4]!.idempotencyKey;
  assert.ok(nextKey && nextKey !== key, `the next POST draws a new key (got ${nextKey}, the first was ${key})`);
});

// The key is for POSTs; GETs are retried without one.
test("GETs send no idempotency key", async () => {
  const api = await fakeAPI([unavailable(), { status: 200, body: cartBody }]);
  await api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(api.requests.length, 2);
  for (const r of api.requests) {
    assert.equal(r.idempotencyKey, undefined);
    assert.equal(r.method, "GET");
    assert.equal(r.path, "/v1/carts/crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  }
});

// The wait after a 429 or a 503 is its Retry-After, not the (1 ms) backoff.
test("Retry-After is honoured", async () => {
  const api = await fakeAPI(
    [
      { status: 429, body: `{"error":{"code":"rate_limited","message":"Slow down."}}`, headers: { "Retry-After": "7" } },
      unavailable("2"),
      { status: 200, body: cartBody },
    ],
    { backoffFirstMs: 1, backoffMaxMs: 4 },
  );
  await api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(api.requests.length, 3);
  assert.deepEqual(api.clock.waits, [7_000, 2_000]);
});

// Retries stop at the attempts budget, and before a wait that would end
// past the time budget; the last answer is the error.
test("the retry budget is bounded", async (t) => {
  for (const tc of [
    { name: "attempts", answer: unavailable(), maxAttempts: 3, maxElapsedMs: 60_000, want: 3 },
    { name: "time", answer: unavailable("1"), maxAttempts: 10, maxElapsedMs: 1_500, want: 2 },
    { name: "time, at the limit", answer: unavailable("1"), maxAttempts: 10, maxElapsedMs: 2_000, want: 3 },
    { name: "one attempt", answer: unavailable(), maxAttempts: 1, maxElapsedMs: 60_000, want: 1 },
    { name: "defaults: 4 attempts", answer: unavailable("1"), want: 4 },
    { name: "defaults: 30 s", answer: unavailable("20"), want: 2 },
  ]) {
    await t.test(tc.name, async () => {
      const opts = tc.maxAttempts === undefined ? {} : { maxAttempts: tc.maxAttempts, maxElapsedMs: tc.maxElapsedMs };
      const api = await fakeAPI([tc.answer], opts);
      await assert.rejects(api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA"), (err: unknown) => {
        assert.ok(err instanceof MemocartError);
        assert.equal(err.status, 503);
        assert.equal(err.code, "service_unavailable");
        return true;
      });
      assert.equal(api.requests.length, tc.want);
      const slept = api.clock.waits.reduce((a, b) => a + b, 0);
      assert.ok(slept <= (tc.maxElapsedMs ?? 30_000), `slept ${slept} ms in all`);
    });
  }
});

// The backoff without Retry-After doubles from the first wait to the
// limit, each drawn in its upper half.
test("the backoff grows and is bounded", async () => {
  const api = await fakeAPI([unavailable()], { maxAttempts: 7, maxElapsedMs: 3_600_000, backoffFirstMs: 100, backoffMaxMs: 1_000 });
  await assert.rejects(api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA"), MemocartError);
  const ceilings = [100, 200, 400, 800, 1_000, 1_000];
  assert.equal(api.clock.waits.length, ceilings.length);
  for (const [i, w] of api.clock.waits.entries()) {
    const c = ceilings[i]!;
    assert.ok(w >= c / 2 && w <= c, `wait ${i + 1} is ${w} ms, want between ${c / 2} and ${c}`);
  }
});

// A 409 idempotency_key_in_use (an earlier attempt still being
// processed) is retried after its Retry-After, under the same key.
test("a key in use is retried under the same key", async () => {
  const api = await fakeAPI([
    { status: 409, body: `{"error":{"code":"idempotency_key_in_use","message":"In use."}}`, headers: { "Retry-After": "1" } },
    { status: 201, body: cartBody },
  ]);
  await api.client.createCart(cartParams);
  assert.equal(api.requests.length, 2);
  assert.ok(api.requests[0]!.idempotencyKey);
  assert.equal(api.requests[1]!.idempotencyKey, api.requests[0]!.idempotencyKey);
  assert.deepEqual(api.clock.waits, [1_000]);
});

// A 4xx other than 429 (and a key in use) is final, whatever it carries.
test("no retry on other 4xx", async (t) => {
  for (const status of [400, 401, 403, 404, 405, 409, 415, 422]) {
    await t.test(String(status), async () => {
      const api = await fakeAPI([
        { status, body: `{"error":{"code":"invalid_request","message":"No."}}`, headers: { "Retry-After": "1" } },
        { status: 201, body: cartBody },
      ]);
      await assert.rejects(api.client.createCart(cartParams), (err: unknown) => err instanceof MemocartError && err.status === status);
      assert.equal(api.requests.length, 1);
    });
  }
});

// An error answer is a MemocartError with the envelope's code, message
// and field, and the request id.
test("errors are typed", async (t) => {
  for (const tc of [
    {
      name: "with field",
      answer: {
        status: 422,
        body: `{"error":{"code":"invalid_address","message":"Bad ZIP.","field":"shipping_address.postal_code"}}\n`,
        headers: { "X-Request-Id": "req-1" },
      },
      want: { status: 422, code: "invalid_address", message: "Bad ZIP.", field: "shipping_address.postal_code", requestId: "req-1" },
      line: "memocart: 422 invalid_address: Bad ZIP. (field shipping_address.postal_code) [request req-1]",
    },
    {
      name: "without field",
      answer: { status: 404, body: `{"error":{"code":"order_not_found","message":"No such order."}}`, headers: { "X-Request-Id": "req-2" } },
      want: { status: 404, code: "order_not_found", message: "No such order.", field: null, requestId: "req-2" },
      line: "memocart: 404 order_not_found: No such order. [request req-2]",
    },
    {
      name: "outside the envelope",
      answer: { status: 431, body: "431 Request Header Fields Too Large" },
      want: { status: 431, code: null, message: "Request Header Fields Too Large", field: null, requestId: null },
      line: "memocart: 431: Request Header Fields Too Large",
    },
  ]) {
    await t.test(tc.name, async () => {
      const api = await fakeAPI([tc.answer]);
      const err = await api.client.getOrder("32205377465").then(
        () => assert.fail("no error"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof MemocartError, `${err}`);
      assert.ok(err instanceof Error);
      const { status, code, message, field, requestId } = err;
      assert.deepEqual({ status, code, message, field, requestId }, tc.want);
      assert.equal(String(err), tc.line);
      assert.equal(err.name, "MemocartError");
    });
  }
});

// An aborted signal ends a retry's wait at once, with its reason.
test("a signal cancels the retries", async () => {
  const api = await fakeAPI([unavailable("30")], { maxAttempts: 5, maxElapsedMs: 3_600_000, sleep: undefined, now: undefined });
  const start = Date.now();
  await assert.rejects(api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA", { signal: AbortSignal.timeout(50) }), { name: "TimeoutError" });
  assert.ok(Date.now() - start < 5_000, "returned at once, not after the Retry-After");
  assert.equal(api.requests.length, 1);
});

// An attempt that gets no answer within timeoutMs is abandoned and tried
// again under the same key, like a dropped connection.
test("an attempt that hangs is retried", async () => {
  const api = await fakeAPI([{ stall: true }, { status: 201, body: cartBody }], { timeoutMs: 100 });
  const cart = await api.client.createCart(cartParams);
  assert.equal(cart.id, "crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(api.requests.length, 2);
  assert.equal(api.requests[1]!.idempotencyKey, api.requests[0]!.idempotencyKey);

  const stalled = await fakeAPI([{ stall: true }], { timeoutMs: 50, maxAttempts: 2 });
  await assert.rejects(stalled.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA"), { name: "TimeoutError" });
  assert.equal(stalled.requests.length, 2);
});

// A 2xx that does not decode would come back the same.
test("a bad answer is not retried", async () => {
  const api = await fakeAPI([{ status: 200, body: `{"cart":` }]);
  await assert.rejects(api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA"), /memocart: decoding the answer/);
  assert.equal(api.requests.length, 1);
});

// Amounts the contract sends as JSON numbers come back as the strings of
// their digits, never floats; the same names inside strings, in metadata
// (string values) and amounts sent as strings are left as they are.
test("amounts stay strings", async () => {
  const api = await fakeAPI([{ status: 200, body: cartBody }]);
  const cart = await api.client.getCart("crt_AAAAAAAAAAAAAAAAAAAAAAAA");
  assert.deepEqual(
    [cart.subtotal, cart.shipping, cart.tax, cart.service_fee, cart.total, cart.items[0]!.unit_price, cart.items[0]!.line_total],
    ["10.00", "5.00", "0.80", "0.50", "16.30", "10.00", "10.00"],
  );
  assert.equal(cart.items[0]!.quantity, 1, "integers stay numbers");
  assert.equal(cart.items[0]!.title, 'A "total": 1.5 thing');
  assert.deepEqual(cart.metadata, { total: "9" });
});

// List filters are sent under the contract's names; unset ones not at all.
test("query parameters", async (t) => {
  for (const tc of [
    { params: undefined, want: "" },
    { params: {}, want: "" },
    { params: { status: "paid" as const, "created[gte]": "2026-11-21T22:27:27Z", limit: 5 }, want: "status=paid&created%5Bgte%5D=2026-11-21T22%3A27%3A27Z&limit=5" },
  ]) {
    await t.test(tc.want || "none", async () => {
      const api = await fakeAPI([{ status: 200, body: `{"data":[],"has_more":false}` }]);
      await api.client.listOrders(tc.params);
      assert.equal(api.requests[0]!.path, "/v1/orders");
      assert.equal(api.requests[0]!.query.toString(), tc.want);
    });
  }
  const api = await fakeAPI([{ status: 200, body: `{"data":[],"has_more":false}` }]);
  await api.client.listEvents({ type: "order.paid,refund.sent", order: "32205377465", ending_before: "evt_1" });
  assert.equal(api.requests[0]!.query.toString(), "type=order.paid%2Crefund.sent&order=32205377465&ending_before=evt_1");
});

// Path arguments are escaped: an id never reaches another route.
test("path arguments are escaped", async () => {
  const api = await fakeAPI([{ status: 404, body: `{"error":{"code":"order_not_found","message":"No."}}` }]);
  await assert.rejects(api.client.getOrder("../carts/x?y"), MemocartError);
  assert.equal(api.requests[0]!.path, "/v1/orders/..%2Fcarts%2Fx%3Fy");
});

// A DELETE answered 204 resolves with nothing.
test("delete answers no body", async () => {
  const api = await fakeAPI([{ status: 204 }]);
  assert.equal(await api.client.deleteWebhookEndpoint("we_1"), undefined);
  assert.equal(api.requests[0]!.method, "DELETE");
  assert.equal(api.requests[0]!.idempotencyKey, undefined);
});
