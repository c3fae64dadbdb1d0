// The contract's types under the names the client uses, all taken from
// schema.ts (generated from api/openapi.json by npm run generate): a
// change to the contract changes them, and the compiler then points at
// every use that no longer fits.
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];

/** The JSON body of operation O's request. */
export type RequestBody<O extends keyof operations> = operations[O] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;

/** The query parameters of operation O. */
export type QueryParams<O extends keyof operations> = NonNullable<operations[O]["parameters"]["query"]>;

/** The JSON body of operation O's success answer(s). */
export type SuccessBody<O extends keyof operations> = {
  [S in keyof operations[O]["responses"]]: S extends 200 | 201 | 202
    ? operations[O]["responses"][S] extends { content: { "application/json": infer R } }
      ? R
      : never
    : never;
}[keyof operations[O]["responses"]];

export type ErrorCode = Schemas["ErrorCode"];
export type ErrorEnvelope = Schemas["Error"];
export type OrderStatus = Schemas["OrderStatus"];
export type RefundStatus = Schemas["RefundStatus"];
export type EventType = Schemas["WebhookEventType"];
export type ProductPreview = Schemas["ProductPreview"];
export type Cart = Schemas["Cart"];
export type CartItem = Schemas["CartItem"];
export type CreatedOrder = Schemas["CreatedOrder"];
export type Order = Schemas["Order"];
export type OrderList = Schemas["OrderList"];
export type Refund = Schemas["Refund"];
export type RefundList = Schemas["RefundList"];
export type ShippingAddress = Schemas["ShippingAddress"];
export type TestPayment = Schemas["TestPayment"];
/** An event: the body of a webhook delivery, as the events API lists it too. */
export type Event = Schemas["WebhookEvent"];
export type EventList = Schemas["EventList"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookDelivery = Schemas["WebhookDelivery"];

export type PreviewProductParams = RequestBody<"previewProduct">;
export type CreateCartParams = RequestBody<"createCart">;
export type CreateOrderParams = RequestBody<"createOrder">;
export type CancelOrderParams = RequestBody<"cancelOrder">;
export type RefundDestinationParams = RequestBody<"setOrderRefundDestination">;
export type CreateTestPaymentParams = RequestBody<"createTestPayment">;
export type FailTestOrderParams = RequestBody<"failTestOrder">;
export type FailTestRefundParams = RequestBody<"failTestRefund">;
export type CreateWebhookEndpointParams = RequestBody<"createWebhookEndpoint">;
export type ListOrdersParams = QueryParams<"listOrders">;
export type ListRefundsParams = QueryParams<"listRefunds">;
export type ListEventsParams = QueryParams<"listEvents">;
export type ListWebhookDeliveriesParams = QueryParams<"listWebhookDeliveries">;
/** The answer of resendWebhookEvent: the new delivery. */
export type Resend = SuccessBody<"resendWebhookEvent">["delivery"];
