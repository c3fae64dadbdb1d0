package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// An order as a client reads it: the order row with its steps, its cart's
// items and, while it waits for payment, the amounts of payments seen but
// not yet credited (PendingCredit), so nobody reads "nothing received" for
// money already on the chain.
//
// On Postgres that is one round trip: each part is aggregated by a
// correlated subquery into a JSON array of text values (text, so no amount
// or time passes through a float). On SQLite, which is in process and has
// no round trip to save, the same query measured 1.4-1.6 times slower than
// one simple query per table (docs/benchmarks.md), so SQLite reads per
// table. TestClientReadMatchesActivityRead holds both to the same result.
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
)

// clientOrderRow is orderRow with its aggregates.
type clientOrderRow struct {
	Row         orderRow `gorm:"embedded"`
	StepsJSON   string
	ItemsJSON   string
	PendingJSON string
}

// readClientOrder reads the order whose column (id or number) is value,
// with its steps, items and pending credit.
func (s *Store) readClientOrder(db *gorm.DB, column, value string) (models.Order, error) {
	if s.dialect == DialectSQLite {
		return readOrderPerTable(db, column, value)
	}
	var row clientOrderRow
	err := db.Table("orders AS o").Select("o.*, "+pgStepsJSON+", "+pgItemsJSON+", "+pgPendingJSON).
		Where("o."+column+" = ?", value).Take(&row).Error
	if err != nil {
		return models.Order{}, err
	}
	return row.toModel()
}

// readOrderPerTable is readClientOrder with one query per table.
func readOrderPerTable(db *gorm.DB, column, value string) (models.Order, error) {
	var row orderRow
	if err := db.Where(column+" = ?", value).Take(&row).Error; err != nil {
		return models.Order{}, err
	}
	o, err := orderTx(db, row)
	if err != nil || o.Status != models.OrderCreated {
		return o, err
	}
	var amounts []decimal.Decimal
	err = db.Model(&paymentRow{}).
		Where("signaled_at IS NULL AND asset = ? AND ((order_id = ? AND status = ?) OR (status = ? AND order_id IS NULL AND memo = ? AND mode = ?))",
			o.PaymentAsset, o.ID, PaymentMatched, PaymentReceived, o.Number, string(o.Mode)).
		Pluck("amount", &amounts).Error
	if err != nil {
		return models.Order{}, fmt.Errorf("reading pending payments: %w", err)
	}
	for _, a := range amounts {
		o.PendingCredit = o.PendingCredit.Add(a)
	}
	return o, nil
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
