// Package sandbox holds the simulators Memocart uses for test-mode API keys:
// stand-ins for the marketplaces (and, in time, the other external systems)
// that speak through the same interfaces as the live providers, so the API,
// workflows and activities run unchanged in test mode.
//
// Every simulator is deterministic: the same input always gives the same
// answer, with no network, no clock and no randomness. That lets client
// developers script against known products and lets our own tests assert
// exact values. A few reserved ids trigger the failure paths (see
// UnavailableASIN, UnavailableEbayItem and FailSourcingASIN), and a few
// refund memos the payout's (Payer).
//
// It may import models, shopspring/decimal, the standard library,
// activities/stellar/payout for the payout's request and result, which the
// sandbox payer shares with the live one, and activities/upstream/upstreamtest
// for what the simulators invent products from.
package sandbox
