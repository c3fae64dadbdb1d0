// Package activities holds every side effect the workflows need —
// database writes, marketplace fulfilment, refund payouts, webhook
// delivery — each one idempotent, so Temporal may retry any of them at any
// time, in groups by concern (Orders, Payments, Refunds, Webhooks,
// Watches), each built by its constructor with every part it needs; plus
// the small ports they consume, in the domain's terms (Store, Fulfiller,
// Payer). Concrete implementations live elsewhere: the store in
// models/sqlstore, fulfillers and payers in activities/<vendor> and
// activities/sandbox.
//
// It is the one place where models error codes become Temporal errors: a
// business failure is a non-retryable application error whose type is the
// model's code; anything else is returned as is and retried.
//
// It may import models and the Temporal activity API.
package activities
