package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/api/checkout"
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
	r := checkout.NewCart{AccountID: key.AccountID, Mode: key.Mode, Country: country, Metadata: req.Metadata,
		Items: make([]checkout.CartItem, len(refs))}
	for i := range refs {
		r.Items[i] = checkout.CartItem{Ref: refs[i], Quantity: qtys[i]}
	}
	if req.ShipToPostalCode != nil {
		r.PostalCode = *req.ShipToPostalCode
	}
	cart, err := s.deps.Carts.CreateCart(c.Request.Context(), r)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusCreated, gin.H{"cart": newCartJSON(cart, cart.CreatedAt)})
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
