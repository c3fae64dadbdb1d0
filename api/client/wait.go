package client

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"
)

// ErrFinalStatus is WaitForOrderStatus's error when the order ended in a
// final status other than those waited for (cancelled while waiting for
// paid, say): no wait can reach them any more.
var ErrFinalStatus = errors.New("memocart: the order ended in another status")

// happyPath is the order of the statuses an order goes through when all
// goes well; an order further along it has passed through the earlier ones.
var happyPath = []OrderStatus{OrderCreated, OrderPaid, OrderOrdered, OrderShipped, OrderDelivered}

// WaitForOrderStatus reads the order ref (an id or number) until its
// status is one of statuses, or has passed it on the path created → paid
// → ordered → shipped → delivered (a poll may miss a step the sandbox
// takes in seconds), and returns the order. Without statuses it waits for
// a final status (delivered, cancelled, failed). An order that ends in a
// final status not waited for is returned with an error wrapping
// ErrFinalStatus.
//
// It polls every WithPollInterval (by default 30–60 s, jittered, for a
// live key and about 2 s for a test key) and stops when ctx is done, with
// its error. A read that fails after the client's retries ends the wait
// with that error.
func (c *Client) WaitForOrderStatus(ctx context.Context, ref string, statuses ...OrderStatus) (*Order, error) {
	for {
		o, err := c.GetOrder(ctx, ref)
		if err != nil {
			return nil, err
		}
		if reached(o.Status, statuses) {
			return o, nil
		}
		if o.Status.Final() {
			return o, fmt.Errorf("%w: order %s is %s, waited for %v", ErrFinalStatus, o.ID, o.Status, statuses)
		}
		if err := sleep(ctx, c.pollInterval()); err != nil {
			return nil, err
		}
	}
}

// reached says whether an order in status s is in, or past, one of want;
// with want empty, whether s is final.
func reached(s OrderStatus, want []OrderStatus) bool {
	if len(want) == 0 {
		return s.Final()
	}
	at := slices.Index(happyPath, s)
	for _, w := range want {
		if s == w {
			return true
		}
		if i := slices.Index(happyPath, w); i >= 0 && at > i {
			return true
		}
	}
	return false
}

func (c *Client) pollInterval() time.Duration {
	if c.pollMax <= c.pollMin {
		return c.pollMin
	}
	return c.pollMin + mrand.N(c.pollMax-c.pollMin)
}
