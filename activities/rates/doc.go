// Package rates provides exchange rates for quoting orders in assets that
// are not pegged to the order's currency (XLM for a USD cart): a live
// source (Coinbase), a fixed one for tests and offline runs, and a cache
// that keeps one fetch serving a burst of orders without ever serving a
// stale rate.
//
// It may import models, shopspring/decimal and the standard library.
package rates
