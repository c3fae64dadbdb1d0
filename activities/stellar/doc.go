// Package stellar reads incoming payments to Memocart's receiving account
// from a Horizon server and hands them to the payment matcher.
//
// A Watcher follows the account's "payments for account" history in
// Horizon: it pages through what it has not seen yet, then keeps a
// Server-Sent Events stream open for new payments, and every SweepEvery
// closes the stream to page again over the stretch the stream covered, so a
// payment a stream skipped is still found. Each batch of payments is saved
// together with the paging cursor in one store transaction before any is
// handed on, so a crash at any point neither loses nor double-counts a
// payment: the watcher resumes from the saved cursor, and the service's
// reconciler re-drives payments that were saved but not handled.
//
// A ChainReader reads the whole payments history of the receiving and
// payout accounts, for memocart reconcile to compare with the books
// (models.CompareChain).
//
// It may import models, shopspring/decimal and the standard library.
package stellar
