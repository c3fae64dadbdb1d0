package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// ListOrders returns a page of orders as clients read them (with steps
// and payments; without items, which no order listing shows) and whether
// more orders follow it.
//
// The page is one range read of orders_list_idx (account_id, mode,
// created_at DESC, id DESC), or of orders_list_status_idx with a status:
// the rows come out of the index in the order the page returns them, past
// the cursor, so no sort and at most Limit+1 rows read whatever the
// account's size (TestOrderListIsAnIndexRangeRead). On Postgres the steps
// and payments of those rows come in the same query; on SQLite, with one
// query per table for the whole page.
func (s *Store) ListOrders(ctx context.Context, q models.OrderListQuery) ([]models.Order, bool, error) {
	db := s.db.WithContext(ctx)
	var (
		orders []models.Order
		err    error
	)
	if s.dialect == DialectSQLite {
		orders, err = listOrdersPerTable(db, q)
	} else {
		orders, err = listOrdersPostgres(db, q)
	}
	if err != nil {
		return nil, false, fmt.Errorf("listing orders: %w", err)
	}
	return keysetPage(db, &orderRow{}, orders, q.StartingAfter, q.AccountID, q.Mode, q.Limit, models.ErrOrderNotFound)
}

// keysetPage ends a keyset page read as up to limit+1 rows past cursor:
// it trims rows to the page and reports whether more follow. A cursor
// that names no row of model in the account's mode reads as an empty page
// in SQL; only then is it worth a second query to tell, and such a cursor
// is notFound.
func keysetPage[T any](db *gorm.DB, model any, rows []T, cursor, accountID string, mode models.Mode, limit int, notFound error) ([]T, bool, error) {
	if len(rows) == 0 && cursor != "" {
		var n int64
		err := db.Model(model).Where("id = ? AND account_id = ? AND mode = ?", cursor, accountID, string(mode)).Count(&n).Error
		if err != nil {
			return nil, false, fmt.Errorf("reading the list cursor: %w", err)
		}
		if n == 0 {
			return nil, false, notFound
		}
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// listScope is the page's WHERE, ORDER BY and LIMIT: one more row than
// the page, to know whether another page follows.
func listScope(db *gorm.DB, q models.OrderListQuery) *gorm.DB {
	tx := db.Table("orders AS o").Where("o.account_id = ? AND o.mode = ?", q.AccountID, string(q.Mode))
	if q.Status != "" {
		tx = tx.Where("o.status = ?", string(q.Status))
	}
	tx = createdBetween(tx, "o", q.CreatedGTE, q.CreatedLTE)
	return newestFirstAfter(tx, "orders", "o", q.StartingAfter, q.AccountID, q.Mode, q.Limit)
}

// createdBetween narrows tx to the rows of alias created within a list's
// optional bounds, both inclusive.
func createdBetween(tx *gorm.DB, alias string, gte, lte *time.Time) *gorm.DB {
	if gte != nil {
		tx = tx.Where(alias+".created_at >= ?", gte.UTC())
	}
	if lte != nil {
		tx = tx.Where(alias+".created_at <= ?", lte.UTC())
	}
	return tx
}

// newestFirstAfter orders tx's rows of table (as alias) newest first,
// by (created_at, id), strictly after the cursor row of the same account
// and mode when there is one (keyset pagination, read from the cursor's
// own row), and reads one more row than the page, to know whether
// another page follows.
func newestFirstAfter(tx *gorm.DB, table, alias, cursor, accountID string, mode models.Mode, limit int) *gorm.DB {
	if cursor != "" {
		tx = tx.Where("("+alias+".created_at, "+alias+".id) < (SELECT c.created_at, c.id FROM "+table+" c WHERE c.id = ? AND c.account_id = ? AND c.mode = ?)",
			cursor, accountID, string(mode))
	}
	return tx.Order(alias + ".created_at DESC, " + alias + ".id DESC").Limit(limit + 1)
}

const pgListSelect = "o.*, " + pgStepsJSON + ", '[]' AS items_json, " + pgPaymentsJSON

func listOrdersPostgres(db *gorm.DB, q models.OrderListQuery) ([]models.Order, error) {
	var rows []clientOrderRow
	if err := listScope(db, q).Select(pgListSelect).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]models.Order, len(rows))
	for i, r := range rows {
		o, err := r.toModel()
		if err != nil {
			return nil, err
		}
		o.Items = nil
		out[i] = o
	}
	return out, nil
}

// listOrdersPerTable is listOrdersPostgres with one query per table.
func listOrdersPerTable(db *gorm.DB, q models.OrderListQuery) ([]models.Order, error) {
	var rows []orderRow
	if err := listScope(db, q).Select("o.*").Find(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, len(rows))
	byNumber := map[string]string{} // orders awaiting payment: number → id
	for i, r := range rows {
		ids[i] = r.ID
		if r.Status == string(models.OrderCreated) {
			byNumber[r.Number] = r.ID
		}
	}
	var steps []orderStepRow
	if err := db.Where("order_id IN ?", ids).Find(&steps).Error; err != nil {
		return nil, fmt.Errorf("reading steps: %w", err)
	}
	stepsOf := map[string][]orderStepRow{}
	for _, st := range steps {
		stepsOf[st.OrderID] = append(stepsOf[st.OrderID], st)
	}
	pq := db.Where("order_id IN ?", ids)
	if len(byNumber) > 0 {
		numbers := make([]string, 0, len(byNumber))
		for _, r := range rows {
			if _, ok := byNumber[r.Number]; ok {
				numbers = append(numbers, r.Number)
			}
		}
		pq = pq.Or("status = ? AND order_id IS NULL AND memo IN ? AND mode = ?", PaymentReceived, numbers, string(q.Mode))
	}
	var pays []paymentRow
	if err := pq.Order("received_at, id").Find(&pays).Error; err != nil {
		return nil, fmt.Errorf("reading payments: %w", err)
	}
	paysOf := map[string][]models.OrderPayment{}
	for _, p := range pays {
		id := byNumber[p.Memo]
		if p.OrderID != nil {
			id = *p.OrderID
		}
		paysOf[id] = append(paysOf[id], orderPaymentOf(p))
	}
	out := make([]models.Order, len(rows))
	for i, r := range rows {
		o := r.toModel(stepsOf[r.ID], nil)
		o.Payments = paysOf[r.ID]
		o.PendingCredit = models.PendingCreditOf(o)
		out[i] = o
	}
	return out, nil
}

// ListOrdersPlan returns Postgres's plan (EXPLAIN, without costs) for
// ListOrders' query, built by the same code: tests and operators check
// that a page is an index range read with no sort. Postgres only.
func (s *Store) ListOrdersPlan(ctx context.Context, q models.OrderListQuery) (string, error) {
	if s.dialect != DialectPostgres {
		return "", errors.New("query plans are read on Postgres only")
	}
	var rows []clientOrderRow
	stmt := listScope(s.db.WithContext(ctx).Session(&gorm.Session{DryRun: true}), q).Select(pgListSelect).Find(&rows).Statement
	var lines []string
	if err := s.db.WithContext(ctx).Raw("EXPLAIN (COSTS OFF) "+stmt.SQL.String(), stmt.Vars...).Scan(&lines).Error; err != nil {
		return "", fmt.Errorf("explaining the order list: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}
