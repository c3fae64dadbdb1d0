package loadtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memocart/memocart/models"
)

// Journey is one order's way from creation to its final status, as the
// load tool timed it. The times come from three clocks, the load tool's,
// the workflow's and the worker's: they agree when the tool runs on the
// stack's machine, as it does here; against a stack elsewhere the skew
// between the machines adds to every figure.
type Journey struct {
	ID string
	// Sent is when the load tool sent the order's POST /v1/orders.
	Sent time.Time
	// Paid is the order's paid step (the workflow's time when it took the
	// payment in); zero when it was never paid.
	Paid time.Time
	// Ended is when the order's final status was written (the order row's
	// updated_at, set in the transaction that wrote the status); zero while
	// it has not ended.
	Ended  time.Time
	Status models.OrderStatus
}

// Delivery summarises orders taken from creation to delivered.
type Delivery struct {
	Orders int
	// Span is from the first order's POST to the last order's delivered
	// status.
	Span time.Duration
	// Each order's time from its POST to delivered, from its POST to its
	// paid step, and from its paid step to delivered; sorted.
	ToDelivered, ToPaid, PaidToDelivered []time.Duration
}

// Rate is delivered orders per second over the span: how many orders the
// stack takes from creation to delivered per second with as many in flight
// as the run had.
func (d Delivery) Rate() float64 {
	if d.Span <= 0 {
		return 0
	}
	return float64(d.Orders) / d.Span.Seconds()
}

// SummariseDelivery summarises journeys that all ended delivered; an order
// that ended otherwise, or has not ended, is an error naming it.
func SummariseDelivery(js []Journey) (Delivery, error) {
	if len(js) == 0 {
		return Delivery{}, errors.New("loadtest: no orders")
	}
	d := Delivery{Orders: len(js)}
	first, last := js[0].Sent, js[0].Ended
	var bad []string
	for _, j := range js {
		if j.Status != models.OrderDelivered || j.Sent.IsZero() || j.Ended.IsZero() || j.Paid.IsZero() {
			bad = append(bad, fmt.Sprintf("%s %s", j.ID, cmp.Or(string(j.Status), "not ended")))
			continue
		}
		if j.Sent.Before(first) {
			first = j.Sent
		}
		if j.Ended.After(last) {
			last = j.Ended
		}
		d.ToDelivered = append(d.ToDelivered, j.Ended.Sub(j.Sent))
		d.ToPaid = append(d.ToPaid, j.Paid.Sub(j.Sent))
		d.PaidToDelivered = append(d.PaidToDelivered, j.Ended.Sub(j.Paid))
	}
	if len(bad) > 0 {
		return Delivery{}, fmt.Errorf("%d of %d orders did not end delivered, e.g. %s", len(bad), len(js), bad[0])
	}
	d.Span = last.Sub(first)
	for _, s := range [][]time.Duration{d.ToDelivered, d.ToPaid, d.PaidToDelivered} {
		slices.Sort(s)
	}
	return d, nil
}

// Tracker follows orders in the service's database until each has ended:
// the load tool adds each order as it creates it, and Follow reads, for
// the orders still open, which have a final status and when it was
// written. Reading the database rather than polling GET /v1/orders/{id}
// keeps the follower's own load off the service (one query per interval
// for all the open orders instead of a GET per order) and its figures
// free of the poll interval: the end time is the status's own.
type Tracker struct {
	conn *pgx.Conn

	mu         sync.Mutex
	journeys   []Journey
	open       map[string]int // id → index in journeys, until it ends
	lastChange time.Time
}

// OpenTracker connects to the service's database at dbURL.
func OpenTracker(ctx context.Context, dbURL string) (*Tracker, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to the service's database: %w", err)
	}
	return &Tracker{conn: conn, open: map[string]int{}, lastChange: time.Now()}, nil
}

// Close closes the database connection.
func (t *Tracker) Close(ctx context.Context) error { return t.conn.Close(ctx) }

// Add starts following an order whose POST was sent at sent.
func (t *Tracker) Add(id string, sent time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[id] = len(t.journeys)
	t.journeys = append(t.journeys, Journey{ID: id, Sent: sent})
	t.lastChange = time.Now()
}

// Journeys returns every order added so far, in the order added.
func (t *Tracker) Journeys() []Journey {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.journeys)
}

// finalStatuses are the statuses an order ends in.
var finalStatuses = []string{string(models.OrderDelivered), string(models.OrderCancelled), string(models.OrderFailed)}

// poll reads once which open orders have ended and returns how many are
// still open.
func (t *Tracker) poll(ctx context.Context) (int, error) {
	t.mu.Lock()
	ids := make([]string, 0, len(t.open))
	for id := range t.open {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	if len(ids) == 0 {
		return 0, nil
	}
	rows, err := t.conn.Query(ctx, `
		SELECT o.id, o.status, o.updated_at, s.reached_at
		FROM orders o LEFT JOIN order_steps s ON s.order_id = o.id AND s.name = $3
		WHERE o.id = ANY($1) AND o.status = ANY($2)`, ids, finalStatuses, string(models.OrderPaid))
	if err != nil {
		return 0, fmt.Errorf("reading the orders' status: %w", err)
	}
	type ended struct {
		id, status string
		at         time.Time
		paid       *time.Time
	}
	var done []ended
	for rows.Next() {
		var e ended
		if err := rows.Scan(&e.id, &e.status, &e.at, &e.paid); err != nil {
			rows.Close()
			return 0, err
		}
		done = append(done, e)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reading the orders' status: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range done {
		i, ok := t.open[e.id]
		if !ok {
			continue
		}
		j := &t.journeys[i]
		j.Status, j.Ended = models.OrderStatus(e.status), e.at
		if e.paid != nil {
			j.Paid = *e.paid
		}
		delete(t.open, e.id)
	}
	if len(done) > 0 {
		t.lastChange = time.Now()
	}
	return len(t.open), nil
}

// Follow polls every interval until created is closed (no more orders
// will be added) and every order added has ended. It gives up when ctx
// ends, or when orders are open and none was added or ended for stall.
func (t *Tracker) Follow(ctx context.Context, every, stall time.Duration, created <-chan struct{}) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		open, err := t.poll(ctx)
		if err != nil {
			return err
		}
		select {
		case <-created:
			if open == 0 {
				return nil
			}
		default:
		}
		t.mu.Lock()
		quiet := time.Since(t.lastChange)
		t.mu.Unlock()
		if open > 0 && quiet > stall {
			return fmt.Errorf("%d orders open and none ended for %s", open, stall)
		}
	}
}

// MeanInFlight is how many orders were between their POST and delivered
// on average over the span (Little's law: the rate times the mean time of
// an order).
func (d Delivery) MeanInFlight() float64 {
	if d.Span <= 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d.ToDelivered {
		sum += x
	}
	return sum.Seconds() / d.Span.Seconds()
}
