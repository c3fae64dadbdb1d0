package client

import (
	"context"
	"errors"
	"iter"
)

// The iterators page through a list as the API pages it: each page asks
// for the one after the last id of the previous (starting_after) while
// has_more says another follows. An error ends the iteration, yielded
// once with a nil item. Breaking out of the loop stops the paging.

// Orders yields every order that p selects, newest first, from
// p.StartingAfter on (from the newest without it).
func (c *Client) Orders(ctx context.Context, p *ListOrdersParams) iter.Seq2[*Order, error] {
	return pages(ctx, valueOf(p), c.ListOrders, func(q *ListOrdersParams) *string { return &q.StartingAfter },
		func(o *Order) string { return o.ID })
}

// Refunds yields every refund that p selects, newest first, from
// p.StartingAfter on.
func (c *Client) Refunds(ctx context.Context, p *ListRefundsParams) iter.Seq2[*Refund, error] {
	return pages(ctx, valueOf(p), c.ListRefunds, func(q *ListRefundsParams) *string { return &q.StartingAfter },
		func(r *Refund) string { return r.ID })
}

// Events yields every event that p selects, newest first, from
// p.StartingAfter on (p.EndingBefore is ignored: see EventsAfter).
func (c *Client) Events(ctx context.Context, p *ListEventsParams) iter.Seq2[*Event, error] {
	q := valueOf(p)
	q.EndingBefore = ""
	return pages(ctx, q, c.ListEvents, func(q *ListEventsParams) *string { return &q.StartingAfter },
		func(e *Event) string { return e.ID })
}

// pages pages through list with the parameters q, from q's own
// starting_after (the field cursor points at) on.
func pages[P, T any](ctx context.Context, q P, list func(context.Context, *P) (*Page[T], error),
	cursor func(*P) *string, id func(*T) string) iter.Seq2[*T, error] {
	return paginate(*cursor(&q), func(after string) (*Page[T], error) {
		q := q
		*cursor(&q) = after
		return list(ctx, &q)
	}, id)
}

// paginate walks the pages fetch returns, each after the last id of the
// one before. Each range over the result starts again from first.
func paginate[T any](first string, fetch func(after string) (*Page[T], error), id func(*T) string) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		after := first
		for {
			page, err := fetch(after)
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range page.Data {
				if !yield(&page.Data[i], nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			after = id(&page.Data[len(page.Data)-1])
		}
	}
}

// valueOf returns *p, or the zero value for nil: the parameters of a list
// are optional.
func valueOf[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// ErrNoCursor is EventsAfter's error without an event id to start after.
var ErrNoCursor = errors.New("memocart: EventsAfter needs the id of the last event processed")

// EventsAfter catches up: it yields every event recorded after the event
// lastID (the newest one the caller processed), oldest first, as far as
// the newest, and the filters of p (its cursors are ignored). It pages
// with ending_before, each page the events just after the newest one of
// the page before, until has_more is false. The API lists an event only
// once every write before it has ended, so catching up never skips one;
// keep the id of the last event yielded to catch up from it next time.
func (c *Client) EventsAfter(ctx context.Context, lastID string, p *ListEventsParams) iter.Seq2[*Event, error] {
	q := valueOf(p)
	q.StartingAfter = ""
	return func(yield func(*Event, error) bool) {
		q := q
		if lastID == "" {
			yield(nil, ErrNoCursor)
			return
		}
		q.EndingBefore = lastID
		for {
			page, err := c.ListEvents(ctx, &q)
			if err != nil {
				yield(nil, err)
				return
			}
			// A page is newest first; its oldest event is the one just
			// after the cursor.
			for i := len(page.Data) - 1; i >= 0; i-- {
				if !yield(&page.Data[i], nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			q.EndingBefore = page.Data[0].ID
		}
	}
}
