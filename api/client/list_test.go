package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// fakeList serves one list as the API pages it: newest first, limit,
// starting_after (older) and ending_before (newer, the page just after
// the cursor). ids are oldest first.
type fakeList struct {
	path string
	ids  []string
	// failAt answers 500s to the failAt-th request on (0: never).
	failAt int

	mu      sync.Mutex
	queries []string
}

func (f *fakeList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.RawQuery)
	n := len(f.queries)
	f.mu.Unlock()
	if r.URL.Path != f.path {
		http.Error(w, `{"error":{"code":"not_found","message":"No such route."}}`, 404)
		return
	}
	if f.failAt > 0 && n >= f.failAt {
		http.Error(w, `{"error":{"code":"internal_error","message":"Oops."}}`, 500)
		return
	}
	q := r.URL.Query()
	limit := 10
	if l := q.Get("limit"); l != "" {
		limit, _ = strconv.Atoi(l)
	}
	newest := slices.Clone(f.ids)
	slices.Reverse(newest)
	var page []string
	var more bool
	switch after, before := q.Get("starting_after"), q.Get("ending_before"); {
	case before != "":
		i := slices.Index(newest, before)
		newer := newest[:max(i, 0)] // newest first
		from := max(len(newer)-limit, 0)
		page, more = newer[from:], from > 0
	default:
		from := 0
		if after != "" {
			from = slices.Index(newest, after) + 1
		}
		to := min(from+limit, len(newest))
		page, more = newest[from:to], to < len(newest)
	}
	data := []map[string]string{}
	for _, id := range page {
		data = append(data, map[string]string{"id": id})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"data": data, "has_more": more})
}

func (f *fakeList) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

func newFakeList(t *testing.T, f *fakeList) *Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return New("mc_test_key", WithBaseURL(srv.URL), WithRetryBudget(1, 0))
}

// ids collects an iteration's ids, stopping after stop of them (0: all),
// and the error it ended with.
func ids[T any](seq iter.Seq2[*T, error], id func(*T) string, stop int) ([]string, error) {
	var got []string
	for item, err := range seq {
		if err != nil {
			return got, err
		}
		got = append(got, id(item))
		if len(got) == stop {
			break
		}
	}
	return got, nil
}

var seven = []string{"x1", "x2", "x3", "x4", "x5", "x6", "x7"}

// listers are the iterators over starting_after, each as "collect the
// ids of every item after cursor, limit a page".
var listers = []struct {
	path string
	list func(c *Client, limit int, after string, stop int) ([]string, error)
}{
	{"/v1/orders", func(c *Client, limit int, after string, stop int) ([]string, error) {
		return ids(c.Orders(context.Background(), &ListOrdersParams{Limit: limit, StartingAfter: after, Status: OrderPaid}),
			func(o *Order) string { return o.ID }, stop)
	}},
	{"/v1/refunds", func(c *Client, limit int, after string, stop int) ([]string, error) {
		return ids(c.Refunds(context.Background(), &ListRefundsParams{Limit: limit, StartingAfter: after, Status: RefundSent}),
			func(r *Refund) string { return r.ID }, stop)
	}},
	{"/v1/events", func(c *Client, limit int, after string, stop int) ([]string, error) {
		return ids(c.Events(context.Background(), &ListEventsParams{Limit: limit, StartingAfter: after, Types: []EventType{EventOrderPaid}}),
			func(e *Event) string { return e.ID }, stop)
	}},
}

// TestIteratorsPage: each list's iterator yields every item newest first
// across pages, asking each page after the last id of the one before
// with the caller's filters, and stops asking when the loop breaks.
func TestIteratorsPage(t *testing.T) {
	for _, l := range listers {
		t.Run(l.path, func(t *testing.T) {
			f := &fakeList{path: l.path, ids: seven}
			c := newFakeList(t, f)
			got, err := l.list(c, 3, "", 0)
			checkPaging(t, f, got, err, []string{"x7", "x6", "x5", "x4", "x3", "x2", "x1"}, []string{"", "x5", "x2"},
				func(v url.Values, after string) bool {
					return v.Get("starting_after") == after && v.Get("limit") == "3" && (v.Get("status") != "" || v.Get("type") != "")
				})

			f = &fakeList{path: l.path, ids: seven}
			c = newFakeList(t, f)
			if got, err := l.list(c, 2, "x6", 3); err != nil || !slices.Equal(got, []string{"x5", "x4", "x3"}) {
				t.Errorf("from x6, stopping after 3: %v, %v", got, err)
			}
			if n := len(f.recorded()); n != 2 {
				t.Errorf("%d pages asked for after the loop broke, want 2", n)
			}

			f = &fakeList{path: l.path, ids: seven, failAt: 2}
			c = newFakeList(t, f)
			got, err = l.list(c, 3, "", 0)
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || len(got) != 3 {
				t.Errorf("with the second page failing: %v, %v; want the first page, then the 500", got, err)
			}
		})
	}
}

// TestEventsAfterCatchesUp: from the last event processed, EventsAfter
// yields every newer event oldest first, paging with ending_before set to
// the newest id of the page before, until has_more is false.
func TestEventsAfterCatchesUp(t *testing.T) {
	f := &fakeList{path: "/v1/events", ids: seven}
	c := newFakeList(t, f)
	p := &ListEventsParams{Limit: 2, Order: "32205377465", StartingAfter: "ignored"}
	got, err := ids(c.EventsAfter(context.Background(), "x2", p), func(e *Event) string { return e.ID }, 0)
	checkPaging(t, f, got, err, []string{"x3", "x4", "x5", "x6", "x7"}, []string{"x2", "x4", "x6"},
		func(v url.Values, before string) bool {
			return v.Get("ending_before") == before && v.Get("starting_after") == "" && v.Get("order") == "32205377465" && v.Get("limit") == "2"
		})

	// Caught up already: one page, nothing yielded.
	f = &fakeList{path: "/v1/events", ids: seven}
	c = newFakeList(t, f)
	if got, err := ids(c.EventsAfter(context.Background(), "x7", nil), func(e *Event) string { return e.ID }, 0); err != nil || len(got) != 0 {
		t.Errorf("from the newest: %v, %v; want nothing", got, err)
	}

	if _, err := ids(c.EventsAfter(context.Background(), "", nil), func(e *Event) string { return e.ID }, 0); !errors.Is(err, ErrNoCursor) {
		t.Errorf("without a cursor: %v, want ErrNoCursor", err)
	}
}

// checkPaging checks that an iteration yielded want and asked f for one
// page per cursor, each page's query passing asked with that cursor.
func checkPaging(t *testing.T, f *fakeList, got []string, err error, want, cursors []string, asked func(q url.Values, cursor string) bool) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("yielded %v, want %v", got, want)
	}
	queries := f.recorded()
	if len(queries) != len(cursors) {
		t.Fatalf("%d pages asked for (%v), want %d", len(queries), queries, len(cursors))
	}
	for i, cursor := range cursors {
		v, err := url.ParseQuery(queries[i])
		if err != nil {
			t.Fatal(err)
		}
		if !asked(v, cursor) {
			t.Errorf("page %d asked with %q; want the cursor %q, the page size and the filters", i+1, queries[i], cursor)
		}
	}
}

// TestIteratorsStartOverEachRange: an iterator ranged again pages from
// its start again, not from where the last range ended.
func TestIteratorsStartOverEachRange(t *testing.T) {
	f := &fakeList{path: "/v1/orders", ids: seven}
	c := newFakeList(t, f)
	orders := c.Orders(context.Background(), &ListOrdersParams{Limit: 3, StartingAfter: "x7"})
	id := func(o *Order) string { return o.ID }
	first, err1 := ids(orders, id, 0)
	again, err2 := ids(orders, id, 0)
	if err1 != nil || err2 != nil || !slices.Equal(first, again) || len(first) != 6 {
		t.Errorf("ranged twice: %v (%v), then %v (%v); want x6 to x1 both times", first, err1, again, err2)
	}

	f = &fakeList{path: "/v1/events", ids: seven}
	c = newFakeList(t, f)
	events := c.EventsAfter(context.Background(), "x4", &ListEventsParams{Limit: 2})
	eid := func(e *Event) string { return e.ID }
	first, err1 = ids(events, eid, 0)
	again, err2 = ids(events, eid, 0)
	if err1 != nil || err2 != nil || !slices.Equal(first, again) || len(first) != 3 {
		t.Errorf("ranged twice: %v (%v), then %v (%v); want x5 to x7 both times", first, err1, again, err2)
	}
}
