// Package ebay is the live product catalog of the auction marketplace: it
// looks listings up in eBay's Browse API (getItemByLegacyId, with an
// application token from the OAuth client-credentials grant) and turns
// them into models.Product, for the same Catalog interface the test-mode
// sandbox catalog serves.
//
// Only what can be bought at a fixed price now is a product: a Buy It Now
// price (FIXED_PRICE among the buying options, auctions with Buy It Now
// included), a listing that has not ended, and stock for home delivery.
// Everything else is product_unavailable with a reason a shopper can act
// on. Calls are paced for the whole application, bounded per request, and
// retried with jittered backoff on throttling, outages and timeouts, never
// past the caller's deadline; what is still failing then is
// marketplace_unavailable. There is no cache here: previews are cached by
// the caller, which knows what may be stale.
//
// activities/ebay/browsetest serves the same protocol for tests and
// `memocart dev`.
//
// It may import models, activities/upstream, golang.org/x/oauth2,
// golang.org/x/time/rate, shopspring/decimal and the standard library.
package ebay
