package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/cmd/devstack/devtemporal"
	"github.com/memocart/memocart/models"
	memoworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// doomedWorkerEnv, set to a Temporal frontend's host:port, makes this test
// binary a worker process for TestE2EKilledWorkersActivitiesRetriedSoon
// instead of running tests: a process the test can SIGKILL, as make chaos
// kills `memocart worker`. It serves the task queue doomedTaskQueueEnv
// names and says on stdout when it is ready and when an activity hangs.
const (
	doomedWorkerEnv      = "MEMOCART_TEST_DOOMED_WORKER"
	doomedTaskQueueEnv   = "MEMOCART_TEST_DOOMED_TASK_QUEUE"
	doomedReady          = "ready"
	doomedHungPrefix     = "hung " // "hung PlaceOrder <order id> <attempt>", "hung CheckOrder <order id> <ref>"
	doomedWorkerIdentity = "doomed"
	survivorIdentity     = "survivor"
	lostPlaceOrderID     = "ord_lost_place"
	lostCheckOrderID     = "ord_lost_check"
)

// lostWorkerBound is how soon after the kill a lost activity must run
// again: the workflow's 10 s heartbeat timeout, the first retry's 1 s,
// and room for a loaded machine; well under the 1-minute
// StartToCloseTimeout the retry would wait for without heartbeats.
// lostWorkerGiveUp ends the wait for a retry that is not coming.
const (
	lostWorkerBound  = 30 * time.Second
	lostWorkerGiveUp = 45 * time.Second
)

func TestMain(m *testing.M) {
	if hostPort := os.Getenv(doomedWorkerEnv); hostPort != "" {
		os.Exit(runDoomedWorker(hostPort, os.Getenv(doomedTaskQueueEnv)))
	}
	if args := os.Getenv(commandProcessEnv); args != "" {
		os.Exit(runCommandProcess(args))
	}
	os.Exit(m.Run())
}

// TestE2EKilledWorkersActivitiesRetriedSoon: a worker process SIGKILLed
// while it runs a PlaceOrder of one order and a WatchOrder of another
// completes neither and says nothing more. On the embedded Temporal
// server, both activities are retried on the surviving worker once their
// heartbeat timeout has passed, seconds after the kill, instead of when
// their StartToCloseTimeout runs out (1 minute; 2 before the heartbeat
// timeouts). The retried PlaceOrder is the same placement (attempt 1), so
// nothing is bought twice, and both orders are delivered.
//
// The order workflow, the activities and the worker's registration and
// options are the real ones; the store and the buying provider are fakes,
// because the provider must hang in the killed worker (the sandbox
// fulfiller answers at once) and the test needs no database. It takes
// about 30 s: the server's start, the production heartbeat timeout it
// tests (10 s), and the workflow tasks' move off the killed worker's
// sticky queue.
func TestE2EKilledWorkersActivitiesRetriedSoon(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ts, err := devtemporal.Start(ctx, devtemporal.Options{UIPort: -1, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Stop() })
	const taskQueue = "lost-worker"

	// The worker to kill: a process of its own, whose provider hangs.
	doomed := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	doomed.Env = append(os.Environ(), doomedWorkerEnv+"="+ts.FrontendHostPort(), doomedTaskQueueEnv+"="+taskQueue)
	var doomedErr syncBuffer
	doomed.Stderr = &doomedErr
	stdin, err := doomed.StdinPipe() // closed when the test ends: the process exits if it is still there
	require.NoError(t, err)
	stdout, err := doomed.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, doomed.Start())
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			_ = doomed.Process.Kill() // SIGKILL
			_ = stdin.Close()
			_ = doomed.Wait()
		})
	}
	t.Cleanup(kill)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("killed worker's stderr:\n%s", doomedErr.String())
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	awaitLine := func(want func(string) bool, what string) string {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "the worker process ended before it %s; stderr:\n%s", what, doomedErr.String())
				if want(l) {
					return l
				}
			case <-timeout:
				t.Fatalf("the worker process has not %s after a minute; stderr:\n%s", what, doomedErr.String())
			}
		}
	}
	awaitLine(func(l string) bool { return l == doomedReady }, "started")

	c, err := client.DialContext(ctx, client.Options{
		HostPort: ts.FrontendHostPort(), Identity: survivorIdentity,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	// Two paid orders: one hangs in PlaceOrder, the other, placed, in its
	// first check (the activity WatchOrder).
	var runs []client.WorkflowRun
	for i, id := range []string{lostPlaceOrderID, lostCheckOrderID} {
		in := workflows.OrderInput{
			OrderID: id, OrderNumber: fmt.Sprintf("1000000000%d", i), Mode: models.ModeTest,
			PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("10"),
			PaymentDeadline: time.Now().Add(10 * time.Minute), SearchAttributesSet: true,
		}
		run, err := c.ExecuteWorkflow(ctx, workflows.StartOptions(in, taskQueue), workflows.OrderWorkflowName, in)
		require.NoError(t, err)
		runs = append(runs, run)
		require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalPaymentMatched, workflows.PaymentSignal{
			PaymentID: "sandbox:pay-" + id, Asset: "USDC", Amount: in.PaymentAmount, ReceivedAt: time.Now(), Memo: in.OrderNumber,
		}))
	}
	hung := map[string]bool{}
	for len(hung) < 2 {
		l := awaitLine(func(l string) bool { return strings.HasPrefix(l, doomedHungPrefix) }, "hung in both activities")
		hung[l] = true
	}
	assert.Equal(t, map[string]bool{
		"hung PlaceOrder " + lostPlaceOrderID + " 1":                              true,
		"hung CheckOrder " + lostCheckOrderID + " REF-" + lostCheckOrderID + "-1": true,
	}, hung)

	kill()
	killed := time.Now()
	t.Logf("worker process killed with both activities running")

	// The survivor starts only now, so that the activities ran on the
	// killed worker; it answers at once.
	ff := newRecordingFulfiller()
	w := memoworker.New(c, taskQueue, lostWorkerActivities(ff), memoworker.Tuning{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	for _, call := range []string{"place " + lostPlaceOrderID + " 1", "check " + lostCheckOrderID + " REF-" + lostCheckOrderID + "-1"} {
		at, ok := ff.await(ctx, call, killed.Add(lostWorkerGiveUp))
		require.True(t, ok, "%q not retried on the surviving worker within %s of the kill; it got %q", call, lostWorkerGiveUp, ff.all())
		t.Logf("%s retried %s after the kill", call, at.Sub(killed).Round(100*time.Millisecond))
		assert.Less(t, at.Sub(killed), lostWorkerBound, "%s retried late: its heartbeat timeout did not fire", call)
	}
	assert.NotContains(t, ff.all(), "place "+lostPlaceOrderID+" 2", "a second placement: the retry must keep the attempt")

	for _, run := range runs {
		var res workflows.OrderResult
		require.NoError(t, run.Get(ctx, &res), run.GetID())
		assert.Equal(t, models.OrderDelivered, res.Status, run.GetID())
	}

	// The history says how: the activity's last attempt ran on the
	// survivor, after the killed worker's attempt timed out on its
	// heartbeat; and the order was placed once.
	for _, tc := range []struct{ orderID, activity string }{
		{lostPlaceOrderID, "PlaceOrder"},
		{lostCheckOrderID, "WatchOrder"},
	} {
		var scheduled int64 // the first ActivityTaskScheduled of tc.activity
		var placements int
		var retried *historypb.ActivityTaskStartedEventAttributes
		iter := c.GetWorkflowHistory(ctx, models.WorkflowID(tc.orderID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
				if a.GetActivityType().GetName() == "PlaceOrder" {
					placements++
				}
				if a.GetActivityType().GetName() == tc.activity && scheduled == 0 {
					scheduled = ev.GetEventId()
				}
			}
			// A retried activity's history has one started event, its
			// last attempt's, carrying the previous attempt's failure.
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled != 0 && a.GetScheduledEventId() == scheduled {
				retried = a
			}
		}
		require.NotNil(t, retried, "%s: no started %s", tc.orderID, tc.activity)
		assert.Equal(t, int32(2), retried.GetAttempt(), "%s: %s succeeded on its second attempt", tc.orderID, tc.activity)
		assert.Equal(t, survivorIdentity, retried.GetIdentity(), tc.orderID)
		assert.Equal(t, enumspb.TIMEOUT_TYPE_HEARTBEAT, retried.GetLastFailure().GetTimeoutFailureInfo().GetTimeoutType(),
			"%s: the killed worker's attempt ended by its heartbeat timeout (last failure: %v)", tc.orderID, retried.GetLastFailure())
		assert.Equal(t, 1, placements, "%s: placed once", tc.orderID)
	}
}

// runDoomedWorker is the process TestE2EKilledWorkersActivitiesRetriedSoon
// kills: a worker whose provider never answers for the test's orders. It
// exits when its stdin closes (the test ended without killing it).
func runDoomedWorker(hostPort, taskQueue string) int {
	c, err := client.Dial(client.Options{
		HostPort: hostPort, Identity: doomedWorkerIdentity,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	w := memoworker.New(c, taskQueue, lostWorkerActivities(&hangingFulfiller{say: say}), memoworker.Tuning{})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "worker start:", err)
		return 1
	}
	say(doomedReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.Stop()
	return 0
}

// lostWorkerActivities are the activities over a fake store and f; the
// groups the test's orders never reach have parts that are never called.
func lostWorkerActivities(f activities.Fulfiller) memoworker.Activities {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var (
		acts memoworker.Activities
		err  error
	)
	acts.Orders, err = activities.NewOrders(lostWorkerStore{}, map[models.Mode]activities.Fulfiller{models.ModeTest: f}, activities.NoDispatch, nil)
	must(err)
	acts.Refunds, err = activities.NewRefunds(activities.RefundPayouts{
		Store: unusedRefundStore{}, Payers: map[models.Mode]activities.Payer{models.ModeTest: sandbox.NewPayer()},
		Start: func(context.Context, models.Refund, string) error { return nil }, Alerts: unusedAlerts{},
	}, activities.NoDispatch, nil)
	must(err)
	acts.Payments, err = activities.NewPayments(lostWorkerStore{}, unusedOrderRefunds{}, acts.Refunds, activities.NoDispatch, nil)
	must(err)
	acts.Webhooks, err = activities.NewWebhooks(unusedWebhookStore{}, unusedSender{}, nil)
	must(err)
	acts.Watches = activities.NewWatches(nil)
	return acts
}

// Parts of the lost worker that its orders never use: each call panics.
type (
	unusedRefundStore  struct{ activities.RefundStore }
	unusedOrderRefunds struct{ activities.OrderRefunds }
	unusedWebhookStore struct{ activities.WebhookStore }
	unusedSender       struct{ activities.WebhookSender }
	unusedAlerts       struct{ activities.Alerter }
)

// lostWorkerStore knows every order as a test-mode order and accepts
// every write: both processes answer alike without sharing a database.
type lostWorkerStore struct{}

func (lostWorkerStore) Order(_ context.Context, id string) (models.Order, error) {
	return models.Order{ID: id, Number: "10000000000", Mode: models.ModeTest,
		Items: []models.CartItem{{Marketplace: models.MarketplaceAmazon, ProductID: "B0ABC12345", Quantity: 1}}}, nil
}
func (lostWorkerStore) RecordTransition(context.Context, string, models.Transition, time.Time) error {
	return nil
}
func (lostWorkerStore) RecordPayment(context.Context, string, models.Payment, time.Time) error {
	return nil
}
func (lostWorkerStore) RecordFulfilment(context.Context, string, models.Fulfilment, time.Time) error {
	return nil
}

// hangingFulfiller is the killed worker's provider: it never answers
// PlaceOrder for lostPlaceOrderID, and places lostCheckOrderID but never
// answers its check. It says so on stdout as each call starts hanging.
type hangingFulfiller struct {
	say func(format string, args ...any)
}

func (f *hangingFulfiller) Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error) {
	if o.ID == lostPlaceOrderID {
		f.say("%sPlaceOrder %s %d", doomedHungPrefix, o.ID, attempt)
		<-ctx.Done()
		return models.Placement{}, ctx.Err()
	}
	return models.Placement{Ref: fmt.Sprintf("REF-%s-%d", o.ID, attempt)}, nil
}

func (f *hangingFulfiller) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	f.say("%sCheckOrder %s %s", doomedHungPrefix, o.ID, ref)
	<-ctx.Done()
	return models.Fulfilment{}, ctx.Err()
}

func (*hangingFulfiller) Schedule() models.PollSchedule { return models.PollSchedule{} }

// recordingFulfiller is the survivor's provider: it places every order at
// once ("REF-<order id>-<attempt>", the same reference the killed worker
// would have got: placing is idempotent by order and attempt), reports it
// delivered at the first check, and records each call with its time.
type recordingFulfiller struct {
	mu    sync.Mutex
	calls []string
	at    map[string]time.Time // first time of each call
}

func newRecordingFulfiller() *recordingFulfiller {
	return &recordingFulfiller{at: map[string]time.Time{}}
}

func (f *recordingFulfiller) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if _, ok := f.at[call]; !ok {
		f.at[call] = time.Now()
	}
}

func (f *recordingFulfiller) Place(_ context.Context, o models.Order, attempt int) (models.Placement, error) {
	f.record(fmt.Sprintf("place %s %d", o.ID, attempt))
	return models.Placement{Ref: fmt.Sprintf("REF-%s-%d", o.ID, attempt)}, nil
}

func (f *recordingFulfiller) Check(_ context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	f.record(fmt.Sprintf("check %s %s", o.ID, ref))
	return models.Fulfilment{Ref: ref, Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{{
		Carrier: "Test Post", TrackingNumber: "TP" + o.ID, Status: models.ParcelDelivered,
	}}}, nil
}

func (*recordingFulfiller) Schedule() models.PollSchedule { return models.PollSchedule{} }

func (f *recordingFulfiller) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// await returns when call was first made, waiting for it until deadline.
func (f *recordingFulfiller) await(ctx context.Context, call string, deadline time.Time) (time.Time, bool) {
	for {
		f.mu.Lock()
		at, ok := f.at[call]
		f.mu.Unlock()
		if ok {
			return at, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
