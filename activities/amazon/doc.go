// Package amazon is the live product catalog of the large retailer: it
// looks products up with the Creators API's getItems (with an access token
// from the client-credentials grant of the storefront's region group,
// asked for the way the credential's version wants) and turns them into models.Product, for the same Catalog
// interface the test-mode sandbox catalog serves. It also resolves the
// retailer's short links (amzn.to, a.co/d, amzn.eu/d, amzn.asia/d) by
// following their redirects itself, to known Amazon hosts only.
//
// Only what can be bought now is a product: the buy-box offer (or the
// first offer when none has the buy box), among the offers not reserved
// to Prime members, must be IN_STOCK or IN_STOCK_SCARCE and have a price. Everything else is
// product_unavailable with a reason a shopper can act on. Each credential
// is paced on its own, every request is bounded in time, and throttling,
// outages and timeouts are retried with jittered backoff, never past the
// caller's deadline; what still fails then is marketplace_unavailable.
// There is no product cache here (the caller keeps one); only what short
// links resolve to is remembered.
//
// activities/amazon/creatorstest serves the same protocol for tests and
// `memocart dev`.
//
// It may import models, activities/upstream, golang.org/x/oauth2 (its
// token and error types), golang.org/x/time/rate, shopspring/decimal and
// the standard library.
package amazon
