package api

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

type cartRequest struct {
	// Items are decoded one by one in validate, so a type error can name
	// its index (items[2].quantity); encoding/json would drop it.
	Items            []json.RawMessage `json:"items"`
	ShipToCountry    *string           `json:"ship_to_country"`
	ShipToPostalCode *string           `json:"ship_to_postal_code"`
	// Metadata is the client's own string map (models.ValidateMetadata).
	Metadata map[string]string `json:"metadata"`
}

type cartItemRequest struct {
	ProductURL *string `json:"product_url"`
	Quantity   *int    `json:"quantity"`
}

type cartJSON struct {
	ID               string            `json:"id"`
	Status           models.CartStatus `json:"status"`
	Currency         string            `json:"currency"`
	Subtotal         json.Number       `json:"subtotal"`
	Shipping         json.Number       `json:"shipping"`
	Tax              json.Number       `json:"tax"`
	ServiceFee       json.Number       `json:"service_fee"`
	Total            json.Number       `json:"total"`
	ShipToCountry    string            `json:"ship_to_country"`
	ShipToPostalCode string            `json:"ship_to_postal_code,omitempty"`
	CreatedAt        string            `json:"created_at"`
	ExpiresAt        string            `json:"expires_at"`
	Items            []cartItemJSON    `json:"items"`
	Metadata         map[string]string `json:"metadata"`
}

// metadataJSON is metadata as every cart and order shows it: an object,
// empty when there is none.
func metadataJSON(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// cartItemJSON is one cart line; README.md documents these fields.
type cartItemJSON struct {
	ProductURL  string             `json:"product_url"`
	Marketplace models.Marketplace `json:"marketplace"`
	ProductID   string             `json:"product_id"`
	Title       string             `json:"title"`
	ImageURL    string             `json:"image_url"`
	Quantity    int                `json:"quantity"`
	UnitPrice   json.Number        `json:"unit_price"`
	LineTotal   json.Number        `json:"line_total"`
	// The listing the price came from (see README).
	UpstreamID string `json:"upstream_id,omitempty"`
	Variation  string `json:"variation,omitempty"`
	Listing    string `json:"listing,omitempty"`
}

// timestamp formats an instant as the contract's ISO 8601 UTC string.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func newCartJSON(c models.Cart, now time.Time) cartJSON {
	status := c.Status
	out := cartJSON{
		ID: c.ID, Status: status, Currency: c.Currency,
		Subtotal: money(c.Subtotal, c.Currency), Shipping: money(c.Shipping, c.Currency),
		Tax: money(c.Tax, c.Currency), ServiceFee: money(c.ServiceFee, c.Currency), Total: money(c.Total, c.Currency),
		ShipToCountry: c.ShipToCountry, ShipToPostalCode: c.ShipToPostalCode,
		CreatedAt: timestamp(c.CreatedAt), ExpiresAt: timestamp(c.ExpiresAt),
		Items: make([]cartItemJSON, len(c.Items)), Metadata: metadataJSON(c.Metadata),
	}
	if status == models.CartReady && !c.Usable(now) {
		out.Status = "expired"
	}
	for i, it := range c.Items {
		out.Items[i] = cartItemJSON{
			ProductURL: it.ProductURL, Marketplace: it.Marketplace, ProductID: it.ProductID, Title: it.Title,
			ImageURL: it.ImageURL, Quantity: it.Quantity,
			UnitPrice: money(it.UnitPrice, c.Currency), LineTotal: money(it.LineTotal, c.Currency),
			UpstreamID: it.UpstreamID, Variation: it.Variation, Listing: it.Listing,
		}
	}
	return out
}

// validate checks the request's shape and returns the parsed product refs
// and normalised destination. Errors name the offending field.
func (r cartRequest) validate() ([]models.ProductRef, []int, string, error) {
	if r.ShipToCountry == nil || *r.ShipToCountry == "" {
		return nil, nil, "", required("ship_to_country")
	}
	country, ok := models.NormalizeCountry(*r.ShipToCountry)
	if !ok {
		return nil, nil, "", invalid("ship_to_country", "ship_to_country must be an ISO 3166-1 alpha-2 country code such as US or DE")
	}
	if r.ShipToPostalCode != nil && len(*r.ShipToPostalCode) > 16 {
		return nil, nil, "", invalid("ship_to_postal_code", "ship_to_postal_code is longer than 16 characters")
	}
	if r.Items == nil {
		return nil, nil, "", required("items")
	}
	if len(r.Items) == 0 || len(r.Items) > models.MaxCartItems {
		return nil, nil, "", invalid("items", "items must hold between 1 and %d entries", models.MaxCartItems)
	}
	if err := models.ValidateMetadata(r.Metadata); err != nil {
		return nil, nil, "", err
	}
	refs := make([]models.ProductRef, len(r.Items))
	qtys := make([]int, len(r.Items))
	for i, raw := range r.Items {
		field := fmt.Sprintf("items[%d]", i)
		var it cartItemRequest
		if err := decodeStrict(raw, &it); err != nil {
			var me *models.Error
			if errors.As(err, &me) {
				if me.Field != "" {
					me.Message = field + "." + me.Message
					me.Field = field + "." + me.Field
				} else {
					me.Field, me.Message = field, field+" must be an object with product_url and quantity"
				}
			}
			return nil, nil, "", err
		}
		if it.ProductURL == nil || *it.ProductURL == "" {
			return nil, nil, "", required(field + ".product_url")
		}
		if it.Quantity == nil {
			return nil, nil, "", required(field + ".quantity")
		}
		if q := *it.Quantity; q < 1 || q > models.MaxItemQuantity {
			return nil, nil, "", invalid(field+".quantity", "%s.quantity must be an integer from 1 to %d", field, models.MaxItemQuantity)
		}
		ref, err := models.ParseProductURL(*it.ProductURL)
		if err != nil {
			var me *models.Error
			if errors.As(err, &me) {
				me.Field = field + ".product_url"
			}
			return nil, nil, "", err
		}
		refs[i], qtys[i] = ref, *it.Quantity
	}
	return refs, qtys, country, nil
}

// createCart is POST /v1/carts.
func (s *Server) createCart(c *gin.Context) {
	ctx := c.Request.Context()
	key := mustKey(c)
	var req cartRequest
	if err := decodeJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	refs, qtys, country, err := req.validate()
	if err != nil {
		abort(c, err)
		return
	}
	// Refuse an unshippable destination before spending catalog lookups.
	for _, cc := range s.cfg.Pricing.NoShip {
		if cc == country {
			abort(c, models.ErrShippingUnavailable)
			return
		}
	}

	lines := make([]models.CartLine, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The recovery middleware only sees the request's goroutine: a
			// panic here would take the whole process down.
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("catalog panicked: %v\n%s", p, debug.Stack())
				}
			}()
			ref.ShipTo = country
			p, err := s.product(ctx, key.Mode, ref)
			if err == nil && key.Mode == models.ModeLive {
				err = models.CheckLiveBuyable(p, country)
			}
			lines[i], errs[i] = models.CartLine{Product: p, Quantity: qtys[i]}, err
		}()
	}
	wg.Wait()
	// The contract's message first, then which item and why: a client
	// with several items needs to know which one to drop.
	for i, err := range errs {
		var me *models.Error
		if errors.As(err, &me) && me.Code == models.CodeProductUnavailable {
			abort(c, &models.Error{Code: me.Code, Field: fmt.Sprintf("items[%d].product_url", i),
				Message: fmt.Sprintf("One or more products unavailable: items[%d]: %s", i, me.Message)})
			return
		}
	}
	if err := errors.Join(errs...); err != nil {
		abort(c, err)
		return
	}
	if key.Mode == models.ModeLive {
		ps := make([]models.Product, len(lines))
		for i, l := range lines {
			ps[i] = l.Product
		}
		if err := models.CheckLiveCart(ps); err != nil {
			abort(c, err)
			return
		}
	}

	quote, err := s.cfg.Pricing.Quote(country, lines)
	if err != nil {
		abort(c, err)
		return
	}
	id, err := models.NewID("crt", rand.Reader)
	if err != nil {
		abort(c, err)
		return
	}
	now := s.deps.Now().UTC().Truncate(time.Second)
	cart := models.Cart{
		ID: id, AccountID: key.AccountID, Mode: key.Mode, Status: models.CartReady,
		ShipToCountry: country, Quote: quote, Items: models.PriceItems(lines),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.CartTTL),
	}
	if req.ShipToPostalCode != nil {
		cart.ShipToPostalCode = *req.ShipToPostalCode
	}
	// Empty values mean "no such key" (as on an order, where they remove
	// a cart key): they are not stored.
	if cart.Metadata, err = models.MergeMetadata(nil, req.Metadata); err != nil {
		abort(c, err)
		return
	}
	if err := s.deps.Store.CreateCart(ctx, cart); err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusCreated, gin.H{"cart": newCartJSON(cart, now)})
}

// getCart is GET /v1/carts/{id}, a Pro endpoint beyond the contract.
func (s *Server) getCart(c *gin.Context) {
	key := mustKey(c)
	if !models.ValidID("crt", c.Param("id")) {
		abort(c, models.ErrCartNotFound)
		return
	}
	cart, err := s.deps.Store.Cart(c.Request.Context(), key.AccountID, key.Mode, c.Param("id"))
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"cart": newCartJSON(cart, s.deps.Now())})
}
