// Package zinc is the live buying provider: it buys a paid order's items
// at the retailer through Zinc's order API (api.zinc.com, bearer keys
// zn_live_... or zn_test_...) and reports how the purchase and its parcels
// progress, as the activities' Fulfiller. Client speaks the API; Fulfiller
// maps orders to requests and Zinc's orders to models.Fulfilment;
// VerifyWebhook and ParseWebhook read Zinc's webhook deliveries, which
// are hints to check an order, never the truth about it.
//
// Placing is idempotent by order and attempt: attempt n of order o is
// placed under the idempotency key IdempotencyKey(o.ID, n) with metadata
// naming the order and the attempt, so a retried activity never buys
// twice. Refusals (a product out of stock, an address the retailer will
// not take) wrap models.ErrSourcingFailed with a sentence for the client;
// everything else (Zinc down or throttling, timeouts, a problem with
// Memocart's own Zinc account) is a plain error the activity retries. The
// client itself retries nothing and bounds every call.
//
// zinctest serves the same protocol for tests and `memocart dev`.
//
// What Zinc's public material leaves open, and what was chosen; each is
// kept in one function or constant so that being wrong is cheap:
//   - [verify] A repeated idempotency key is answered 409 already_exists
//     with details {"resource": "Order", "identifier": <the key>}, not the
//     order (the documented behaviour). The order is then found with
//     GET /orders?metadata_key=memocart_order_id&metadata_value=<order id>
//     (a filter only Zinc's newest SDK documents) with created_after the
//     Memocart order's creation, paged and matched on the order id and
//     attempt in each order's metadata, so it still works where the
//     filter is ignored (OrdersByMetadata); an order id in details ("order_id"), should Zinc add one,
//     is used first. See duplicateKey, existingOrderID, placedBy.
//   - [verify] Error bodies are {"error": {code, message, details}} in the
//     SDKs and {code, message, details} in the prose documentation; both
//     are read (parseAPIError).
//   - [verify] X-Webhook-Signature is the HMAC-SHA256 of the raw body keyed
//     with the webhook secret (zn_whsec_..., used verbatim), hex encoded,
//     an optional "sha256=" prefix tolerated (webhookMAC). Zinc documents
//     no replay window and redelivers with the original timestamp, so a
//     delivery's age is not checked: a valid signature is enough, and
//     duplicates are dropped by event id.
//   - [verify] Webhook payloads are {event, order_id, status, timestamp,
//     data} as documented, with no event id and no metadata: the event id
//     is then a digest of the body, and WebhookEvent.OrderID is usually
//     empty, so the receiver finds the order by its Zinc id (Ref).
//   - [verify] Times are RFC 3339; zone-less ones (Python's naive
//     datetimes) are read as UTC, unreadable ones as zero (timeLayouts).
//   - price_components are US cents (the SDKs say so); breakdown_recorded
//     null means true, as the SDKs document.
//   - [verify] merchant_order_ids is a list of strings on the order and a
//     list of objects in job_result; both are read.
//   - [verify] A parcel's "undeliverable" status is in Zinc's tracking
//     vocabulary but not in the SDKs' enum (pending, in_transit,
//     delivered); any status not known is taken as pending.
//   - Zinc requires a phone number and buys one order from one retailer;
//     orders without a phone or mixing marketplaces are refused before
//     asking.
//
// It may import models, activities/upstream (the clients' shared checks of
// their settings), shopspring/decimal and the standard library.
package zinc
