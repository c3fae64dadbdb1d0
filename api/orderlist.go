package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

type orderListJSON = listJSON[orderJSON]

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
	if err != nil {
		abort(c, listError(err, models.ErrOrderNotFound, "starting_after", "orders"))
		return
	}
	render(c, http.StatusOK, orderListJSON{Data: each(orders, s.newOrderJSON), HasMore: more})
}

// parseOrderList reads and checks the list's query parameters; errors name
// the parameter.
func parseOrderList(values map[string][]string) (models.OrderListQuery, error) {
	page, err := parseListPage(values, []string{"status"}, "ord", "an order")
	q := models.OrderListQuery{Limit: page.limit, CreatedGTE: page.createdGTE, CreatedLTE: page.createdLTE, StartingAfter: page.startingAfter}
	if err != nil {
		return q, err
	}
	if v, ok := page.get("status"); ok {
		q.Status = models.OrderStatus(v)
		if !q.Status.Valid() {
			return q, invalid("status", "status must be one of created, paid, ordered, shipped, delivered, cancelled, failed")
		}
	}
	return q, nil
}

// listPage is what every list's query takes besides its filters: the page
// size, the creation range and the cursor.
type listPage struct {
	limit                  int
	createdGTE, createdLTE *time.Time
	startingAfter          string
	values                 map[string][]string
}

// get returns a parameter's one value.
func (p listPage) get(name string) (string, bool) {
	vs, ok := p.values[name]
	if !ok {
		return "", false
	}
	return vs[0], true
}

// parseListPage reads a list's query parameters: filters are the list's
// own (read by the caller through get), the rest are the page's. Any other
// parameter is refused, so a misspelt filter is never silently ignored
// (one given twice, or an ambiguous query, never gets here: strictQuery).
// idPrefix and noun ("an order") describe starting_after's ids.
func parseListPage(values map[string][]string, filters []string, idPrefix, noun string) (listPage, error) {
	p := listPage{limit: models.DefaultOrderListLimit, values: values}
	known := append(slices.Clone(filters), "created[gte]", "created[lte]", "limit", "starting_after")
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names) // the same request always names the same culprit
	for _, name := range names {
		if !slices.Contains(known, name) {
			return p, invalid(name, "Unknown query parameter %q; the list takes %s and starting_after", name,
				strings.Join(known[:len(known)-1], ", "))
		}
	}
	if v, ok := p.get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > models.MaxOrderListLimit {
			return p, invalid("limit", "limit must be an integer from 1 to %d", models.MaxOrderListLimit)
		}
		p.limit = n
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"created[gte]", &p.createdGTE}, {"created[lte]", &p.createdLTE}} {
		v, ok := p.get(b.name)
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return p, invalid(b.name, "%s must be an RFC 3339 time such as 2026-11-21T23:27:27Z", b.name)
		}
		at = at.UTC()
		*b.dst = &at
	}
	if p.createdGTE != nil && p.createdLTE != nil && p.createdGTE.After(*p.createdLTE) {
		return p, invalid("created[gte]", "created[gte] is after created[lte]")
	}
	if v, ok := p.get("starting_after"); ok {
		if !models.ValidID(idPrefix, v) {
			return p, invalid("starting_after", "starting_after must be %s id (%s_…)", noun, idPrefix)
		}
		p.startingAfter = v
	}
	return p, nil
}
