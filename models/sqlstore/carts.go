package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

type cartRow struct {
	ID               string
	AccountID        string
	Mode             string
	Status           string
	Currency         string
	ShipToCountry    string
	ShipToPostalCode string
	Subtotal         decimal.Decimal
	Shipping         decimal.Decimal
	Tax              decimal.Decimal
	ServiceFee       decimal.Decimal
	Total            decimal.Decimal
	CreatedAt        time.Time
	ExpiresAt        time.Time
	Metadata         string // metadataText
}

func (cartRow) TableName() string { return "carts" }

// metadataText is how metadata is stored: canonical JSON (encoding/json
// sorts map keys), "" when there is none.
func metadataText(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("encoding metadata: %v", err)) // a map of strings always encodes
	}
	return string(b)
}

// metadataMap reads metadataText back; nil when there is none. Only
// metadataText writes the column, so a document that does not decode is a
// bug, shown as no metadata rather than failing every read of the row.
func metadataMap(s string) map[string]string {
	if s == "" {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil || len(m) == 0 {
		return nil
	}
	return m
}

// cartItemRow is a cart's item at its position: the item's columns are
// named after models.CartItem's fields.
type cartItemRow struct {
	CartID          string
	Position        int
	models.CartItem `gorm:"embedded"`
}

func (cartItemRow) TableName() string { return "cart_items" }

// CreateCart stores a priced cart and its items in one transaction.
func (s *Store) CreateCart(ctx context.Context, c models.Cart) error {
	row := cartRow{
		ID: c.ID, AccountID: c.AccountID, Mode: string(c.Mode), Status: string(c.Status),
		Currency: c.Currency, ShipToCountry: c.ShipToCountry, ShipToPostalCode: c.ShipToPostalCode,
		Subtotal: c.Subtotal, Shipping: c.Shipping, Tax: c.Tax, ServiceFee: c.ServiceFee, Total: c.Total,
		CreatedAt: c.CreatedAt.UTC(), ExpiresAt: c.ExpiresAt.UTC(), Metadata: metadataText(c.Metadata),
	}
	items := make([]cartItemRow, len(c.Items))
	for i, it := range c.Items {
		items[i] = cartItemRow{CartID: c.ID, Position: i, CartItem: it}
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		return tx.Create(&items).Error
	})
	if err != nil {
		return fmt.Errorf("storing cart: %w", err)
	}
	return nil
}

// Cart returns the cart with the given id if it belongs to the account and
// mode; otherwise models.ErrCartNotFound, so another account cannot even
// learn that the id exists. Expiry is the caller's decision.
func (s *Store) Cart(ctx context.Context, accountID string, mode models.Mode, id string) (models.Cart, error) {
	return cartTx(s.db.WithContext(ctx), accountID, mode, id)
}

func cartTx(db *gorm.DB, accountID string, mode models.Mode, id string) (models.Cart, error) {
	row, err := take[cartRow](db.Where("id = ? AND account_id = ? AND mode = ?", id, accountID, string(mode)), models.ErrCartNotFound, "cart")
	if err != nil {
		return models.Cart{}, err
	}
	return cartWithItems(db, row)
}

// cartWithItems completes a cart row read in db with its items.
func cartWithItems(db *gorm.DB, row cartRow) (models.Cart, error) {
	var items []cartItemRow
	if err := db.Where("cart_id = ?", row.ID).Order("position").Find(&items).Error; err != nil {
		return models.Cart{}, fmt.Errorf("reading cart items: %w", err)
	}
	return row.toModel(items), nil
}

// toModel is the cart of row with its items.
func (row cartRow) toModel(items []cartItemRow) models.Cart {
	c := models.Cart{
		ID: row.ID, AccountID: row.AccountID, Mode: models.Mode(row.Mode), Status: models.CartStatus(row.Status),
		ShipToCountry: row.ShipToCountry, ShipToPostalCode: row.ShipToPostalCode,
		Quote: models.Quote{
			Currency: row.Currency, Subtotal: row.Subtotal, Shipping: row.Shipping,
			Tax: row.Tax, ServiceFee: row.ServiceFee, Total: row.Total,
		},
		CreatedAt: utc(row.CreatedAt), ExpiresAt: utc(row.ExpiresAt), Metadata: metadataMap(row.Metadata),
	}
	for _, it := range items {
		c.Items = append(c.Items, it.CartItem)
	}
	return c
}
