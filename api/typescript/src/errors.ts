import type { ErrorCode, Order } from "./types.js";

/**
 * MemocartError is an answer of the API outside 2xx. `code` is the
 * contract's error code (ErrorCode in api/openapi.json; docs/api.md
 * "Errors" says when each is given), null when the answer was not the
 * API's JSON envelope (a proxy's page, a 431 from the HTTP server);
 * `message` is the API's message, or the status text without one.
 */
export class MemocartError extends Error {
  override name = "MemocartError";
  /** The HTTP status. */
  readonly status: number;
  /** The contract's error code, e.g. "order_not_found". */
  readonly code: ErrorCode | null;
  /** The request field at fault, null when none is. */
  readonly field: string | null;
  /** The answer's X-Request-Id: quote it to support. */
  readonly requestId: string | null;

  constructor(init: { status: number; code: ErrorCode | null; message: string; field?: string | null; requestId?: string | null }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.field = init.field ?? null;
    this.requestId = init.requestId ?? null;
  }

  /**
   * retryable says whether another attempt may get another answer: a 5xx,
   * a 429, or a 409 idempotency_key_in_use (the same request, under the
   * same key, is still being processed: typically an earlier attempt that
   * timed out here, whose answer the retry then replays). Other 4xx
   * answers are final: the same request meets them again.
   */
  get retryable(): boolean {
    return this.status >= 500 || this.status === 429 || (this.status === 409 && this.code === "idempotency_key_in_use");
  }

  /** The status, code, message, field and request id on one line. */
  override toString(): string {
    let s = `memocart: ${this.status}`;
    if (this.code !== null) s += ` ${this.code}`;
    s += `: ${this.message}`;
    if (this.field !== null) s += ` (field ${this.field})`;
    if (this.requestId !== null) s += ` [request ${this.requestId}]`;
    return s;
  }
}

/**
 * FinalStatusError is waitForOrderStatus's error when the order ended in a
 * final status other than those waited for (cancelled while waiting for
 * paid, say): no wait can reach them any more. `order` is the order as it
 * ended.
 */
export class FinalStatusError extends Error {
  override name = "FinalStatusError";
  readonly order: Order;
  constructor(order: Order, wanted: readonly string[]) {
    super(`memocart: the order ended in another status: order ${order.id} is ${order.status}, waited for ${wanted.length ? wanted.join(", ") : "a final status"}`);
    this.order = order;
  }
}
