// Package activities holds every side effect the order workflow needs —
// database writes and marketplace fulfilment — each one idempotent, so
// Temporal may retry any of them at any time, plus the small interfaces it
// consumes (Store, Fulfiller). Concrete implementations live elsewhere: the
// store in models/sqlstore, fulfillers in activities/<vendor> and
// activities/sandbox.
//
// It is the one place where models error codes become Temporal errors: a
// business failure is a non-retryable application error whose type is the
// model's code; anything else is returned as is and retried.
//
// It may import models and the Temporal activity API.
package activities
