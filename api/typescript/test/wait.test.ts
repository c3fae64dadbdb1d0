import assert from "node:assert/strict";
import { test } from "node:test";
import { FinalStatusError, MemocartError, type OrderStatus } from "../src/index.js";
import { fakeAPI, type Answer } from "./fake.js";

function orderAnswer(status: OrderStatus): Answer {
  return {
    status: 200,
    body: `{"order":{"id":"ord_AAAAAAAAAAAAAAAAAAAAAAAA","number":"32205377465","status":"${status}","total":16.30,"currency":"USD"}}`,
  };
}

// waitForOrderStatus polls through sequences of statuses.
test("waitForOrderStatus", async (t) => {
  for (const tc of [
    { name: "reaches it", statuses: ["created", "created", "paid"], wait: ["paid"], want: "paid", reads: 3, final: false },
    { name: "one of several", statuses: ["created", "cancelled"], wait: ["paid", "cancelled"], want: "cancelled", reads: 2, final: false },
    { name: "passed it between polls", statuses: ["created", "shipped"], wait: "paid", want: "shipped", reads: 2, final: false },
    { name: "already there", statuses: ["delivered"], wait: "delivered", want: "delivered", reads: 1, final: false },
    { name: "any final status", statuses: ["created", "paid", "failed"], wait: undefined, want: "failed", reads: 3, final: false },
    { name: "ended elsewhere", statuses: ["created", "cancelled"], wait: ["paid"], want: "cancelled", reads: 2, final: true },
    { name: "failed is not past shipped", statuses: ["paid", "failed"], wait: "shipped", want: "failed", reads: 2, final: true },
  ] as { name: string; statuses: OrderStatus[]; wait: OrderStatus | OrderStatus[] | undefined; want: OrderStatus; reads: number; final: boolean }[]) {
    await t.test(tc.name, async () => {
      const api = await fakeAPI(tc.statuses.map(orderAnswer));
      let order;
      try {
        order = await api.client.waitForOrderStatus("32205377465", tc.wait);
        assert.ok(!tc.final, "no FinalStatusError");
      } catch (err) {
        assert.ok(tc.final && err instanceof FinalStatusError, `${err}`);
        order = err.order;
      }
      assert.equal(order.status, tc.want);
      assert.equal(order.total, "16.30");
      assert.equal(api.requests.length, tc.reads);
      assert.equal(api.requests[0]!.path, "/v1/orders/32205377465");
      assert.equal(api.requests[0]!.method, "GET");
      assert.equal(api.clock.waits.length, tc.reads - 1, "one wait between reads");
    });
  }
});

// An aborted signal ends the wait between polls at once; an API error
// ends it too.
test("waitForOrderStatus stops", async () => {
  let api = await fakeAPI([orderAnswer("created")], { pollMinMs: 3_600_000, sleep: undefined, now: undefined });
  const start = Date.now();
  await assert.rejects(api.client.waitForOrderStatus("32205377465", "paid", { signal: AbortSignal.timeout(50) }), { name: "TimeoutError" });
  assert.ok(Date.now() - start < 5_000, "stopped at once, not after the hour");

  const controller = new AbortController();
  const reason = new Error("enough");
  // A sleep during which the caller gives up.
  const sleep = async (_ms: number, signal?: AbortSignal) => {
    controller.abort(reason);
    throw signal?.reason;
  };
  api = await fakeAPI([orderAnswer("created")], { sleep });
  await assert.rejects(api.client.waitForOrderStatus("32205377465", "paid", { signal: controller.signal }), (err) => err === reason);

  api = await fakeAPI([{ status: 404, body: `{"error":{"code":"order_not_found","message":"No such order."}}` }]);
  await assert.rejects(api.client.waitForOrderStatus("32205377465", "paid"), (err) => err instanceof MemocartError && err.code === "order_not_found");
  assert.equal(api.requests.length, 1);
});

// About 2 s for a test key, 30 to 60 s for a live one, jittered within
// the bounds; pollMinMs/pollMaxMs override.
test("poll interval defaults", async (t) => {
  for (const tc of [
    { key: "mc_test_abc", opts: {}, min: 1_500, max: 2_500 },
    { key: "mc_live_abc", opts: {}, min: 30_000, max: 60_000 },
    { key: "mc_live_abc", opts: { pollMinMs: 5_000, pollMaxMs: 5_000 }, min: 5_000, max: 5_000 },
  ]) {
    await t.test(`${tc.key} ${JSON.stringify(tc.opts)}`, async () => {
      const api = await fakeAPI([...Array(30).fill(orderAnswer("created")), orderAnswer("delivered")], tc.opts, tc.key);
      await api.client.waitForOrderStatus("32205377465", "delivered");
      assert.equal(api.clock.waits.length, 30);
      for (const w of api.clock.waits) assert.ok(w >= tc.min && w <= tc.max, `interval ${w} outside [${tc.min}, ${tc.max}]`);
      if (tc.min !== tc.max) assert.ok(new Set(api.clock.waits).size > 1, "jittered");
    });
  }
});
