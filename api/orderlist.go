package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// orderListParams are GET /v1/orders' query parameters; any other is
// refused, as an unknown body field is, so a misspelt filter is never
// silently ignored.
var orderListParams = map[string]bool{
	"status": true, "created[gte]": true, "created[lte]": true, "limit": true, "starting_after": true,
}

type orderListJSON struct {
	Data    []orderJSON `json:"data"`
	HasMore bool        `json:"has_more"`
}

// listOrders is GET /v1/orders: the key's account's orders in the key's
// mode, newest first, a page at a time (README: Listing orders).
func (s *Server) listOrders(c *gin.Context) {
	key := mustKey(c)
	q, err := parseOrderList(c.Request.URL.Query())
	if err != nil {
		abort(c, err)
		return
	}
	q.AccountID, q.Mode = key.AccountID, key.Mode
	orders, more, err := s.deps.Store.ListOrders(c.Request.Context(), q)
	if errors.Is(err, models.ErrOrderNotFound) {
		abort(c, invalid("starting_after", "starting_after must be the id of one of your orders (in this mode)"))
		return
	}
	if err != nil {
		abort(c, err)
		return
	}
	out := orderListJSON{Data: make([]orderJSON, len(orders)), HasMore: more}
	for i, o := range orders {
		out.Data[i] = s.newOrderJSON(o)
	}
	render(c, http.StatusOK, out)
}

// parseOrderList reads and checks the list's query parameters; errors name
// the parameter.
func parseOrderList(values map[string][]string) (models.OrderListQuery, error) {
	q := models.OrderListQuery{Limit: models.DefaultOrderListLimit}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names) // the same request always names the same culprit
	for _, name := range names {
		vs := values[name]
		if !orderListParams[name] {
			return q, invalid(name, "Unknown query parameter %q; the list takes status, created[gte], created[lte], limit and starting_after", name)
		}
		if len(vs) > 1 {
			return q, invalid(name, "%s is given %d times", name, len(vs))
		}
	}
	get := func(name string) (string, bool) {
		vs, ok := values[name]
		if !ok {
			return "", false
		}
		return vs[0], true
	}
	if v, ok := get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > models.MaxOrderListLimit {
			return q, invalid("limit", "limit must be an integer from 1 to %d", models.MaxOrderListLimit)
		}
		q.Limit = n
	}
	if v, ok := get("status"); ok {
		q.Status = models.OrderStatus(v)
		if !q.Status.Valid() {
			return q, invalid("status", "status must be one of created, paid, ordered, shipped, delivered, cancelled, failed")
		}
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"created[gte]", &q.CreatedGTE}, {"created[lte]", &q.CreatedLTE}} {
		v, ok := get(b.name)
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return q, invalid(b.name, "%s must be an RFC 3339 time such as 2026-11-21T23:27:27Z", b.name)
		}
		at = at.UTC()
		*b.dst = &at
	}
	if q.CreatedGTE != nil && q.CreatedLTE != nil && q.CreatedGTE.After(*q.CreatedLTE) {
		return q, invalid("created[gte]", "created[gte] is after created[lte]")
	}
	if v, ok := get("starting_after"); ok {
		if !models.ValidID("ord", v) {
			return q, invalid("starting_after", "starting_after must be an order id (ord_…)")
		}
		q.StartingAfter = v
	}
	return q, nil
}
