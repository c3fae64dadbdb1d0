import assert from "node:assert/strict";
import { test } from "node:test";
import { MemocartError, type Memocart } from "../src/index.js";
import { FakeClock, startServer } from "./fake.js";
import { Memocart as Client } from "../src/index.js";

// fakeList serves one list as the API pages it: newest first, limit,
// starting_after (older) and ending_before (newer: the page just after
// the cursor). ids are oldest first; failAt answers 500s from the
// failAt-th request on (0: never).
async function fakeList(path: string, ids: string[], failAt = 0) {
  const { url, requests } = await startServer((req, res) => {
    res.setHeader("Content-Type", "application/json");
    if (req.path !== path) {
      res.writeHead(404).end(`{"error":{"code":"not_found","message":"No such route."}}`);
      return;
    }
    if (failAt > 0 && requests.length >= failAt) {
      res.writeHead(500).end(`{"error":{"code":"internal_error","message":"Oops."}}`);
      return;
    }
    const limit = Number(req.query.get("limit") ?? 10);
    const newest = [...ids].reverse();
    const after = req.query.get("starting_after");
    const before = req.query.get("ending_before");
    let page: string[];
    let more: boolean;
    if (before) {
      const newer = newest.slice(0, Math.max(newest.indexOf(before), 0));
      const from = Math.max(newer.length - limit, 0);
      [page, more] = [newer.slice(from), from > 0];
    } else {
      const from = after ? newest.indexOf(after) + 1 : 0;
      const to = Math.min(from + limit, newest.length);
      [page, more] = [newest.slice(from, to), to < newest.length];
    }
    res.end(JSON.stringify({ data: page.map((id) => ({ id })), has_more: more }));
  });
  const clock = new FakeClock();
  // One attempt: the failing page is answered at once.
  const client = new Client("mc_test_key", { baseURL: url, sleep: clock.sleep, now: clock.now, maxAttempts: 1 });
  return { client, requests };
}

const seven = ["x1", "x2", "x3", "x4", "x5", "x6", "x7"];

async function collect<T extends { id: string }>(it: AsyncIterable<T>, stopAfter = 0): Promise<string[]> {
  const got: string[] = [];
  for await (const item of it) {
    got.push(item.id);
    if (stopAfter > 0 && got.length === stopAfter) break;
  }
  return got;
}

const listers: { path: string; list: (c: Memocart, limit: number, after?: string) => AsyncIterable<{ id: string }>; filter: [string, string] }[] = [
  { path: "/v1/orders", list: (c, limit, after) => c.orders({ limit, status: "paid", starting_after: after }), filter: ["status", "paid"] },
  { path: "/v1/refunds", list: (c, limit, after) => c.refunds({ limit, status: "sent", starting_after: after }), filter: ["status", "sent"] },
  {
    path: "/v1/events",
    list: (c, limit, after) => c.events({ limit, type: "order.paid", starting_after: after, ending_before: "ignored" }),
    filter: ["type", "order.paid"],
  },
];

// Each list's iterator yields every item newest first across pages,
// asking each page after the last id of the one before with the caller's
// filters, and stops asking when the loop breaks; an error ends it.
for (const l of listers) {
  test(`the iterator of ${l.path} pages`, async () => {
    let f = await fakeList(l.path, seven);
    assert.deepEqual(await collect(l.list(f.client, 3)), ["x7", "x6", "x5", "x4", "x3", "x2", "x1"]);
    assert.deepEqual(
      f.requests.map((r) => r.query.get("starting_after")),
      [null, "x5", "x2"],
    );
    for (const r of f.requests) {
      assert.equal(r.query.get("limit"), "3");
      assert.equal(r.query.get(l.filter[0]), l.filter[1]);
      assert.equal(r.query.get("ending_before"), null);
    }

    f = await fakeList(l.path, seven);
    assert.deepEqual(await collect(l.list(f.client, 2, "x6"), 3), ["x5", "x4", "x3"]);
    assert.equal(f.requests.length, 2, "no page asked for after the loop broke");

    f = await fakeList(l.path, seven, 2);
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const item of l.list(f.client, 3)) got.push(item.id);
      })(),
      (err: unknown) => err instanceof MemocartError && err.status === 500,
    );
    assert.deepEqual(got, ["x7", "x6", "x5"], "the first page, then the 500");
  });
}

// From the last event processed, eventsAfter yields every newer event
// oldest first, paging with ending_before set to the newest id of the
// page before, until has_more is false.
test("eventsAfter catches up", async () => {
  let f = await fakeList("/v1/events", seven);
  const got = await collect(f.client.eventsAfter("x2", { limit: 2, order: "32205377465", starting_after: "ignored" }));
  assert.deepEqual(got, ["x3", "x4", "x5", "x6", "x7"]);
  assert.deepEqual(
    f.requests.map((r) => r.query.get("ending_before")),
    ["x2", "x4", "x6"],
  );
  for (const r of f.requests) {
    assert.equal(r.query.get("starting_after"), null);
    assert.equal(r.query.get("order"), "32205377465");
    assert.equal(r.query.get("limit"), "2");
  }

  f = await fakeList("/v1/events", seven);
  assert.deepEqual(await collect(f.client.eventsAfter("x7")), [], "caught up already");
  assert.equal(f.requests.length, 1);

  await assert.rejects(collect(f.client.eventsAfter("")), /needs the id of the last event processed/);
});

// An iterator's generator is used once; calling the method again pages
// from its start again.
test("each call pages from the start", async () => {
  const f = await fakeList("/v1/orders", seven);
  const first = await collect(f.client.orders({ limit: 3, starting_after: "x7" }));
  const again = await collect(f.client.orders({ limit: 3, starting_after: "x7" }));
  assert.deepEqual(first, ["x6", "x5", "x4", "x3", "x2", "x1"]);
  assert.deepEqual(again, first);
});
