// Package models is Memocart's domain: accounts and API keys, products,
// carts, orders and their statuses, money and pricing, and the error-code
// vocabulary every other package speaks.
//
// It is pure: no I/O, no clock (callers pass now in), no randomness (callers
// pass an io.Reader in). That keeps it callable from Temporal workflow code,
// which must be deterministic, and makes every rule here testable without
// fakes. It may import only the standard library and shopspring/decimal.
package models
