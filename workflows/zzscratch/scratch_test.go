package zzscratch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/cmd/memocart/devtemporal"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
	"github.com/memocart/memocart/worker"
)

type store struct {
	mu     sync.Mutex
	orders map[string]models.Order
	log    []string
}

func (s *store) Order(_ context.Context, id string) (models.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return o, models.ErrOrderNotFound
	}
	return o, nil
}
func (s *store) RecordTransition(_ context.Context, id string, t models.Transition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("%s %s/%s %s %s", id, t.Status, t.PaymentStatus, t.AmountReceived, t.At.Format(time.RFC3339Nano)))
	return nil
}
func (s *store) RecordPayment(_ context.Context, id string, p models.Payment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("%s payment %s %s", id, p.ID, p.Amount))
	return nil
}

func TestScratch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{UIPort: -1, SearchAttributes: map[string]enumspb.IndexedValueType{
		"OrderNumber": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "OrderStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "PaymentStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}})
	require.NoError(t, err)
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	require.NoError(t, err)
	defer c.Close()

	st := &store{orders: map[string]models.Order{}}
	for _, id := range []string{"o1", "o2", "o3", "o4"} {
		items := []models.CartItem{{ProductID: "B0ABC12345", Quantity: 1}}
		if id == "o4" {
			items = []models.CartItem{{ProductID: sandbox.FailSourcingASIN, Quantity: 1}}
		}
		st.orders[id] = models.Order{ID: id, Mode: models.ModeTest, Items: items}
	}
	acts := &activities.Activities{Store: st, Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: sandbox.NewFulfiller(200 * time.Millisecond)}}
	w := worker.New(c, "scratch", acts)
	require.NoError(t, w.Start())
	defer w.Stop()

	in := func(id string, dl time.Duration) workflows.OrderInput {
		return workflows.OrderInput{OrderID: id, OrderNumber: "N" + id, Mode: models.ModeTest, PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("995.98"), PaymentDeadline: time.Now().Add(dl)}
	}
	sig := func(id string, amt string) workflows.PaymentSignal {
		return workflows.PaymentSignal{PaymentID: id, Asset: "USDC", Amount: decimal.RequireFromString(amt), ReceivedAt: time.Now()}
	}
	runs := map[string]client.WorkflowRun{}
	start := func(i workflows.OrderInput) {
		r, err := c.ExecuteWorkflow(ctx, workflows.StartOptions(i, "scratch"), workflows.OrderWorkflowName, i)
		require.NoError(t, err)
		runs[i.OrderID] = r
	}
	// happy path with partial + top-up and a late overpayment
	start(in("o1", time.Minute))
	// second start returns existing run
	r2, err := c.ExecuteWorkflow(ctx, workflows.StartOptions(in("o1", time.Minute), "scratch"), workflows.OrderWorkflowName, in("o1", time.Minute))
	require.NoError(t, err)
	require.Equal(t, runs["o1"].GetRunID(), r2.GetRunID())
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o1"), "", workflows.SignalPaymentMatched, sig("a", "500")))
	time.Sleep(300 * time.Millisecond)
	v, err := c.QueryWorkflow(ctx, models.WorkflowID("o1"), "", workflows.QueryStatus)
	require.NoError(t, err)
	var view workflows.StatusView
	require.NoError(t, v.Get(&view))
	t.Logf("view after partial: %+v", view)
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o1"), "", workflows.SignalPaymentMatched, sig("a", "500")))
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o1"), "", workflows.SignalPaymentMatched, sig("b", "495.98")))
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o1"), "", workflows.SignalCancel, workflows.CancelSignal{Reason: "late", RequestedBy: "ops"}))
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o1"), "", workflows.SignalPaymentMatched, sig("c", "1")))
	// deadline
	start(in("o2", 2*time.Second))
	// operator cancel
	start(in("o3", time.Minute))
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o3"), "", workflows.SignalCancel, workflows.CancelSignal{Reason: "fraud", RequestedBy: "ops"}))
	// sourcing failure
	start(in("o4", time.Minute))
	require.NoError(t, c.SignalWorkflow(ctx, models.WorkflowID("o4"), "", workflows.SignalPaymentMatched, sig("d", "995.98")))

	dir := t.TempDir()
	if d := os.Getenv("SCRATCH_OUT"); d != "" {
		dir = d
	}
	for id, r := range runs {
		var res workflows.OrderResult
		require.NoError(t, r.Get(ctx, &res), id)
		t.Logf("%s: %+v", id, res)
		iter := c.GetWorkflowHistory(ctx, r.GetID(), r.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var h historypb.History
		for iter.HasNext() {
			e, err := iter.Next()
			require.NoError(t, err)
			h.Events = append(h.Events, e)
		}
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644))
	}
	st.mu.Lock()
	for _, l := range st.log {
		t.Log(l)
	}
	st.mu.Unlock()

	replayer := sdkworker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	require.Len(t, files, 4)
	for _, f := range files {
		require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f), f)
	}
}
