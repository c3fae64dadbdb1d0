// The client: one typed method per operation under /v1 of api/openapi.json
// (test/contract.test.ts holds the list to the document), retries that are
// safe, iterators over the paginated lists and a wait for an order's
// status. The rules are the Go client's (api/client): the same defaults,
// the same names where TypeScript allows. It needs fetch, AbortSignal and
// crypto.randomUUID from the platform and imports nothing else, so it runs
// in Node 20 and in browsers alike.
import { FinalStatusError, MemocartError } from "./errors.js";
import { decodeJSON } from "./json.js";
import type {
  CancelOrderParams,
  Cart,
  CreateCartParams,
  CreatedOrder,
  CreateOrderParams,
  CreateTestPaymentParams,
  CreateWebhookEndpointParams,
  ErrorCode,
  Event,
  EventList,
  FailTestOrderParams,
  FailTestRefundParams,
  ListEventsParams,
  ListOrdersParams,
  ListRefundsParams,
  ListWebhookDeliveriesParams,
  Order,
  OrderList,
  OrderStatus,
  PreviewProductParams,
  ProductPreview,
  Refund,
  RefundDestinationParams,
  RefundList,
  Resend,
  SuccessBody,
  TestPayment,
  WebhookDelivery,
  WebhookEndpoint,
} from "./types.js";

/** The address `make run` serves the API on. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

/** The start of every test-mode API key (the sandbox); live keys start with "mc_live_". */
export const TEST_KEY_PREFIX = "mc_test_";

/**
 * The default retry budget: a request is sent at most DEFAULT_MAX_ATTEMPTS
 * times, and no retry starts, nor ends its wait, more than
 * DEFAULT_MAX_ELAPSED_MS after the first attempt. Between attempts the
 * client waits the answer's Retry-After, or else a backoff from 500 ms
 * doubling to 8 s, jittered.
 */
export const DEFAULT_MAX_ATTEMPTS = 4;
export const DEFAULT_MAX_ELAPSED_MS = 30_000;
const DEFAULT_BACKOFF_FIRST_MS = 500;
const DEFAULT_BACKOFF_MAX_MS = 8_000;

/**
 * DEFAULT_TIMEOUT_MS bounds each attempt, so a connection that hangs is
 * retried rather than waited on for good. The service answers within its
 * own request deadline (10 s by default).
 */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The default polling interval of waitForOrderStatus: in live mode a
 * random wait between 30 and 60 s (orders move in minutes to days, and
 * many waiting clients should not poll in step); in test mode about 2 s,
 * as the sandbox moves an order along in seconds.
 */
export const DEFAULT_LIVE_POLL_MS = { min: 30_000, max: 60_000 } as const;
export const DEFAULT_TEST_POLL_MS = { min: 1_500, max: 2_500 } as const;

/** The options of a Memocart client; every one has a default. */
export interface MemocartOptions {
  /** The API's address, e.g. "https://api.example.com" (DEFAULT_BASE_URL otherwise). */
  baseURL?: string;
  /** The fetch requests go through (the platform's otherwise). */
  fetch?: typeof fetch;
  /** At most this many sends of one request (1: never retry). */
  maxAttempts?: number;
  /** No retry whose wait would end later than this after the first attempt. */
  maxElapsedMs?: number;
  /** The wait before the first retry without a Retry-After, doubling up to backoffMaxMs. */
  backoffFirstMs?: number;
  backoffMaxMs?: number;
  /** The bound of each attempt (DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
  /** waitForOrderStatus waits a random time between these between reads (by the key's mode otherwise). */
  pollMinMs?: number;
  pollMaxMs?: number;
  /** The wait between attempts and polls; tests give a fake one. It must reject when signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock of the retry budget, in milliseconds (Date.now otherwise); tests give a fake one. */
  now?: () => number;
}

/** Per-call options: a signal that cancels the call, its retries and its waits. */
export interface RequestOptions {
  signal?: AbortSignal;
}

type Method = "GET" | "POST" | "DELETE";

/** How a 2xx answer's body is read: per the contract, as it is, or not at all. */
type Decode = "contract" | "plain" | "none";

/**
 * Memocart calls the Memocart API with one API key. Every method throws a
 * MemocartError for an answer outside 2xx (after the retries the rules
 * allow), the network's error when the last attempt got no answer, and
 * the signal's reason when the call is cancelled.
 */
export class Memocart {
  readonly #apiKey: string;
  readonly #baseURL: string;
  readonly #fetch: typeof fetch;
  readonly #maxAttempts: number;
  readonly #maxElapsedMs: number;
  readonly #backoffFirstMs: number;
  readonly #backoffMaxMs: number;
  readonly #timeoutMs: number;
  readonly #pollMinMs: number;
  readonly #pollMaxMs: number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #now: () => number;

  /** The polling default depends on the key's mode: see DEFAULT_TEST_POLL_MS. */
  constructor(apiKey: string, options: MemocartOptions = {}) {
    const poll = apiKey.startsWith(TEST_KEY_PREFIX) ? DEFAULT_TEST_POLL_MS : DEFAULT_LIVE_POLL_MS;
    this.#apiKey = apiKey;
    this.#baseURL = (options.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS));
    this.#maxElapsedMs = options.maxElapsedMs ?? DEFAULT_MAX_ELAPSED_MS;
    this.#backoffFirstMs = options.backoffFirstMs ?? DEFAULT_BACKOFF_FIRST_MS;
    this.#backoffMaxMs = Math.max(this.#backoffFirstMs, options.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#pollMinMs = options.pollMinMs ?? poll.min;
    this.#pollMaxMs = Math.max(this.#pollMinMs, options.pollMaxMs ?? (options.pollMinMs ?? poll.max));
    this.#sleep = options.sleep ?? sleep;
    this.#now = options.now ?? Date.now;
  }

  // The operations, named after their operationId. Path arguments are
  // escaped; an id of a shape the API has no ids of is its 404, not a
  // client-side error.

  /** Reads a product from its marketplace link (previewProduct). */
  async previewProduct(params: PreviewProductParams, opts?: RequestOptions): Promise<ProductPreview> {
    return (await this.#json<SuccessBody<"previewProduct">>("POST", "/v1/products/preview", params, opts)).product;
  }

  /** Prices a cart (createCart). */
  async createCart(params: CreateCartParams, opts?: RequestOptions): Promise<Cart> {
    return (await this.#json<SuccessBody<"createCart">>("POST", "/v1/carts", params, opts)).cart;
  }

  /** Reads a cart by its id (getCart). */
  async getCart(id: string, opts?: RequestOptions): Promise<Cart> {
    return (await this.#json<SuccessBody<"getCart">>("GET", `/v1/carts/${esc(id)}`, undefined, opts)).cart;
  }

  /** Orders a cart (createOrder). One cart makes one order: the same request again returns the same order. */
  async createOrder(params: CreateOrderParams, opts?: RequestOptions): Promise<CreatedOrder> {
    return (await this.#json<SuccessBody<"createOrder">>("POST", "/v1/orders", params, opts)).order;
  }

  /** Reads an order by its id or number (getOrder). */
  async getOrder(ref: string, opts?: RequestOptions): Promise<Order> {
    return (await this.#json<SuccessBody<"getOrder">>("GET", `/v1/orders/${esc(ref)}`, undefined, opts)).order;
  }

  /** Reads one page of the account's orders, newest first (listOrders); orders() iterates over every page. */
  async listOrders(params?: ListOrdersParams, opts?: RequestOptions): Promise<OrderList> {
    return this.#json<OrderList>("GET", `/v1/orders${query(params)}`, undefined, opts);
  }

  /** Cancels an order still waiting for payment (cancelOrder). Cancelling a cancelled order returns it as it is. */
  async cancelOrder(ref: string, params: CancelOrderParams = {}, opts?: RequestOptions): Promise<Order> {
    return (await this.#json<SuccessBody<"cancelOrder">>("POST", `/v1/orders/${esc(ref)}/cancel`, params, opts)).order;
  }

  /** Says where the money an order owes back goes (setOrderRefundDestination). */
  async setOrderRefundDestination(ref: string, params: RefundDestinationParams, opts?: RequestOptions): Promise<Order> {
    const path = `/v1/orders/${esc(ref)}/refund_destination`;
    return (await this.#json<SuccessBody<"setOrderRefundDestination">>("POST", path, params, opts)).order;
  }

  /** Reads one page of the account's refunds, newest first (listRefunds); refunds() iterates over every page. */
  async listRefunds(params?: ListRefundsParams, opts?: RequestOptions): Promise<RefundList> {
    return this.#json<RefundList>("GET", `/v1/refunds${query(params)}`, undefined, opts);
  }

  /** Reads a refund by its id (getRefund). */
  async getRefund(id: string, opts?: RequestOptions): Promise<Refund> {
    return (await this.#json<SuccessBody<"getRefund">>("GET", `/v1/refunds/${esc(id)}`, undefined, opts)).refund;
  }

  /**
   * Pays a test-mode order in the sandbox (createTestPayment); without
   * params, the full amount. Its retries reuse one Idempotency-Key, so
   * they are the same payment, never a second one.
   */
  async createTestPayment(ref: string, params: CreateTestPaymentParams = {}, opts?: RequestOptions): Promise<TestPayment> {
    const path = `/v1/test_helpers/orders/${esc(ref)}/payments`;
    return (await this.#json<SuccessBody<"createTestPayment">>("POST", path, params, opts)).payment;
  }

  /**
   * Makes a test-mode order's payment deadline pass now (expireTestOrder):
   * the order comes back cancelled as its deadline would cancel it; one no
   * longer awaiting payment is a MemocartError of code invalid_order_state.
   */
  async expireTestOrder(ref: string, opts?: RequestOptions): Promise<Order> {
    const path = `/v1/test_helpers/orders/${esc(ref)}/expire`;
    return (await this.#json<SuccessBody<"expireTestOrder">>("POST", path, undefined, opts)).order;
  }

  /**
   * Makes the sandbox provider's next fulfilment step of a test-mode order
   * happen now (advanceTestOrder): paid becomes ordered, ordered shipped,
   * shipped delivered. An order with no next step (awaiting payment, or
   * ended) is a MemocartError of code invalid_order_state.
   */
  async advanceTestOrder(ref: string, opts?: RequestOptions): Promise<Order> {
    const path = `/v1/test_helpers/orders/${esc(ref)}/advance`;
    return (await this.#json<SuccessBody<"advanceTestOrder">>("POST", path, undefined, opts)).order;
  }

  /**
   * Makes a test-mode order's sourcing fail now (failTestOrder), for the
   * params' reason (the service's default without one): the order comes
   * back failed, its payment due back. An order not paid, or shipped or
   * ended, is a MemocartError of code invalid_order_state.
   */
  async failTestOrder(ref: string, params: FailTestOrderParams = {}, opts?: RequestOptions): Promise<Order> {
    const path = `/v1/test_helpers/orders/${esc(ref)}/fail`;
    return (await this.#json<SuccessBody<"failTestOrder">>("POST", path, params, opts)).order;
  }

  /**
   * Has a test refund's next payout refused as the network would refuse it
   * (failTestRefund), for the params' reason: the refund comes back as it
   * stands, and fails when that payout is made. A refund sending, sent or
   * cancelled is a MemocartError of code invalid_refund_state.
   */
  async failTestRefund(id: string, params: FailTestRefundParams = {}, opts?: RequestOptions): Promise<Refund> {
    const path = `/v1/test_helpers/refunds/${esc(id)}/fail`;
    return (await this.#json<SuccessBody<"failTestRefund">>("POST", path, params, opts)).refund;
  }

  /** Reads one page of the account's events, newest first (listEvents); events() and eventsAfter() iterate. */
  async listEvents(params?: ListEventsParams, opts?: RequestOptions): Promise<EventList> {
    return this.#json<EventList>("GET", `/v1/events${query(params)}`, undefined, opts);
  }

  /** Reads an event by its id (getEvent): the body its webhook delivery sends. */
  async getEvent(id: string, opts?: RequestOptions): Promise<Event> {
    return this.#json<Event>("GET", `/v1/events/${esc(id)}`, undefined, opts);
  }

  /** Reads the account's webhook endpoints in the key's mode, without their secrets (listWebhookEndpoints). */
  async listWebhookEndpoints(opts?: RequestOptions): Promise<WebhookEndpoint[]> {
    return (await this.#json<SuccessBody<"listWebhookEndpoints">>("GET", "/v1/webhook_endpoints", undefined, opts)).webhook_endpoints;
  }

  /** Registers a webhook endpoint (createWebhookEndpoint). The answer's secret is shown this once. */
  async createWebhookEndpoint(params: CreateWebhookEndpointParams, opts?: RequestOptions): Promise<WebhookEndpoint> {
    return (await this.#json<SuccessBody<"createWebhookEndpoint">>("POST", "/v1/webhook_endpoints", params, opts)).webhook_endpoint;
  }

  /** Reads a webhook endpoint (getWebhookEndpoint). */
  async getWebhookEndpoint(id: string, opts?: RequestOptions): Promise<WebhookEndpoint> {
    const path = `/v1/webhook_endpoints/${esc(id)}`;
    return (await this.#json<SuccessBody<"getWebhookEndpoint">>("GET", path, undefined, opts)).webhook_endpoint;
  }

  /**
   * Deletes a webhook endpoint (deleteWebhookEndpoint). It is retried like
   * every call, so when a first attempt deleted the endpoint but its answer
   * was lost, the answer is the retry's 404 webhook_endpoint_not_found.
   */
  async deleteWebhookEndpoint(id: string, opts?: RequestOptions): Promise<void> {
    await this.#request("DELETE", `/v1/webhook_endpoints/${esc(id)}`, undefined, "none", opts);
  }

  /** Reads an endpoint's delivery attempts, newest first (listWebhookDeliveries). */
  async listWebhookDeliveries(endpointId: string, params?: ListWebhookDeliveriesParams, opts?: RequestOptions): Promise<WebhookDelivery[]> {
    const path = `/v1/webhook_endpoints/${esc(endpointId)}/deliveries${query(params)}`;
    return (await this.#json<SuccessBody<"listWebhookDeliveries">>("GET", path, undefined, opts)).deliveries;
  }

  /** Delivers an event to an endpoint again, as a new delivery (resendWebhookEvent). */
  async resendWebhookEvent(endpointId: string, eventId: string, opts?: RequestOptions): Promise<Resend> {
    const path = `/v1/webhook_endpoints/${esc(endpointId)}/deliveries/${esc(eventId)}/resend`;
    return (await this.#json<SuccessBody<"resendWebhookEvent">>("POST", path, undefined, opts)).delivery;
  }

  /**
   * Reads the OpenAPI document the service serves (getOpenAPIDocument), as
   * it is: plain JSON, its example amounts not read as the contract's.
   */
  async getOpenAPIDocument(opts?: RequestOptions): Promise<Record<string, unknown>> {
    return (await this.#request("GET", "/v1/openapi.json", undefined, "plain", opts)) as Record<string, unknown>;
  }

  // The iterators page through a list as the API pages it: each page asks
  // for the one after the last id of the previous (starting_after) while
  // has_more says another follows. An error ends the iteration, thrown
  // from the loop; breaking out of the loop stops the paging. Each
  // iteration starts again from the first page.

  /** Yields every order that params select, newest first, from params.starting_after on. */
  orders(params: ListOrdersParams = {}, opts?: RequestOptions): AsyncGenerator<Order, void, undefined> {
    return paginate(params.starting_after, (after) => this.listOrders({ ...params, starting_after: after }, opts));
  }

  /** Yields every refund that params select, newest first, from params.starting_after on. */
  refunds(params: ListRefundsParams = {}, opts?: RequestOptions): AsyncGenerator<Refund, void, undefined> {
    return paginate(params.starting_after, (after) => this.listRefunds({ ...params, starting_after: after }, opts));
  }

  /** Yields every event that params select, newest first, from params.starting_after on (ending_before is ignored: see eventsAfter). */
  events(params: ListEventsParams = {}, opts?: RequestOptions): AsyncGenerator<Event, void, undefined> {
    const { ending_before: _ignored, ...rest } = params;
    return paginate(rest.starting_after, (after) => this.listEvents({ ...rest, starting_after: after }, opts));
  }

  /**
   * eventsAfter catches up: it yields every event recorded after the event
   * lastSeenId (the newest one the caller processed), oldest first, as far
   * as the newest, with the filters of params (its cursors are ignored).
   * It pages with ending_before, each page the events just after the
   * newest one of the page before, until has_more is false. The API lists
   * an event only once every write before it has ended, so catching up
   * never skips one; keep the id of the last event yielded to catch up
   * from it next time.
   */
  async *eventsAfter(lastSeenId: string, params: ListEventsParams = {}, opts?: RequestOptions): AsyncGenerator<Event, void, undefined> {
    if (!lastSeenId) throw new Error("memocart: eventsAfter needs the id of the last event processed");
    const { starting_after: _a, ending_before: _b, ...filters } = params;
    let before = lastSeenId;
    for (;;) {
      const page = await this.listEvents({ ...filters, ending_before: before }, opts);
      // A page is newest first; its oldest event is the one just after the cursor.
      for (let i = page.data.length - 1; i >= 0; i--) yield page.data[i]!;
      if (!page.has_more || page.data.length === 0) return;
      before = page.data[0]!.id;
    }
  }

  /**
   * waitForOrderStatus reads the order ref (an id or number) until its
   * status is one of status, or has passed it on the path created → paid →
   * ordered → shipped → delivered (a poll may miss a step the sandbox takes
   * in seconds), and returns the order. Without status it waits for a final
   * status (delivered, cancelled, failed). An order that ends in a final
   * status not waited for is thrown as a FinalStatusError carrying it.
   *
   * It polls every 30–60 s (jittered) with a live key and about every 2 s
   * with a test key (pollMinMs/pollMaxMs change it), and stops when
   * opts.signal aborts, with its reason. A read that fails after the
   * client's retries ends the wait with that error.
   */
  async waitForOrderStatus(ref: string, status?: OrderStatus | readonly OrderStatus[], opts: RequestOptions = {}): Promise<Order> {
    const want: readonly OrderStatus[] = status === undefined ? [] : typeof status === "string" ? [status] : status;
    for (;;) {
      const order = await this.getOrder(ref, opts);
      if (reached(order.status, want)) return order;
      if (isFinal(order.status)) throw new FinalStatusError(order, want);
      await this.#sleep(this.#pollInterval(), opts.signal);
    }
  }

  #pollInterval(): number {
    return this.#pollMinMs + Math.random() * (this.#pollMaxMs - this.#pollMinMs);
  }

  async #json<T>(method: Method, path: string, body: unknown, opts: RequestOptions | undefined): Promise<T> {
    return (await this.#request(method, path, body, "contract", opts)) as T;
  }

  /**
   * #request sends a request and reads a 2xx answer's body as decode says.
   * A POST gets one Idempotency-Key, sent again with each of its retries,
   * so the service runs it at most once. A network error, a 5xx, a 429 and
   * a 409 idempotency_key_in_use are tried again within the budget, after
   * the answer's Retry-After or else the backoff; any other answer is
   * final. A 2xx whose body is not JSON is not retried: the same answer
   * would come back.
   */
  async #request(method: Method, path: string, body: unknown, decode: Decode, opts: RequestOptions = {}): Promise<unknown> {
    const { signal } = opts;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const idempotencyKey = method === "POST" ? crypto.randomUUID() : undefined;
    const start = this.#now();
    for (let attempt = 1; ; attempt++) {
      let failure: unknown;
      let retryAfterMs = 0;
      let answer: { res: Response; text: string } | undefined;
      try {
        answer = await this.#send(method, path, payload, idempotencyKey, signal);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        failure = err;
      }
      if (answer !== undefined) {
        const { res, text } = answer;
        if (res.status >= 200 && res.status < 300) return read(text, res.status, decode);
        const apiErr = errorOf(res, text);
        if (!apiErr.retryable) throw apiErr;
        failure = apiErr;
        retryAfterMs = retryAfter(res.headers.get("Retry-After"));
      }
      const wait = retryAfterMs || this.#backoff(attempt);
      if (attempt >= this.#maxAttempts || this.#now() - start + wait > this.#maxElapsedMs) throw failure;
      await this.#sleep(wait, signal);
    }
  }

  /** #send makes one attempt and reads its whole answer, bounded by timeoutMs. */
  async #send(method: Method, path: string, payload: string | undefined, idempotencyKey: string | undefined, signal: AbortSignal | undefined) {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#apiKey}`,
      Accept: "application/json",
    };
    if (payload !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const res = await this.#fetch(this.#baseURL + path, {
      method,
      headers,
      body: payload,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    return { res, text: await res.text() };
  }

  /**
   * #backoff is the wait before retry n (1-based) without a Retry-After:
   * backoffFirstMs doubling per retry up to backoffMaxMs, of which a random
   * half is dropped so that clients failed by one outage do not retry in
   * step.
   */
  #backoff(n: number): number {
    const d = Math.min(this.#backoffFirstMs * 2 ** (n - 1), this.#backoffMaxMs);
    return d / 2 + Math.random() * (d / 2);
  }
}

/** The statuses an order goes through when all goes well; one further along has passed the earlier ones. */
const happyPath: readonly OrderStatus[] = ["created", "paid", "ordered", "shipped", "delivered"];

/** isFinal says whether no other status can follow s. */
export function isFinal(s: OrderStatus): boolean {
  return s === "delivered" || s === "cancelled" || s === "failed";
}

/** reached says whether an order in status s is in, or past, one of want; with want empty, whether s is final. */
function reached(s: OrderStatus, want: readonly OrderStatus[]): boolean {
  if (want.length === 0) return isFinal(s);
  const at = happyPath.indexOf(s);
  return want.some((w) => s === w || (happyPath.includes(w) && at > happyPath.indexOf(w)));
}

/** paginate walks the pages fetch returns, each after the last id of the one before. */
async function* paginate<T extends { id: string }>(
  first: string | undefined,
  fetchPage: (after: string | undefined) => Promise<{ data: T[]; has_more: boolean }>,
): AsyncGenerator<T, void, undefined> {
  let after = first;
  for (;;) {
    const page = await fetchPage(after);
    yield* page.data;
    if (!page.has_more || page.data.length === 0) return;
    after = page.data[page.data.length - 1]!.id;
  }
}

/** read decodes a 2xx answer's body; one without a body (204) is undefined. */
function read(text: string, status: number, decode: Decode): unknown {
  if (decode === "none" || status === 204 || text === "") return undefined;
  try {
    return decode === "contract" ? decodeJSON(text) : JSON.parse(text);
  } catch (err) {
    throw new Error(`memocart: decoding the answer: ${(err as Error).message}`, { cause: err });
  }
}

/** errorOf reads an answer outside 2xx: the API's envelope, or the status text without one. */
function errorOf(res: Response, text: string): MemocartError {
  const requestId = res.headers.get("X-Request-Id") || null;
  let env: { error?: { code?: unknown; message?: unknown; field?: unknown } } | undefined;
  try {
    env = JSON.parse(text);
  } catch {
    env = undefined;
  }
  const e = env?.error;
  if (e && typeof e.code === "string" && e.code !== "") {
    return new MemocartError({
      status: res.status,
      code: e.code as ErrorCode,
      message: typeof e.message === "string" ? e.message : "",
      field: typeof e.field === "string" ? e.field : null,
      requestId,
    });
  }
  return new MemocartError({ status: res.status, code: null, message: res.statusText || `HTTP ${res.status}`, requestId });
}

/** retryAfter reads a Retry-After of whole seconds, in milliseconds; 0 when absent or another form. */
function retryAfter(h: string | null): number {
  const s = h?.trim() ?? "";
  return /^\d+$/.test(s) ? Number(s) * 1000 : 0;
}

/** query writes the parameters that are set, as the API reads them. */
function query(params: object | undefined): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

function esc(segment: string): string {
  return encodeURIComponent(segment);
}

/** sleep waits ms, or until signal aborts (rejecting with its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
