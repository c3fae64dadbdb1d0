// Integration tests against a running Memocart (cmd/devstack's
// TestClientsTypeScriptIntegration starts the dev stack and runs them with
// npm run test:integration). They need MEMOCART_API and MEMOCART_KEY (a
// test key) and fail without them: a run that cannot reach the service
// has tested nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { FinalStatusError, Memocart, MemocartError, type Event } from "../../src/index.js";

function client(): Memocart {
  const baseURL = process.env["MEMOCART_API"];
  const key = process.env["MEMOCART_KEY"];
  assert.ok(baseURL && key, "MEMOCART_API and MEMOCART_KEY must be set (a running Memocart and a test key)");
  assert.ok(key.startsWith("mc_test_"), "MEMOCART_KEY is a test key: these tests pay with the sandbox");
  return new Memocart(key, { baseURL });
}

const product = "https://www.amazon.com/dp/B08N5WRWNW";
const address = { name: "Ada Lovelace", line1: "1 Main St", city: "Springfield", region: "IL", postal_code: "62701", country: "US" };
const amount = /^\d+\.\d{2}$/;

// preview → cart → order → test payment → delivered, then the order's
// events listed and caught up on, and the errors of the contract.
test("an order from preview to delivered, and its events", async (t) => {
  const c = client();
  const signal = AbortSignal.timeout(180_000);

  const preview = await c.previewProduct({ url: product }, { signal });
  assert.equal(preview.currency, "USD");
  assert.match(preview.price, amount, "the price as the string of its digits");

  const cart = await c.createCart({ items: [{ product_url: product, quantity: 2 }], ship_to_country: "US", metadata: { ref: "ts-client" } }, { signal });
  assert.match(cart.id, /^crt_/);
  for (const a of [cart.subtotal, cart.shipping, cart.tax, cart.service_fee, cart.total, cart.items[0]!.unit_price, cart.items[0]!.line_total]) {
    assert.match(a, amount);
  }
  // Exact decimal arithmetic on the strings: the total is the sum of its parts.
  const cents = (s: string) => BigInt(s.replace(".", ""));
  assert.equal(cents(cart.total), cents(cart.subtotal) + cents(cart.shipping) + cents(cart.tax) + cents(cart.service_fee));
  assert.equal(cents(cart.items[0]!.line_total), 2n * cents(cart.items[0]!.unit_price));
  assert.deepEqual(await c.getCart(cart.id, { signal }), cart);

  const order = await c.createOrder({ cart_id: cart.id, customer_email: "ada@example.com", payment_asset: "USDC", shipping_address: address }, { signal });
  assert.match(order.number, /^\d{11}$/);
  assert.equal(order.status, "created");
  assert.equal(order.total, cart.total);
  assert.match(order.payment_amount, /^\d+(\.\d+)?$/);
  assert.deepEqual(order.metadata, { ref: "ts-client" });

  const payment = await c.createTestPayment(order.id, {}, { signal });
  assert.equal(payment.order_id, order.id);
  assert.equal(payment.amount, order.payment_amount);

  const done = await c.waitForOrderStatus(order.id, "delivered", { signal });
  assert.equal(done.status, "delivered");
  assert.equal(done.number, order.number);
  assert.equal((await c.getOrder(order.number, { signal })).id, order.id, "by number too");

  await t.test("the orders iterator finds it", async () => {
    let found = false;
    for await (const o of c.orders({ status: "delivered", limit: 1 }, { signal })) {
      if (o.id === order.id) {
        found = true;
        break;
      }
    }
    assert.ok(found);
  });

  await t.test("events, and catching up from the first", async () => {
    // The order's events newest first, one per page; the API lists an event
    // once every write before it has ended, so order.delivered may come a
    // moment after the status.
    let events: Event[] = [];
    for (let i = 0; i < 50; i++) {
      events = [];
      for await (const e of c.events({ order: order.id, limit: 1 }, { signal })) events.push(e);
      if (events.some((e) => e.type === "order.delivered")) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const types = events.map((e) => e.type);
    for (const want of ["order.created", "payment.received", "order.paid", "order.delivered"] as const) {
      assert.ok(types.includes(want), `${want} among ${types.join(", ")}`);
    }
    assert.equal(types.at(-1), "order.created", "the oldest is order.created");
    for (const e of events) {
      assert.equal(e.data.order.id, order.id);
      assert.equal(e.data.order.total, order.total, "amounts in events as strings too");
    }

    const first = events.at(-1)!;
    const caughtUp: string[] = [];
    for await (const e of c.eventsAfter(first.id, { order: order.id, limit: 2 }, { signal })) caughtUp.push(e.id);
    assert.deepEqual(caughtUp, events.slice(0, -1).reverse().map((e) => e.id), "every later event, oldest first");
    assert.deepEqual(await c.getEvent(first.id, { signal }), first);
  });

  await t.test("errors carry the contract's code", async () => {
    await assert.rejects(
      c.createOrder({ cart_id: cart.id, customer_email: "not an e-mail", payment_asset: "USDC", shipping_address: address }, { signal }),
      (err: unknown) => {
        assert.ok(err instanceof MemocartError, `${err}`);
        assert.equal(err.status, 422);
        assert.equal(err.code, "invalid_email");
        assert.equal(err.field, "customer_email");
        assert.ok(err.requestId, "the answer's X-Request-Id");
        return true;
      },
    );
    await assert.rejects(c.getOrder("ord_AAAAAAAAAAAAAAAAAAAAAAAA", { signal }), (err: unknown) => {
      assert.ok(err instanceof MemocartError, `${err}`);
      assert.equal(err.status, 404);
      assert.equal(err.code, "order_not_found");
      return true;
    });
    // A delivered order no longer awaits payment.
    await assert.rejects(c.expireTestOrder(order.id, { signal }), (err: unknown) => err instanceof MemocartError && err.code === "invalid_order_state");
  });
});

// An order left unpaid and expired by the test helper ends cancelled:
// waiting for delivered stops there, with the order.
test("a wait ends at another final status", async () => {
  const c = client();
  const signal = AbortSignal.timeout(60_000);
  const cart = await c.createCart({ items: [{ product_url: product, quantity: 1 }], ship_to_country: "US" }, { signal });
  const order = await c.createOrder({ cart_id: cart.id, customer_email: "ada@example.com", payment_asset: "USDC", shipping_address: address }, { signal });
  const expired = await c.expireTestOrder(order.id, { signal });
  assert.equal(expired.status, "cancelled");
  await assert.rejects(c.waitForOrderStatus(order.id, "delivered", { signal }), (err: unknown) => {
    assert.ok(err instanceof FinalStatusError, `${err}`);
    assert.equal(err.order.status, "cancelled");
    return true;
  });
});
