package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// listView is a page of a list endpoint as the API shows it.
type listView[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

type orderListView = listView[orderView]

// getList is GET path?params with key, which must answer 200, decoded.
func getList[T any](t *testing.T, e *ordersEnv, key, path string, params url.Values) listView[T] {
	t.Helper()
	r := e.get(t, path+"?"+params.Encode(), key)
	require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	var v listView[T]
	decodeStrict(t, r.body, &v)
	return v
}

func (e *ordersEnv) list(t *testing.T, key string, params url.Values) orderListView {
	t.Helper()
	return getList[orderView](t, e, key, "/v1/orders", params)
}

// listAll follows the pages of params with limit and returns the ids.
func (e *ordersEnv) listAll(t *testing.T, key string, params url.Values, limit int) []string {
	t.Helper()
	params = cloneValues(params)
	params.Set("limit", itoa(limit))
	var ids []string
	for range 50 {
		page := e.list(t, key, params)
		require.LessOrEqual(t, len(page.Data), limit)
		for _, o := range page.Data {
			ids = append(ids, o.ID)
		}
		if !page.HasMore {
			return ids
		}
		params.Set("starting_after", page.Data[len(page.Data)-1].ID)
	}
	t.Fatal("pagination does not end")
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestListOrders: GET /v1/orders pages through the key's account's orders
// in its mode, newest first, each as GET returns it; filters combine.
func TestListOrders(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)

		empty := e.get(t, "/v1/orders", key)
		require.Equal(t, http.StatusOK, empty.status)
		assert.JSONEq(t, `{"data":[],"has_more":false}`, string(empty.body))

		// 12 orders, created two per second: ties broken by id.
		var newest []string // expected order, filled below
		type made struct {
			id      string
			created time.Time
		}
		var all []made
		start := e.clock.Now().UTC().Truncate(time.Second)
		for i := range 12 {
			o := e.newOrder(t, key)
			all = append(all, made{o.ID, parseTS(t, "created_at", o.CreatedAt)})
			if i%2 == 1 {
				e.clock.Advance(time.Second)
			}
		}
		e.newOrder(t, other) // not acme's
		for i := len(all) - 1; i >= 0; i-- {
			newest = append(newest, all[i].id)
		}
		// Within a second the larger id comes first.
		for i := 0; i+1 < len(newest); i += 2 {
			if newest[i] < newest[i+1] {
				newest[i], newest[i+1] = newest[i+1], newest[i]
			}
		}

		first := e.list(t, key, nil)
		assert.Len(t, first.Data, 10, "10 by default")
		assert.True(t, first.HasMore)
		for _, limit := range []int{1, 2, 5, 12, 100} {
			assert.Equal(t, newest, e.listAll(t, key, nil, limit), "limit %d", limit)
		}
		for i, o := range first.Data[:3] {
			one := decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key))
			assert.Equal(t, []refundView{}, one.Refunds, "GET of one order has its refunds, none here")
			assert.Nil(t, o.Refunds, "a list item has no refunds")
			one.Refunds = nil
			assert.Equal(t, one, o, "item %d is the order as GET returns it, without its refunds", i)
		}

		// Filters: a status, a creation range (inclusive), both.
		cancelled := all[3].id
		cancelledView(t, e.cancel(t, key, cancelled, ""))
		byStatus := e.list(t, key, url.Values{"status": {"cancelled"}})
		require.Len(t, byStatus.Data, 1)
		assert.Equal(t, cancelled, byStatus.Data[0].ID)
		assert.Equal(t, "cancelled", byStatus.Data[0].Status)
		assert.Equal(t, "requested_by_customer", *byStatus.Data[0].CancellationReason)

		from, to := start.Add(time.Second), start.Add(3*time.Second)
		var inRange []string
		for _, id := range newest {
			for _, m := range all {
				if m.id == id && !m.created.Before(from) && !m.created.After(to) {
					inRange = append(inRange, id)
				}
			}
		}
		require.Len(t, inRange, 6)
		rng := url.Values{"created[gte]": {from.Format(time.RFC3339)}, "created[lte]": {to.Format(time.RFC3339)}}
		assert.Equal(t, inRange, e.listAll(t, key, rng, 4))
		rng.Set("status", "created")
		var stillCreated []string
		for _, id := range inRange {
			if id != cancelled {
				stillCreated = append(stillCreated, id)
			}
		}
		require.Len(t, stillCreated, 5, "the cancelled order is in the range")
		assert.Equal(t, stillCreated, e.listAll(t, key, rng, 4))
		// An offset time is read as the instant it names.
		off := url.Values{"created[gte]": {from.In(time.FixedZone("x", 2*3600)).Format(time.RFC3339)}}
		assert.Len(t, e.listAll(t, key, off, 100), 10)

		// Another account sees only its own; the live key none.
		assert.Len(t, e.list(t, other, nil).Data, 1)
		live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
		assert.Empty(t, e.list(t, live, nil).Data)
	})
}

// TestListOrdersErrors: every bad parameter is 400 invalid_request naming
// it; a Free key is 403 plan_required.
func TestListOrdersErrors(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
	free, _ := e.accountKey(t, "tiny", models.ModeTest, models.TierFree)
	mine := e.newOrder(t, key)
	theirs := e.newOrder(t, other)

	for _, tt := range []struct {
		query, field string
	}{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"limit=1.5", "limit"},
		{"limit=5&limit=6", "limit"},
		{"status=lost", "status"},
		{"status=", "status"},
		{"created[gte]=2026-11-21", "created[gte]"},
		{"created[lte]=1763767647", "created[lte]"},
		{"created[gte]=2026-11-22T00:00:00Z&created[lte]=2026-11-21T00:00:00Z", "created[gte]"},
		{"starting_after=32205377465", "starting_after"},
		{"starting_after=" + theirs.ID, "starting_after"},
		{"starting_after=ord_missing00000000000000000", "starting_after"},
		{"created_after=2026-11-21T00:00:00Z", "created_after"},
		{"Limit=5", "Limit"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			requireError(t, e.get(t, "/v1/orders?"+tt.query, key), http.StatusBadRequest, models.CodeInvalidRequest, tt.field)
		})
	}
	requireError(t, e.get(t, "/v1/orders", free), http.StatusForbidden, models.CodePlanRequired, "")
	requireError(t, e.get(t, "/v1/orders", ""), http.StatusUnauthorized, models.CodeMissingAPIKey, "")
	// The well-formed cursor of one's own order works, and an equal
	// bound on both sides selects that second.
	created := parseTS(t, "created_at", mine.CreatedAt).Format(time.RFC3339)
	v := e.list(t, key, url.Values{"created[gte]": {created}, "created[lte]": {created}})
	require.Len(t, v.Data, 1)
	assert.Empty(t, e.list(t, key, url.Values{"starting_after": {mine.ID}}).Data)
}
