// A fake Memocart API on node:http for the unit tests, and a fake clock
// whose sleeps return at once, so that the retry and polling tests take
// milliseconds while their waits are still checked.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after } from "node:test";
import { Memocart, type MemocartOptions } from "../src/index.js";

/** One canned answer; hangUp drops the connection instead, stall never answers. */
export interface Answer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  hangUp?: boolean;
  stall?: boolean;
}

/** What one request carried. */
export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  idempotencyKey: string | undefined;
  auth: string | undefined;
  body: string;
}

/**
 * startServer serves handler on a free port of 127.0.0.1 until the test
 * file ends, and returns its base URL and the requests it got.
 */
export async function startServer(handler: (req: Recorded, res: ServerResponse) => void): Promise<{ url: string; requests: Recorded[] }> {
  const requests: Recorded[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const u = new URL(req.url ?? "/", "http://fake");
    const r: Recorded = {
      method: req.method ?? "",
      path: u.pathname,
      query: u.searchParams,
      idempotencyKey: header(req, "idempotency-key"),
      auth: header(req, "authorization"),
      body,
    };
    requests.push(r);
    handler(r, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A fake clock: sleep records the wait, moves the clock on, and returns at once (or rejects when aborted). */
export class FakeClock {
  ms = 1_795_000_000_000;
  waits: number[] = [];
  now = (): number => this.ms;
  sleep = async (ms: number, signal?: AbortSignal): Promise<void> => {
    if (signal?.aborted) throw signal.reason;
    this.waits.push(ms);
    this.ms += ms;
    await new Promise((resolve) => setImmediate(resolve));
    if (signal?.aborted) throw signal.reason;
  };
}

/**
 * fakeAPI starts a server answering answers in turn (the last one
 * repeated) and a client of it on a fake clock; options come after the
 * defaults.
 */
export async function fakeAPI(answers: Answer[], options: MemocartOptions = {}, apiKey = "mc_test_key") {
  const clock = new FakeClock();
  let next = 0;
  const api = {
    answers,
    /** setAnswers answers these from the next request on. */
    setAnswers(a: Answer[]) {
      api.answers = a;
      next = 0;
    },
    clock,
    requests: [] as Recorded[],
    client: undefined as unknown as Memocart,
  };
  const { url, requests } = await startServer((_req, res) => {
    const a = api.answers[Math.min(next++, api.answers.length - 1)]!;
    if (a.hangUp) {
      res.socket?.destroy();
      return;
    }
    if (a.stall) return;
    res.writeHead(a.status ?? 200, { "Content-Type": "application/json; charset=utf-8", ...a.headers });
    res.end(a.body ?? "");
  });
  api.requests = requests;
  api.client = new Memocart(apiKey, { baseURL: url, sleep: clock.sleep, now: clock.now, ...options });
  return api;
}
