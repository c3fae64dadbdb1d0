package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// An order as a client reads it, in one round trip: the order row with its
// steps, its cart's items and, while it waits for payment, the amounts of
// payments seen but not yet credited, each aggregated by a correlated
// subquery into a JSON array of text values (text, so no amount or time
// passes through a float on either database).
const (
	pgStepsJSON = `(SELECT COALESCE(json_agg(json_build_object('name', s.name,
		'at', to_char(s.reached_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))), '[]')
		FROM order_steps s WHERE s.order_id = o.id) AS steps_json`
	pgItemsJSON = `(SELECT COALESCE(json_agg(json_build_object('product_url', i.product_url, 'marketplace', i.marketplace,
		'product_id', i.product_id, 'title', i.title, 'image_url', i.image_url, 'quantity', i.quantity,
		'unit_price', i.unit_price::text, 'line_total', i.line_total::text, 'currency', i.currency,
		'upstream_id', i.upstream_id, 'variation', i.variation, 'listing', i.listing) ORDER BY i.position), '[]')
		FROM cart_items i WHERE i.cart_id = o.cart_id) AS items_json`
	pgPendingJSON = `(SELECT COALESCE(json_agg(p.amount::text), '[]') FROM payments p
		WHERE o.status = 'created' AND p.signaled_at IS NULL AND p.asset = o.payment_asset
		AND ((p.order_id = o.id AND p.status = 'matched')
		  OR (p.status = 'received' AND p.order_id IS NULL AND p.memo = o.number AND p.mode = o.mode))) AS pending_json`

	sqliteStepsJSON = `(SELECT COALESCE(json_group_array(json_object('name', s.name, 'at', CAST(s.reached_at AS TEXT))), '[]')
		FROM order_steps s WHERE s.order_id = o.id) AS steps_json`
	sqliteItemsJSON = `(SELECT COALESCE(json_group_array(json_object('product_url', i.product_url, 'marketplace', i.marketplace,
		'product_id', i.product_id, 'title', i.title, 'image_url', i.image_url, 'quantity', i.quantity,
		'unit_price', CAST(i.unit_price AS TEXT), 'line_total', CAST(i.line_total AS TEXT), 'currency', i.currency,
		'upstream_id', i.upstream_id, 'variation', i.variation, 'listing', i.listing)), '[]')
		FROM (SELECT * FROM cart_items WHERE cart_id = o.cart_id ORDER BY position) i) AS items_json`
	sqlitePendingJSON = `(SELECT COALESCE(json_group_array(CAST(p.amount AS TEXT)), '[]') FROM payments p
		WHERE o.status = 'created' AND p.signaled_at IS NULL AND p.asset = o.payment_asset
		AND ((p.order_id = o.id AND p.status = 'matched')
		  OR (p.status = 'received' AND p.order_id IS NULL AND p.memo = o.number AND p.mode = o.mode))) AS pending_json`
)

// clientOrderRow is orderRow with its aggregates.
type clientOrderRow struct {
	Row         orderRow `gorm:"embedded"`
	StepsJSON   string
	ItemsJSON   string
	PendingJSON string
}

// readClientOrder reads the order lookup selects (one row of orders AS o)
// with its steps, items and pending credit, in one query.
func (s *Store) readClientOrder(lookup *gorm.DB) (models.Order, error) {
	steps, items, pending := pgStepsJSON, pgItemsJSON, pgPendingJSON
	if s.dialect == DialectSQLite {
		steps, items, pending = sqliteStepsJSON, sqliteItemsJSON, sqlitePendingJSON
	}
	var row clientOrderRow
	err := lookup.Table("orders AS o").Select("o.*, " + steps + ", " + items + ", " + pending).Take(&row).Error
	if err != nil {
		return models.Order{}, err
	}
	return row.toModel()
}

type stepJSON struct {
	Name string `json:"name"`
	At   string `json:"at"`
}

type itemJSON struct {
	ProductURL  string `json:"product_url"`
	Marketplace string `json:"marketplace"`
	ProductID   string `json:"product_id"`
	Title       string `json:"title"`
	ImageURL    string `json:"image_url"`
	Quantity    int    `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	LineTotal   string `json:"line_total"`
	Currency    string `json:"currency"`
	UpstreamID  string `json:"upstream_id"`
	Variation   string `json:"variation"`
	Listing     string `json:"listing"`
}

// stepTimeLayouts are how the two databases write a step's time in the
// aggregates: Postgres as formatted above, SQLite as its driver stored it.
var stepTimeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05"}

func (r clientOrderRow) toModel() (models.Order, error) {
	var (
		js  []stepJSON
		ijs []itemJSON
		pjs []string
	)
	for _, a := range []struct {
		raw string
		dst any
	}{{r.StepsJSON, &js}, {r.ItemsJSON, &ijs}, {r.PendingJSON, &pjs}} {
		if err := json.Unmarshal([]byte(a.raw), a.dst); err != nil {
			return models.Order{}, fmt.Errorf("reading order %s aggregates: %w", r.Row.ID, err)
		}
	}
	steps := make([]orderStepRow, len(js))
	for i, s := range js {
		at, err := parseStepTime(s.At)
		if err != nil {
			return models.Order{}, fmt.Errorf("reading order %s step %s: %w", r.Row.ID, s.Name, err)
		}
		steps[i] = orderStepRow{OrderID: r.Row.ID, Name: s.Name, ReachedAt: at}
	}
	items := make([]models.CartItem, len(ijs))
	for i, it := range ijs {
		unit, err1 := decimal.NewFromString(it.UnitPrice)
		line, err2 := decimal.NewFromString(it.LineTotal)
		if err1 != nil || err2 != nil {
			return models.Order{}, fmt.Errorf("reading order %s item %d: amounts %q, %q", r.Row.ID, i, it.UnitPrice, it.LineTotal)
		}
		items[i] = cartItemRow{ProductURL: it.ProductURL, Marketplace: it.Marketplace, ProductID: it.ProductID, Title: it.Title,
			ImageURL: it.ImageURL, Quantity: it.Quantity, UnitPrice: unit, LineTotal: line, Currency: it.Currency,
			UpstreamID: it.UpstreamID, Variation: it.Variation, Listing: it.Listing}.toModel()
	}
	o := r.Row.toModel(steps, items)
	for _, p := range pjs {
		d, err := decimal.NewFromString(p)
		if err != nil {
			return models.Order{}, fmt.Errorf("reading order %s pending payment amount %q: %w", r.Row.ID, p, err)
		}
		o.PendingCredit = o.PendingCredit.Add(d)
	}
	return o, nil
}

func parseStepTime(s string) (time.Time, error) {
	for _, layout := range stepTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unreadable time %q", s)
}
