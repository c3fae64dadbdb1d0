package checkout

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
)

// Catalog looks up marketplace products. Errors wrapping
// models.ErrProductUnavailable mean the product cannot be bought.
type Catalog interface {
	Product(ctx context.Context, ref models.ProductRef) (models.Product, error)
}

// CartStore is the store's part in the cart use cases.
type CartStore interface {
	CreateCart(ctx context.Context, c models.Cart) error
}

// CartsConfig is how carts are priced and how long they last.
type CartsConfig struct {
	Pricing models.PricingRules
	// TTL is how long a cart can be ordered (models.DefaultCartTTL when
	// zero).
	TTL time.Duration
}

// Carts carries out the cart use cases: a product's preview, and a priced
// cart of products.
type Carts struct {
	cfg      CartsConfig
	catalogs map[models.Mode]Catalog
	store    CartStore
	now      Clock
}

// NewCarts returns the cart use cases: store and catalogs are required (a
// mode without a catalog answers live_mode_unavailable rather than
// another mode's data).
func NewCarts(cfg CartsConfig, catalogs map[models.Mode]Catalog, store CartStore, now Clock) (*Carts, error) {
	if err := missing("Carts", map[string]bool{"store": store == nil, "catalogs": len(catalogs) == 0}); err != nil {
		return nil, err
	}
	if cfg.TTL <= 0 {
		cfg.TTL = models.DefaultCartTTL
	}
	return &Carts{cfg: cfg, catalogs: catalogs, store: store, now: orNow(now)}, nil
}

// Product looks ref up in mode's catalog: a product in stock, or why not.
func (s *Carts) Product(ctx context.Context, mode models.Mode, ref models.ProductRef) (models.Product, error) {
	cat, ok := s.catalogs[mode]
	if !ok || cat == nil {
		return models.Product{}, models.ErrLiveUnavailable
	}
	p, err := cat.Product(ctx, ref)
	if err != nil {
		return models.Product{}, err
	}
	if p.Availability != models.InStock {
		return models.Product{}, models.ErrProductUnavailable
	}
	return p, nil
}

// NewCart is a client's validated request for a cart.
type NewCart struct {
	AccountID  string
	Mode       models.Mode
	Country    string // normalised (models.NormalizeCountry)
	PostalCode string
	Items      []CartItem
	// Metadata is the client's own (models.ValidateMetadata).
	Metadata map[string]string
}

// CartItem is one product and how many of it.
type CartItem struct {
	Ref      models.ProductRef
	Quantity int
}

// CreateCart prices r's products for its destination and stores the
// cart. The destination is checked before any catalog is asked; the
// products are looked up at once; a product that cannot be bought is
// named by its index (items[i].product_url), since a client with several
// needs to know which to drop.
func (s *Carts) CreateCart(ctx context.Context, r NewCart) (models.Cart, error) {
	if err := s.cfg.Pricing.Ships(r.Country); err != nil {
		return models.Cart{}, err
	}
	lines := make([]models.CartLine, len(r.Items))
	errs := make([]error, len(r.Items))
	var wg sync.WaitGroup
	for i, it := range r.Items {
		wg.Go(func() {
			// A panic in a goroutine of its own would take the whole
			// process down: no caller's recovery sees it.
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("catalog panicked: %v\n%s", p, debug.Stack())
				}
			}()
			ref := it.Ref
			ref.ShipTo = r.Country
			p, err := s.Product(ctx, r.Mode, ref)
			if err == nil && r.Mode == models.ModeLive {
				err = models.CheckLiveBuyable(p, r.Country)
			}
			lines[i], errs[i] = models.CartLine{Product: p, Quantity: it.Quantity}, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		var me *models.Error
		if errors.As(err, &me) && me.Code == models.CodeProductUnavailable {
			return models.Cart{}, &models.Error{Code: me.Code, Field: fmt.Sprintf("items[%d].product_url", i),
				Message: fmt.Sprintf("One or more products unavailable: items[%d]: %s", i, me.Message)}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return models.Cart{}, err
	}
	if r.Mode == models.ModeLive {
		ps := make([]models.Product, len(lines))
		for i, l := range lines {
			ps[i] = l.Product
		}
		if err := models.CheckLiveCart(ps); err != nil {
			return models.Cart{}, err
		}
	}
	quote, err := s.cfg.Pricing.Quote(r.Country, lines)
	if err != nil {
		return models.Cart{}, err
	}
	id, err := models.NewID("crt", rand.Reader)
	if err != nil {
		return models.Cart{}, err
	}
	now := s.now().UTC().Truncate(time.Second)
	cart := models.Cart{
		ID: id, AccountID: r.AccountID, Mode: r.Mode, Status: models.CartReady,
		ShipToCountry: r.Country, ShipToPostalCode: r.PostalCode, Quote: quote, Items: models.PriceItems(lines),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.TTL),
	}
	// Empty values mean "no such key" (as on an order, where they remove
	// a cart key): they are not stored.
	if cart.Metadata, err = models.MergeMetadata(nil, r.Metadata); err != nil {
		return models.Cart{}, err
	}
	if err := s.store.CreateCart(ctx, cart); err != nil {
		return models.Cart{}, err
	}
	return cart, nil
}
