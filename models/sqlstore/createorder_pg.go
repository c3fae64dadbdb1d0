package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm/schema"

	"github.com/memocart/memocart/models"
)

// Creating an order on Postgres in two round trips.
//
// The general transaction (createOrderGeneral) sends its ten or so
// statements one after another, each waiting for the one before. On a
// loaded machine every one of those round trips waits for a core too, and
// they were most of a POST's own latency (docs/benchmarks.md, issue 9). On
// Postgres the common case (a usable cart of the account with no order
// yet, an Idempotency-Key no order has used, no webhook endpoint that
// wants order.created) sends the same statements in two pgx pipelines on
// one connection:
//
//  1. BEGIN, lock the cart row, then (after the lock, each statement with
//     its own snapshot, as in the general transaction) whether the cart or
//     the key already has an order, the cart's items and the account's
//     webhook subscriptions;
//  2. insert the order and its created step, mark the cart ordered, COMMIT.
//
// Every other case rolls back and is decided by the general transaction
// exactly as before: replays, conflicts, missing or expired carts and
// orders that record a webhook event are rare next to new orders, and one
// extra round trip there keeps a single place where they are decided.
// SQLite is in process and has no round trip to save.

// errNotCommon ends the pipelined attempt: the general transaction decides.
var errNotCommon = errors.New("not the common case of a new order")

// createOrderPipelined creates the order of req if it is the common case.
// It returns errNotCommon, having rolled back, when it is not, and
// errNumberTaken when the minted number was taken.
func (s *Store) createOrderPipelined(ctx context.Context, req models.OrderRequest) (models.Order, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return models.Order{}, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return models.Order{}, err
	}
	defer conn.Close()
	var out models.Order
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNotCommon // not pgx: nothing to pipeline
		}
		pc := sc.Conn()
		var err error
		out, err = s.pipelinedCreate(ctx, pc, req)
		if pc.IsClosed() || pc.PgConn().TxStatus() != 'I' {
			// A transaction left open or failed (a cancelled context cuts
			// a pipeline mid-way): the connection must not go back to the
			// pool in it.
			return errors.Join(err, driver.ErrBadConn)
		}
		return err
	})
	return out, err
}

func (s *Store) pipelinedCreate(ctx context.Context, pc *pgx.Conn, req models.OrderRequest) (models.Order, error) {
	begin := time.Now()
	cr, items, err := s.pipelinedReads(ctx, pc, req)
	traced := err
	if errors.Is(err, errNotCommon) {
		traced = nil // a decision, not a failure
	}
	s.db.Logger.Trace(ctx, begin, func() (string, int64) { return "create order: the reads' pipeline (" + pgCartSQL + "; ...)", 1 }, traced)
	if err != nil {
		return models.Order{}, s.rollback(ctx, pc, err)
	}
	cart := cr.toModel(items)
	if !cart.Usable(req.Now) {
		return models.Order{}, s.rollback(ctx, pc, errNotCommon)
	}
	o, err := req.Build(cart)
	if err != nil {
		return models.Order{}, s.rollback(ctx, pc, err)
	}
	if o.Number, err = req.NewNumber(); err != nil {
		return models.Order{}, s.rollback(ctx, pc, err)
	}
	o.PaymentMemo = o.Number
	row := newOrderRow(o)
	row.RequestHash = req.RequestHash
	if req.IdempotencyKey != "" {
		row.IdempotencyKey = &req.IdempotencyKey
	}
	step := orderStepRow{OrderID: o.ID, Name: string(models.OrderCreated), ReachedAt: o.CreatedAt.UTC()}

	begin = time.Now()
	b := &pgx.Batch{}
	b.Queue(pgInsertOrderSQL, fieldValues(&row)...)
	b.Queue(pgInsertStepSQL, fieldValues(&step)...)
	b.Queue(`UPDATE carts SET status = $1 WHERE id = $2`, string(models.CartOrdered), cart.ID)
	b.Queue(`COMMIT`)
	err = pc.SendBatch(ctx, b).Close()
	s.db.Logger.Trace(ctx, begin, func() (string, int64) {
		return "create order: the writes' pipeline (" + pgInsertOrderSQL + "; ...; COMMIT)", 1
	}, err)
	if err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" {
			// The number (the one unique value not decided under the
			// cart's lock) or, in a race the Idempotency-Key middleware
			// keeps out, the key: the retry decides, as in the general
			// transaction.
			err = errNumberTaken
		}
		return models.Order{}, s.rollback(ctx, pc, err)
	}
	return row.toModel([]orderStepRow{step}, cart.Items), nil
}

// pipelinedReads sends the first pipeline and returns the locked cart and
// its items, or errNotCommon.
func (s *Store) pipelinedReads(ctx context.Context, pc *pgx.Conn, req models.OrderRequest) (cartRow, []cartItemRow, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(pgCartSQL, req.CartID, req.AccountID, string(req.Mode))
	b.Queue(`SELECT EXISTS (SELECT 1 FROM orders WHERE cart_id = $1)
		OR EXISTS (SELECT 1 FROM orders WHERE $4 <> '' AND account_id = $2 AND mode = $3 AND idempotency_key = $4)`,
		req.CartID, req.AccountID, string(req.Mode), req.IdempotencyKey)
	b.Queue(pgCartItemsSQL, req.CartID)
	b.Queue(pgSubscriptionsSQL, req.AccountID, string(req.Mode))
	br := pc.SendBatch(ctx, b)
	cr, items, err := readPipelinedReads(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cartRow{}, nil, err
	}
	return cr, items, nil
}

func readPipelinedReads(br pgx.BatchResults) (cartRow, []cartItemRow, error) {
	if _, err := br.Exec(); err != nil {
		return cartRow{}, nil, err
	}
	var cr cartRow
	if err := br.QueryRow().Scan(fieldPtrs(&cr)...); errors.Is(err, pgx.ErrNoRows) {
		return cartRow{}, nil, errNotCommon // no such cart for this account: the general path answers
	} else if err != nil {
		return cartRow{}, nil, err
	}
	var taken bool
	if err := br.QueryRow().Scan(&taken); err != nil {
		return cartRow{}, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return cartRow{}, nil, err
	}
	var items []cartItemRow
	for rows.Next() {
		var it cartItemRow
		if err := rows.Scan(fieldPtrs(&it)...); err != nil {
			rows.Close()
			return cartRow{}, nil, err
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return cartRow{}, nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return cartRow{}, nil, err
	}
	subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return cartRow{}, nil, err
	}
	if taken || len(wantedSpecs(subs, []eventSpec{{typ: models.EventOrderCreated}})) > 0 {
		return cartRow{}, nil, errNotCommon
	}
	return cr, items, nil
}

// rollback ends the transaction pc holds after cause and returns cause.
// If the rollback fails, the connection is closed: createOrderPipelined
// then drops it from the pool.
func (s *Store) rollback(ctx context.Context, pc *pgx.Conn, cause error) error {
	if pc.IsClosed() || pc.PgConn().TxStatus() == 'I' {
		return cause
	}
	// Cancelled or not, the caller's context must not keep the
	// transaction open: the rollback has its own short deadline.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := pc.Exec(rctx, "ROLLBACK"); err != nil {
		_ = pc.Close(rctx)
		return errors.Join(cause, fmt.Errorf("rolling back: %w", err))
	}
	return cause
}

// The pipelined path's statements. Their column lists come from the row
// structs (every field of which is a column, in order:
// TestPipelinedRowsAreColumns), so they follow the structs.
var (
	pgCartSQL = "SELECT " + strings.Join(rowColumns(&cartRow{}), ", ") +
		" FROM carts WHERE id = $1 AND account_id = $2 AND mode = $3 FOR UPDATE"
	pgCartItemsSQL = "SELECT " + strings.Join(rowColumns(&cartItemRow{}), ", ") +
		" FROM cart_items WHERE cart_id = $1 ORDER BY position"
	pgSubscriptionsSQL = `SELECT enabled_events FROM webhook_endpoints
		WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL AND disabled_at IS NULL`
	pgInsertOrderSQL = insertSQL("orders", rowColumns(&orderRow{}))
	pgInsertStepSQL  = insertSQL("order_steps", rowColumns(&orderStepRow{}))
)

func insertSQL(table string, cols []string) string {
	ps := make([]string, len(cols))
	for i := range cols {
		ps[i] = "$" + strconv.Itoa(i+1)
	}
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(ps, ", ") + ")"
}

var rowSchemas sync.Map

// rowColumns is the columns of a row struct as GORM names them, in field
// order.
func rowColumns(row any) []string {
	s, err := schema.Parse(row, &rowSchemas, schema.NamingStrategy{})
	if err != nil {
		panic(fmt.Sprintf("reading the columns of %T: %v", row, err))
	}
	cols := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		cols[i] = f.DBName
	}
	return cols
}

// fieldPtrs is a pointer to each field of the struct row points to.
func fieldPtrs(row any) []any {
	v := reflect.ValueOf(row).Elem()
	out := make([]any, v.NumField())
	for i := range out {
		out[i] = v.Field(i).Addr().Interface()
	}
	return out
}

// fieldValues is each field's value of the struct row points to.
func fieldValues(row any) []any {
	v := reflect.ValueOf(row).Elem()
	out := make([]any, v.NumField())
	for i := range out {
		out[i] = v.Field(i).Interface()
	}
	return out
}
