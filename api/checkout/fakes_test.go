package checkout_test

import (
	"context"
	"slices"
	"time"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// t0 is the fake clock's time.
var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func clock() time.Time { return t0 }

// fakeOrders is the store: orders by id, and every write it is asked for.
type fakeOrders struct {
	orders   map[string]models.Order
	awaiting []models.Order
	// cutoff is the createdBefore OrdersAwaitingWorkflow was asked for.
	cutoff time.Time
	// marked lists MarkWorkflowsStarted's order ids, at is its time.
	marked []string
	at     time.Time
	// refunded lists MarkOrderRefunded's and MarkPaymentRefunded's calls
	// as "<number or payment id>/<tx>".
	refunded []string
	err      error // what the writes return

	// cart is what CreateOrder builds a new order from; cursor is
	// StellarCursor's answer; events is how many webhook events a new
	// order's creation records.
	cart    models.Cart
	cursor  string
	events  int
	creates []models.OrderRequest
}

func newFakeOrders(os ...models.Order) *fakeOrders {
	f := &fakeOrders{orders: map[string]models.Order{}}
	for _, o := range os {
		f.orders[o.ID] = o
	}
	return f
}

func (f *fakeOrders) OrderForAccount(_ context.Context, accountID string, mode models.Mode, ref string) (models.Order, error) {
	for _, o := range f.orders {
		if (o.ID == ref || o.Number == ref) && o.AccountID == accountID && o.Mode == mode {
			return o, nil
		}
	}
	return models.Order{}, models.ErrOrderNotFound
}

func (f *fakeOrders) OrderByNumber(_ context.Context, number string) (models.Order, error) {
	for _, o := range f.orders {
		if o.Number == number {
			return o, nil
		}
	}
	return models.Order{}, models.ErrOrderNotFound
}

func (f *fakeOrders) MarkWorkflowsStarted(_ context.Context, ids []string, at time.Time) error {
	f.marked, f.at = append(f.marked, ids...), at
	return f.err
}

func (f *fakeOrders) OrdersAwaitingWorkflow(_ context.Context, createdBefore time.Time, _ int) ([]models.Order, error) {
	f.cutoff = createdBefore
	return slices.Clone(f.awaiting), nil
}

func (f *fakeOrders) MarkOrderRefunded(_ context.Context, number, tx string, at time.Time) error {
	f.refunded, f.at = append(f.refunded, number+"/"+tx), at
	return f.err
}

func (f *fakeOrders) MarkPaymentRefunded(_ context.Context, paymentID, tx string, at time.Time) error {
	f.refunded, f.at = append(f.refunded, paymentID+"/"+tx), at
	return f.err
}

// CreateOrder returns the order of the request's cart if it has one, else
// builds one from cart, as the store does.
func (f *fakeOrders) CreateOrder(_ context.Context, req models.OrderRequest) (models.Order, bool, error) {
	f.creates = append(f.creates, req)
	for _, o := range f.orders {
		if o.CartID == req.CartID {
			return o, false, nil
		}
	}
	o, err := req.Build(f.cart)
	if err != nil {
		return models.Order{}, false, err
	}
	if o.Number, err = req.NewNumber(); err != nil {
		return models.Order{}, false, err
	}
	o.PaymentMemo = o.Number
	f.orders[o.ID] = o
	if req.EventsRecorded != nil {
		req.EventsRecorded(f.events)
	}
	return o, true, nil
}

func (f *fakeOrders) StellarCursor(context.Context, string, string) (string, error) {
	return f.cursor, nil
}

// writes is everything written to the store.
func (f *fakeOrders) writes() []string {
	out := append(slices.Clone(f.marked), f.refunded...)
	for _, r := range f.creates {
		out = append(out, "create:"+r.CartID)
	}
	return out
}

// fakeWorkflows is the Temporal side: it records every call in order, as
// "start:<id>", "cancel:<id>/<note>" and "refund:<id>/<tx>/<amount>".
type fakeWorkflows struct {
	store *fakeOrders
	calls []string
	// startErr fails the start of the order ids it names ("*": any).
	startErr map[string]error
	// cancelErr is what CancelOrder returns; without one, it writes the
	// cancellation to the store as the workflow would.
	cancelErr error
	refundErr error
}

func (w *fakeWorkflows) StartOrder(_ context.Context, o models.Order) error {
	w.calls = append(w.calls, "start:"+o.ID)
	if err, ok := w.startErr[o.ID]; ok {
		return err
	}
	return w.startErr["*"]
}

func (w *fakeWorkflows) CancelOrder(_ context.Context, orderID, note string) error {
	w.calls = append(w.calls, "cancel:"+orderID+"/"+note)
	if w.cancelErr != nil {
		return w.cancelErr
	}
	o := w.store.orders[orderID]
	o.Status, o.PaymentStatus, o.Cancellation = models.OrderCancelled, models.PaymentCancelled, models.CancellationRequestedByCustomer
	w.store.orders[orderID] = o
	return nil
}

func (w *fakeWorkflows) RecordRefund(_ context.Context, orderID string, r workflows.RefundRequest) (workflows.RefundResult, error) {
	w.calls = append(w.calls, "refund:"+orderID+"/"+r.TxHash+"/"+r.Amount.String()+"/"+r.RecordedBy)
	if w.refundErr != nil {
		return workflows.RefundResult{}, w.refundErr
	}
	return workflows.RefundResult{PaymentStatus: models.PaymentRefunded, Amount: r.Amount}, nil
}

// fakeEvents records the orders whose events were dispatched.
type fakeEvents struct{ dispatched []string }

func (e *fakeEvents) DispatchOrderEvents(_ context.Context, orderID string) error {
	e.dispatched = append(e.dispatched, orderID)
	return nil
}
