package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// orderAnswer is GET /v1/orders/{ref}'s answer for an order in status.
func orderAnswer(status OrderStatus) answer {
	return answer{status: 200, body: fmt.Sprintf(`{"order":{"id":"ord_AAAAAAAAAAAAAAAAAAAAAAAA","number":"32205377465",
	 "status":%q,"total":16.30,"currency":"USD","payment_status":"pending","created_at":"2026-11-22T00:20:17Z"}}`, status)}
}

// TestWaitForOrderStatus polls with a short interval through sequences
// of statuses.
func TestWaitForOrderStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []OrderStatus // what the reads return, the last repeated
		wait     []OrderStatus
		want     OrderStatus
		reads    int
		final    bool // ErrFinalStatus
	}{
		{"reaches it", []OrderStatus{OrderCreated, OrderCreated, OrderPaid}, []OrderStatus{OrderPaid}, OrderPaid, 3, false},
		{"one of several", []OrderStatus{OrderCreated, OrderCancelled}, []OrderStatus{OrderPaid, OrderCancelled}, OrderCancelled, 2, false},
		{"passed it between polls", []OrderStatus{OrderCreated, OrderShipped}, []OrderStatus{OrderPaid}, OrderShipped, 2, false},
		{"already there", []OrderStatus{OrderDelivered}, []OrderStatus{OrderDelivered}, OrderDelivered, 1, false},
		{"any final status", []OrderStatus{OrderCreated, OrderPaid, OrderFailed}, nil, OrderFailed, 3, false},
		{"ended elsewhere", []OrderStatus{OrderCreated, OrderCancelled}, []OrderStatus{OrderPaid}, OrderCancelled, 2, true},
		{"failed is not past shipped", []OrderStatus{OrderPaid, OrderFailed}, []OrderStatus{OrderShipped}, OrderFailed, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answers []answer
			for _, s := range tc.statuses {
				answers = append(answers, orderAnswer(s))
			}
			f, c := newFake(t, answers, WithPollInterval(time.Millisecond, 2*time.Millisecond))
			o, err := c.WaitForOrderStatus(context.Background(), "32205377465", tc.wait...)
			if tc.final != errors.Is(err, ErrFinalStatus) || (!tc.final && err != nil) {
				t.Fatalf("err = %v; want ErrFinalStatus: %v", err, tc.final)
			}
			if o == nil || o.Status != tc.want {
				t.Fatalf("order %+v, want status %s", o, tc.want)
			}
			reqs := f.recorded()
			if len(reqs) != tc.reads {
				t.Errorf("%d reads, want %d", len(reqs), tc.reads)
			}
			if reqs[0].path != "/v1/orders/32205377465" || reqs[0].method != "GET" {
				t.Errorf("read %+v", reqs[0])
			}
		})
	}
}

// TestWaitForOrderStatusStops: a cancelled context ends the wait between
// polls at once; an API error ends it too.
func TestWaitForOrderStatusStops(t *testing.T) {
	_, c := newFake(t, []answer{orderAnswer(OrderCreated)}, WithPollInterval(time.Hour, time.Hour))
	stopsAtDeadline(t, func(ctx context.Context) error {
		_, err := c.WaitForOrderStatus(ctx, "32205377465", OrderPaid)
		return err
	})

	f, c := newFake(t, []answer{{status: 404, body: `{"error":{"code":"order_not_found","message":"No such order."}}`}},
		WithPollInterval(time.Millisecond, time.Millisecond))
	var apiErr *Error
	if _, err := c.WaitForOrderStatus(context.Background(), "32205377465", OrderPaid); !errors.As(err, &apiErr) || apiErr.Code != CodeOrderNotFound {
		t.Errorf("err = %v; want the 404", err)
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("%d reads after a 404, want 1", n)
	}
}

// TestPollIntervalDefaults: about 2 s for a test key, 30 to 60 s for a
// live one, jittered within the bounds; WithPollInterval overrides.
func TestPollIntervalDefaults(t *testing.T) {
	for _, tc := range []struct {
		key      string
		opts     []Option
		min, max time.Duration
	}{
		{"mc_test_abc", nil, 1500 * time.Millisecond, 2500 * time.Millisecond},
		{"mc_live_abc", nil, 30 * time.Second, 60 * time.Second},
		{"mc_live_abc", []Option{WithPollInterval(5*time.Second, 5*time.Second)}, 5 * time.Second, 5 * time.Second},
	} {
		c := New(tc.key, tc.opts...)
		seen := map[time.Duration]bool{}
		for range 50 {
			d := c.pollInterval()
			if d < tc.min || d > tc.max {
				t.Errorf("%s %d options: interval %v outside [%v, %v]", tc.key, len(tc.opts), d, tc.min, tc.max)
			}
			seen[d] = true
		}
		if tc.min != tc.max && len(seen) < 2 {
			t.Errorf("%s: the interval is always %v: not jittered", tc.key, tc.min)
		}
	}
}
