package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// An order as a client reads it: the order row with its steps, its cart's
// items and its payments: those attached to it and, while it waits for
// payment, those seen with its memo that the matcher has not attached yet.
// Payments seen but not yet credited add up to PendingCredit, so nobody
// reads "nothing received" for money already on the chain.
//
// On Postgres that is one round trip: each part is aggregated by a
// correlated subquery into a JSON array of text values (text, so no amount
// or time passes through a float). On SQLite, which is in process and has
// no round trip to save, the same query measured 1.4-1.6 times slower than
// one simple query per table (the history of docs/benchmarks.md), so SQLite reads per
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
	// Two index lookups, not one OR: the order's payments by order_id, and
	// while it waits for payment, the payments a source stored with its
	// memo that the matcher has not attached yet (transient: seconds).
	pgPaymentsJSON = `(SELECT COALESCE(json_agg(json_build_object('id', p.id, 'asset', p.asset,
		'amount', p.amount::text, 'tx_hash', p.tx_hash,
		'received_at', to_char(p.received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		'status', p.status, 'signaled', p.signaled_at IS NOT NULL,
		'refunded_at', to_char(p.refunded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		'refund_tx', p.refund_tx) ORDER BY p.received_at, p.id), '[]')
		FROM (SELECT * FROM payments WHERE order_id = o.id
		  UNION ALL SELECT * FROM payments WHERE o.status = 'created' AND status = 'received'
		  AND order_id IS NULL AND memo = o.number AND mode = o.mode) p) AS payments_json`
)

// clientOrderRow is orderRow with its aggregates.
type clientOrderRow struct {
	Row          orderRow `gorm:"embedded"`
	StepsJSON    string
	ItemsJSON    string
	PaymentsJSON string
}

// readClientOrder reads the order whose column (id or number) is value,
// with its steps, items and payments.
func (s *Store) readClientOrder(db *gorm.DB, column, value string) (models.Order, error) {
	if s.dialect == DialectSQLite {
		return readOrderPerTable(db, column, value)
	}
	q, ok := pgClientOrderSQL[column]
	if !ok {
		return models.Order{}, fmt.Errorf("reading an order by %q: not a unique column", column)
	}
	// The hottest read of the service (every GET of an order) skips GORM's
	// query builder and reflective scan, which took a third of the API's
	// processor time per GET in a profile (the history of docs/benchmarks.md); it still
	// runs on db's connection or transaction and reports to its logger.
	ctx := db.Statement.Context
	begin := time.Now()
	var row clientOrderRow
	err := db.Statement.ConnPool.QueryRowContext(ctx, q, value).Scan(row.scanDest()...)
	db.Logger.Trace(ctx, begin, func() (string, int64) { return q, 1 }, err)
	if errors.Is(err, sql.ErrNoRows) {
		return models.Order{}, gorm.ErrRecordNotFound
	}
	if err != nil {
		return models.Order{}, err
	}
	return row.toModel()
}

// orderColumns are the orders table's columns in orderRow's field order
// (TestOrderColumnsMatchTheRow holds them to GORM's reading of the struct).
var orderColumns = []string{"id", "number", "account_id", "mode", "cart_id", "status", "payment_status", "status_reason",
	"customer_email", "ship_name", "ship_phone", "ship_line1", "ship_line2", "ship_city", "ship_region", "ship_postal_code",
	"ship_country", "currency", "total", "payment_asset", "payment_amount", "payment_address", "payment_memo",
	"payment_expires_at", "amount_received", "amount_refunded", "payment_network", "payment_asset_issuer", "payment_memo_type", "payment_uri",
	"rate_price", "rate_source", "rate_at", "refunded_at", "refund_tx", "refund_address", "refund_memo_type", "refund_memo",
	"refund_to_sender", "carrier", "tracking_number", "estimated_delivery",
	"supplier_budget", "supplier_ref", "fulfilment", "metadata", "cancellation_reason", "idempotency_key", "request_hash",
	"workflow_started_at", "created_at", "updated_at"}

// pgClientOrderSQL is the client's read of an order by each unique column.
var pgClientOrderSQL = func() map[string]string {
	cols := make([]string, len(orderColumns))
	for i, c := range orderColumns {
		cols[i] = "o." + c
	}
	q := map[string]string{}
	for _, by := range []string{"id", "number"} {
		q[by] = "SELECT " + strings.Join(cols, ", ") + ", " + pgStepsJSON + ", " + pgItemsJSON + ", " + pgPaymentsJSON +
			" FROM orders AS o WHERE o." + by + " = $1"
	}
	return q
}()

// PostgresOrderByIDSQL is the query OrderForAccount runs on Postgres for
// an order id ($1): the order's columns (orderColumns), then its steps,
// items and payments as JSON arrays. The load tool's reference server runs
// the same text, so the two read the same rows the same way.
func PostgresOrderByIDSQL() string { return pgClientOrderSQL["id"] }

// scanDest is where each column of pgClientOrderSQL's row goes.
func (r *clientOrderRow) scanDest() []any {
	o := &r.Row
	return []any{&o.ID, &o.Number, &o.AccountID, &o.Mode, &o.CartID, &o.Status, &o.PaymentStatus, &o.StatusReason,
		&o.CustomerEmail, &o.ShipName, &o.ShipPhone, &o.ShipLine1, &o.ShipLine2, &o.ShipCity, &o.ShipRegion, &o.ShipPostalCode,
		&o.ShipCountry, &o.Currency, &o.Total, &o.PaymentAsset, &o.PaymentAmount, &o.PaymentAddress, &o.PaymentMemo,
		&o.PaymentExpiresAt, &o.AmountReceived, &o.AmountRefunded, &o.PaymentNetwork, &o.PaymentAssetIssuer, &o.PaymentMemoType, &o.PaymentURI,
		&o.RatePrice, &o.RateSource, &o.RateAt, &o.RefundedAt, &o.RefundTx, &o.RefundAddress, &o.RefundMemoType, &o.RefundMemo,
		&o.RefundToSender, &o.Carrier, &o.TrackingNumber, &o.EstimatedDelivery,
		&o.SupplierBudget, &o.SupplierRef, &o.Fulfilment, &o.Metadata, &o.CancellationReason, &o.IdempotencyKey, &o.RequestHash,
		&o.WorkflowStartedAt, &o.CreatedAt, &o.UpdatedAt,
		&r.StepsJSON, &r.ItemsJSON, &r.PaymentsJSON}
}

// readOrderPerTable is readClientOrder with one query per table.
func readOrderPerTable(db *gorm.DB, column, value string) (models.Order, error) {
	var row orderRow
	if err := db.Where(column+" = ?", value).Take(&row).Error; err != nil {
		return models.Order{}, err
	}
	o, err := orderTx(db, row)
	if err != nil {
		return o, err
	}
	q := db.Where("order_id = ?", o.ID)
	if o.Status == models.OrderCreated {
		q = q.Or("status = ? AND order_id IS NULL AND memo = ? AND mode = ?", PaymentReceived, o.Number, string(o.Mode))
	}
	var rows []paymentRow
	if err := q.Order("received_at, id").Find(&rows).Error; err != nil {
		return models.Order{}, fmt.Errorf("reading order payments: %w", err)
	}
	for _, r := range rows {
		o.Payments = append(o.Payments, orderPaymentOf(r))
	}
	o.PendingCredit = models.PendingCreditOf(o)
	return o, nil
}

// orderPaymentOf is a stored payment as its order's reader sees it.
func orderPaymentOf(r paymentRow) models.OrderPayment {
	return models.OrderPayment{
		ID: r.ID, Asset: r.Asset, Amount: r.Amount, TxHash: r.TxHash, ReceivedAt: utc(r.ReceivedAt),
		Outcome: disposition(r.Status, r.SignaledAt != nil), RefundedAt: utcPtr(r.RefundedAt), RefundTx: r.RefundTx,
	}
}

// disposition is what a client reads of a stored payment's status.
func disposition(status string, signaled bool) models.PaymentDisposition {
	switch status {
	case PaymentMatched:
		if signaled {
			return models.DispositionCredited
		}
		return models.DispositionProcessing
	case PaymentRefundDue:
		return models.DispositionWrongAsset
	case PaymentLate:
		return models.DispositionLate
	case PaymentRefunded:
		return models.DispositionRefunded
	default: // received: not through the matcher yet
		return models.DispositionProcessing
	}
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

type paymentJSON struct {
	ID         string  `json:"id"`
	Asset      string  `json:"asset"`
	Amount     string  `json:"amount"`
	TxHash     string  `json:"tx_hash"`
	ReceivedAt string  `json:"received_at"`
	Status     string  `json:"status"`
	Signaled   bool    `json:"signaled"`
	RefundedAt *string `json:"refunded_at"`
	RefundTx   string  `json:"refund_tx"`
}

// stepTimeLayouts are how the two databases write a step's time in the
// aggregates: Postgres as formatted above, SQLite as its driver stored it.
var stepTimeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05"}

func (r clientOrderRow) toModel() (models.Order, error) {
	var (
		js  []stepJSON
		ijs []itemJSON
		pjs []paymentJSON
	)
	for _, a := range []struct {
		raw string
		dst any
	}{{r.StepsJSON, &js}, {r.ItemsJSON, &ijs}, {r.PaymentsJSON, &pjs}} {
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
		items[i] = models.CartItem{ProductURL: it.ProductURL, Marketplace: models.Marketplace(it.Marketplace), ProductID: it.ProductID,
			Title: it.Title, ImageURL: it.ImageURL, Quantity: it.Quantity, UnitPrice: unit, LineTotal: line, Currency: it.Currency,
			UpstreamID: it.UpstreamID, Variation: it.Variation, Listing: it.Listing}
	}
	o := r.Row.toModel(steps, items)
	for _, p := range pjs {
		amount, err := decimal.NewFromString(p.Amount)
		if err != nil {
			return models.Order{}, fmt.Errorf("reading order %s payment %s amount %q: %w", r.Row.ID, p.ID, p.Amount, err)
		}
		received, err := parseStepTime(p.ReceivedAt)
		if err != nil {
			return models.Order{}, fmt.Errorf("reading order %s payment %s: %w", r.Row.ID, p.ID, err)
		}
		var refunded *time.Time
		if p.RefundedAt != nil {
			at, err := parseStepTime(*p.RefundedAt)
			if err != nil {
				return models.Order{}, fmt.Errorf("reading order %s payment %s refund: %w", r.Row.ID, p.ID, err)
			}
			refunded = &at
		}
		o.Payments = append(o.Payments, models.OrderPayment{
			ID: p.ID, Asset: p.Asset, Amount: amount, TxHash: p.TxHash, ReceivedAt: received,
			Outcome: disposition(p.Status, p.Signaled), RefundedAt: refunded, RefundTx: p.RefundTx,
		})
	}
	o.PendingCredit = models.PendingCreditOf(o)
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
