package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

type orderRow struct {
	ID                 string
	Number             string
	AccountID          string
	Mode               string
	CartID             string
	Status             string
	PaymentStatus      string
	StatusReason       string
	CustomerEmail      string
	ShipName           string
	ShipPhone          string
	ShipLine1          string
	ShipLine2          string
	ShipCity           string
	ShipRegion         string
	ShipPostalCode     string
	ShipCountry        string
	Currency           string
	Total              decimal.Decimal
	PaymentAsset       string
	PaymentAmount      decimal.Decimal
	PaymentAddress     string
	PaymentMemo        string
	PaymentExpiresAt   time.Time
	AmountReceived     decimal.Decimal
	AmountRefunded     decimal.Decimal
	PaymentNetwork     string
	PaymentAssetIssuer string
	PaymentMemoType    string
	PaymentURI         string `gorm:"column:payment_uri"`
	RatePrice          decimal.NullDecimal
	RateSource         string
	RateAt             *time.Time
	RefundedAt         *time.Time
	RefundTx           string
	RefundAddress      string // models.Order.RefundDestination: see refundDestinationOf
	RefundMemoType     string
	RefundMemo         string
	RefundToSender     bool
	Carrier            string
	TrackingNumber     string
	EstimatedDelivery  string
	SupplierBudget     decimal.Decimal
	SupplierRef        string
	Fulfilment         string // JSON of models.Fulfilment; empty until placed
	Metadata           string // metadataText
	CancellationReason string
	IdempotencyKey     *string
	RequestHash        string
	WorkflowStartedAt  *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func (orderRow) TableName() string { return "orders" }

type orderStepRow struct {
	OrderID   string
	Name      string
	ReachedAt time.Time
}

func (orderStepRow) TableName() string { return "order_steps" }

func newOrderRow(o models.Order) orderRow {
	a := o.Address
	row := orderRow{
		ID: o.ID, Number: o.Number, AccountID: o.AccountID, Mode: string(o.Mode), CartID: o.CartID,
		Status: string(o.Status), PaymentStatus: string(o.PaymentStatus), CustomerEmail: o.CustomerEmail,
		ShipName: a.Name, ShipPhone: a.Phone, ShipLine1: a.Line1, ShipLine2: a.Line2, ShipCity: a.City,
		ShipRegion: a.Region, ShipPostalCode: a.PostalCode, ShipCountry: a.Country,
		Currency: o.Currency, Total: o.Total, PaymentAsset: o.PaymentAsset, PaymentAmount: o.PaymentAmount,
		PaymentAddress: o.PaymentAddress, PaymentMemo: o.PaymentMemo, PaymentExpiresAt: o.PaymentExpiresAt.UTC(),
		AmountReceived: o.AmountReceived, Carrier: o.Shipment.Carrier, TrackingNumber: o.Shipment.TrackingNumber,
		PaymentNetwork: o.PaymentNetwork, PaymentAssetIssuer: o.PaymentAssetIssuer, PaymentMemoType: o.PaymentMemoType,
		PaymentURI: o.PaymentURI, RatePrice: decimal.NullDecimal{Decimal: o.RatePrice, Valid: !o.RatePrice.IsZero()},
		RateSource: o.RateSource, RateAt: o.RateAt, SupplierBudget: o.SupplierBudget, StatusReason: o.StatusReason,
		EstimatedDelivery: o.Shipment.EstimatedDelivery, CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(),
		Metadata: metadataText(o.Metadata),
	}
	if d := o.RefundDestination; d != nil {
		row.RefundAddress, row.RefundMemoType, row.RefundMemo, row.RefundToSender = d.Address, d.MemoType, d.Memo, d.ToSender
	}
	return row
}

func (r orderRow) toModel(steps []orderStepRow, items []models.CartItem) models.Order {
	o := models.Order{
		ID: r.ID, Number: r.Number, AccountID: r.AccountID, Mode: models.Mode(r.Mode), CartID: r.CartID,
		Status: models.OrderStatus(r.Status), PaymentStatus: models.PaymentStatus(r.PaymentStatus),
		CustomerEmail: r.CustomerEmail,
		Address: models.ShippingAddress{
			Name: r.ShipName, Phone: r.ShipPhone, Line1: r.ShipLine1, Line2: r.ShipLine2, City: r.ShipCity,
			Region: r.ShipRegion, PostalCode: r.ShipPostalCode, Country: r.ShipCountry,
		},
		Currency: r.Currency, Total: r.Total, PaymentAsset: r.PaymentAsset, PaymentAmount: r.PaymentAmount,
		PaymentAddress: r.PaymentAddress, PaymentMemo: r.PaymentMemo, PaymentExpiresAt: utc(r.PaymentExpiresAt),
		AmountReceived: r.AmountReceived, AmountRefunded: r.AmountRefunded, Items: items,
		PaymentNetwork: r.PaymentNetwork, PaymentAssetIssuer: r.PaymentAssetIssuer, PaymentMemoType: r.PaymentMemoType,
		PaymentURI: r.PaymentURI, RatePrice: r.RatePrice.Decimal, RateSource: r.RateSource,
		RateAt: utcPtr(r.RateAt), RefundedAt: utcPtr(r.RefundedAt), RefundTx: r.RefundTx,
		SupplierBudget: r.SupplierBudget, StatusReason: r.StatusReason,
		Shipment:  models.Shipment{Carrier: r.Carrier, TrackingNumber: r.TrackingNumber, EstimatedDelivery: r.EstimatedDelivery},
		Steps:     make(map[models.OrderStatus]time.Time, len(steps)),
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt),
		Metadata: metadataMap(r.Metadata), Cancellation: models.CancellationReason(r.CancellationReason),
		RefundDestination: refundDestinationOf(r.RefundAddress, r.RefundMemoType, r.RefundMemo, r.RefundToSender),
	}
	if r.Fulfilment != "" {
		// Written only by RecordFulfilment from a models.Fulfilment: a
		// document that does not decode is a bug, shown as no snapshot
		// rather than failing every read of the order.
		var f models.Fulfilment
		if err := json.Unmarshal([]byte(r.Fulfilment), &f); err == nil {
			o.Fulfilment = &f
		}
	}
	if r.WorkflowStartedAt != nil {
		t := utc(*r.WorkflowStartedAt)
		o.WorkflowStartedAt = &t
	}
	for _, s := range steps {
		o.Steps[models.OrderStatus(s.Name)] = utc(s.ReachedAt)
	}
	return o
}

// CreateOrder creates the order for a cart, exactly once. Inside one
// transaction it takes the cart's row lock, then:
//   - the same idempotency key with the same request returns the existing
//     order; with a different request, CodeIdempotencyMismatch;
//   - a cart that already has an order returns that order when the request
//     is the same (a retry without a key), else CodeCartAlreadyOrdered;
//   - a missing, foreign or expired cart is ErrCartNotFound;
//   - otherwise the order, its created step, and the cart's new status are
//     written together.
//
// created reports whether this call made the order.
func (s *Store) CreateOrder(ctx context.Context, req models.OrderRequest) (order models.Order, created bool, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		order, created, err = s.createOrderOnce(ctx, req)
		if !errors.Is(err, errNumberTaken) {
			if created {
				s.observeEntered(models.OrderCreated)
			}
			return order, created, err
		}
	}
	return models.Order{}, false, fmt.Errorf("could not mint a free order number: %w", err)
}

var errNumberTaken = errors.New("order number taken")

// createOrderOnce is one attempt of CreateOrder: one transaction that
// decides every case and records the new order's webhook events. It is the
// only creation path, on both dialects: sending its statements in fewer
// round trips on Postgres saved 1-2 ms of CPU per POST and no throughput
// (the history of docs/benchmarks.md), too little for a second place deciding the cases.
// It returns errNumberTaken, having rolled back, when the minted number
// was taken.
func (s *Store) createOrderOnce(ctx context.Context, req models.OrderRequest) (models.Order, bool, error) {
	var (
		out     models.Order
		created bool
		events  int
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if req.IdempotencyKey != "" {
			prior, found, err := priorOrder(tx, req.RequestHash, models.CodeIdempotencyMismatch,
				"account_id = ? AND mode = ? AND idempotency_key = ?", req.AccountID, string(req.Mode), req.IdempotencyKey)
			if found || err != nil {
				out = prior
				return err
			}
		}
		// Lock the cart row: a concurrent request for the same cart waits
		// here and then finds the order this one makes.
		var cr cartRow
		err := s.forUpdate(tx).Where("id = ? AND account_id = ? AND mode = ?", req.CartID, req.AccountID, string(req.Mode)).Take(&cr).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.ErrCartNotFound
		}
		if err != nil {
			return err
		}
		prior, found, err := priorOrder(tx, req.RequestHash, models.CodeCartAlreadyOrdered, "cart_id = ?", req.CartID)
		if found || err != nil {
			out = prior
			return err
		}
		cart, err := cartWithItems(tx, cr) // the row just locked
		if err != nil {
			return err
		}
		if !cart.Usable(req.Now) {
			return models.ErrCartNotFound
		}
		o, err := req.Build(cart)
		if err != nil {
			return err
		}
		if o.Number, err = req.NewNumber(); err != nil {
			return err
		}
		o.PaymentMemo = o.Number
		row := newOrderRow(o)
		row.RequestHash = req.RequestHash
		if req.IdempotencyKey != "" {
			row.IdempotencyKey = &req.IdempotencyKey
		}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return errNumberTaken
			}
			return err
		}
		if err := tx.Create(&orderStepRow{OrderID: o.ID, Name: string(models.OrderCreated), ReachedAt: o.CreatedAt.UTC()}).Error; err != nil {
			return err
		}
		if err := tx.Model(&cartRow{}).Where("id = ?", cart.ID).Update("status", string(models.CartOrdered)).Error; err != nil {
			return err
		}
		if events, err = s.recordEvents(tx, o.CreatedAt, o.AccountID, o.Mode, o.ID, eventSpec{typ: models.EventOrderCreated, key: o.ID, at: o.CreatedAt}); err != nil {
			return err
		}
		out, created = row.toModel([]orderStepRow{{OrderID: o.ID, Name: string(models.OrderCreated), ReachedAt: o.CreatedAt}}, cart.Items), true
		return nil
	})
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) || errors.Is(err, errNumberTaken) {
			return models.Order{}, false, err
		}
		return models.Order{}, false, fmt.Errorf("creating order: %w", err)
	}
	if created && req.EventsRecorded != nil {
		req.EventsRecorded(events)
	}
	return out, created, nil
}

// priorOrder reads the order an earlier request made, where query finds
// it, and reports whether there is one: the same request again (hash)
// gets that order back, another one is refused with mismatch.
func priorOrder(tx *gorm.DB, hash string, mismatch models.Code, query string, args ...any) (models.Order, bool, error) {
	var prior orderRow
	err := tx.Where(query, args...).Take(&prior).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Order{}, false, nil
	}
	if err != nil {
		return models.Order{}, false, err
	}
	if prior.RequestHash != hash {
		return models.Order{}, true, models.NewError(mismatch)
	}
	o, err := orderTx(tx, prior)
	return o, true, err
}

// orderTx loads an order's steps and items to complete a row.
func orderTx(db *gorm.DB, row orderRow) (models.Order, error) {
	var steps []orderStepRow
	if err := db.Where("order_id = ?", row.ID).Find(&steps).Error; err != nil {
		return models.Order{}, fmt.Errorf("reading order steps: %w", err)
	}
	var items []cartItemRow
	if err := db.Where("cart_id = ?", row.CartID).Order("position").Find(&items).Error; err != nil {
		return models.Order{}, fmt.Errorf("reading order items: %w", err)
	}
	out := make([]models.CartItem, len(items))
	for i, it := range items {
		out[i] = it.CartItem
	}
	return row.toModel(steps, out), nil
}

// OrderForAccount returns an order by id or number if it belongs to the
// account and mode, else models.ErrOrderNotFound.
//
// The reference is resolved by its shape into one exact match on one
// unique column (an id starts with ord_, a number is digits), and the
// account and mode are checked on the row read, so the plan is a lookup in
// that column's unique index whatever the planner's statistics. With the
// account in the WHERE clause, Postgres without statistics preferred the
// (account_id, mode, created_at) index and filtered the account's orders
// one by one (TestOrderLookupIsAnIndexLookup).
func (s *Store) OrderForAccount(ctx context.Context, accountID string, mode models.Mode, idOrNumber string) (models.Order, error) {
	column, value := orderLookup(idOrNumber)
	o, err := s.readClientOrder(s.db.WithContext(ctx), column, value)
	if err == nil && (o.AccountID != accountID || o.Mode != mode) {
		// Another account's or mode's order does not exist for this key.
		err = gorm.ErrRecordNotFound
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Order{}, models.ErrOrderNotFound
	}
	if err != nil {
		return models.Order{}, fmt.Errorf("reading order: %w", err)
	}
	return o, nil
}

// orderLookup is the unique column OrderForAccount looks a reference up in.
func orderLookup(idOrNumber string) (column, value string) {
	if strings.HasPrefix(idOrNumber, "ord_") {
		return "id", idOrNumber
	}
	return "number", idOrNumber
}

// OrderLookupPlan returns the database's plan (EXPLAIN, without costs) for
// OrderForAccount's query, built by the same code: tests and operators
// check that it stays an index lookup. Postgres only.
func (s *Store) OrderLookupPlan(ctx context.Context, idOrNumber string) (string, error) {
	if s.dialect != DialectPostgres {
		return "", fmt.Errorf("query plans are read on Postgres only")
	}
	column, value := orderLookup(idOrNumber)
	var lines []string
	if err := s.db.WithContext(ctx).Raw("EXPLAIN (COSTS OFF) "+pgClientOrderSQL[column], value).Scan(&lines).Error; err != nil {
		return "", fmt.Errorf("explaining the order lookup: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}

// OrderByNumber returns an order by number in any account, for the public
// tracking page (which shows no personal data).
func (s *Store) OrderByNumber(ctx context.Context, number string) (models.Order, error) {
	o, err := s.readClientOrder(s.db.WithContext(ctx), "number", number)
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Order{}, models.ErrOrderNotFound
	}
	if err != nil {
		return models.Order{}, fmt.Errorf("reading order: %w", err)
	}
	return o, nil
}

// Order returns an order by id, for the workflow's activities.
func (s *Store) Order(ctx context.Context, id string) (models.Order, error) {
	db := s.db.WithContext(ctx)
	row, err := take[orderRow](db.Where("id = ?", id), models.ErrOrderNotFound, "order")
	if err != nil {
		return models.Order{}, err
	}
	return orderTx(db, row)
}

// MarkWorkflowsStarted records that the orders' workflows exist, in one
// statement. An order already marked keeps its first mark.
func (s *Store) MarkWorkflowsStarted(ctx context.Context, orderIDs []string, at time.Time) error {
	if len(orderIDs) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Model(&orderRow{}).
		Where("id IN ? AND workflow_started_at IS NULL", orderIDs).
		Update("workflow_started_at", at.UTC()).Error
	if err != nil {
		return fmt.Errorf("marking workflow started: %w", err)
	}
	return nil
}

// OrdersAwaitingWorkflow returns orders created before the cutoff whose
// workflow is not known to exist: the process died between committing the
// order and starting its workflow, or Temporal was down.
func (s *Store) OrdersAwaitingWorkflow(ctx context.Context, createdBefore time.Time, limit int) ([]models.Order, error) {
	var rows []orderRow
	err := s.db.WithContext(ctx).Where("workflow_started_at IS NULL AND created_at < ?", createdBefore.UTC()).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing orders awaiting workflow: %w", err)
	}
	out := make([]models.Order, len(rows))
	for i, r := range rows {
		out[i] = r.toModel(nil, nil)
	}
	return out, nil
}

// RecordTransition writes one step of workflow progress. It is idempotent
// and tolerant of reordering between the workflow's payment and
// fulfilment activities: the status only moves forward along
// models.CanTransition, a step keeps its first timestamp, and payment
// fields only move towards more money received.
func (s *Store) RecordTransition(ctx context.Context, orderID string, t models.Transition, now time.Time) error {
	var entered models.OrderStatus
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		entered = ""
		var row orderRow
		if err := s.forUpdate(tx).Where("id = ?", orderID).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.ErrOrderNotFound
			}
			return err
		}
		eff := models.ApplyTransition(models.OrderStatus(row.Status), row.AmountReceived, t)
		entered = eff.Status
		if eff.Changes() {
			updates := map[string]any{"updated_at": now.UTC()}
			if eff.Status != "" {
				updates["status"] = string(eff.Status)
				if eff.Reason != "" {
					updates["status_reason"] = eff.Reason
				}
				if eff.Cancellation != "" {
					updates["cancellation_reason"] = string(eff.Cancellation)
				}
			}
			if eff.Payment {
				updates["payment_status"] = string(t.PaymentStatus)
				updates["amount_received"] = t.AmountReceived
			}
			if eff.Shipment != nil {
				updates["carrier"] = eff.Shipment.Carrier
				updates["tracking_number"] = eff.Shipment.TrackingNumber
				updates["estimated_delivery"] = eff.Shipment.EstimatedDelivery
			}
			if err := tx.Model(&orderRow{}).Where("id = ?", orderID).Updates(updates).Error; err != nil {
				return err
			}
		}
		if eff.Step {
			step := orderStepRow{OrderID: orderID, Name: string(t.Status), ReachedAt: t.At.UTC()}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&step).Error; err != nil {
				return err
			}
		}
		_, err := s.recordEvents(tx, now, row.AccountID, models.Mode(row.Mode), orderID, transitionEvents(orderID, row.AmountReceived, t, eff)...)
		return err
	})
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) {
			return err
		}
		return fmt.Errorf("recording transition to %s: %w", t.Status, err)
	}
	if entered != "" {
		s.observeEntered(entered)
	}
	return nil
}

// OrderIDBySupplierRef returns the id of the order placed with a buying
// provider under ref, or models.ErrOrderNotFound.
func (s *Store) OrderIDBySupplierRef(ctx context.Context, ref string) (string, error) {
	var ids []string
	if err := s.db.WithContext(ctx).Model(&orderRow{}).Where("supplier_ref = ?", ref).Limit(1).Pluck("id", &ids).Error; err != nil {
		return "", fmt.Errorf("finding order by supplier reference: %w", err)
	}
	if len(ids) == 0 {
		return "", models.ErrOrderNotFound
	}
	return ids[0], nil
}

// RecordFulfilment stores the latest snapshot of the order at its buying
// provider. Snapshots come from the workflow's checks one at a time, so the
// last write is the newest.
func (s *Store) RecordFulfilment(ctx context.Context, orderID string, f models.Fulfilment, now time.Time) error {
	doc, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding fulfilment: %w", err)
	}
	res := s.db.WithContext(ctx).Model(&orderRow{}).Where("id = ?", orderID).
		Updates(map[string]any{"supplier_ref": f.Ref, "fulfilment": string(doc), "updated_at": now.UTC()})
	if res.Error != nil {
		return fmt.Errorf("recording fulfilment: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return models.ErrOrderNotFound
	}
	return nil
}

// SetOrderRefundDestination sets where money the order owes back goes
// (nil: nowhere said), for the refunds created for it from then on;
// refunds already created keep theirs. Another account's or mode's order
// is models.ErrOrderNotFound. d is stored as given: the caller validates
// it (models.ValidateRefundDestination).
func (s *Store) SetOrderRefundDestination(ctx context.Context, accountID string, mode models.Mode, orderID string, d *models.RefundDestination, now time.Time) error {
	var dest models.RefundDestination
	if d != nil {
		dest = *d
	}
	res := s.db.WithContext(ctx).Model(&orderRow{}).
		Where("id = ? AND account_id = ? AND mode = ?", orderID, accountID, string(mode)).
		Updates(map[string]any{
			"refund_address": dest.Address, "refund_memo_type": dest.MemoType, "refund_memo": dest.Memo,
			"refund_to_sender": dest.ToSender, "updated_at": now.UTC(),
		})
	if res.Error != nil {
		return fmt.Errorf("setting the order's refund destination: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return models.ErrOrderNotFound
	}
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
