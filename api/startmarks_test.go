package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

// markCounter counts the store's MarkWorkflowsStarted calls and the ids
// in each.
type markCounter struct {
	api.Store
	mu    sync.Mutex
	calls [][]string
}

func (m *markCounter) MarkWorkflowsStarted(ctx context.Context, ids []string, at time.Time) error {
	m.mu.Lock()
	m.calls = append(m.calls, append([]string(nil), ids...))
	m.mu.Unlock()
	return m.Store.MarkWorkflowsStarted(ctx, ids, at)
}

func (m *markCounter) batches() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.calls...)
}

// With a StartMarkDelay, the POSTs answer before their orders are marked
// started, and orders created together are marked in one write.
func TestStartMarksAreBatched(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		counter := &markCounter{}
		e := newOrdersEnv(t, dialect, func(s *ordersSetup) {
			s.uses.StartMarkDelay = time.Second
			counter.Store = s.deps.Store
			s.deps.Store = counter
		})
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		const n = 5
		carts := make([]string, n)
		for i := range carts {
			carts[i], _ = e.newCart(t, key)
		}
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range carts {
			wg.Go(func() {
				r := e.postOrder(t, key, orderBody(carts[i]), nil)
				if assert.Equalf(t, http.StatusCreated, r.status, "body %s", r.body) {
					ids[i] = decodeCreated(t, r).ID
				}
			})
		}
		wg.Wait()
		require.Len(t, e.wf.started(), n, "every order's workflow was started before its POST answered")

		e.orders.FlushStartMarks()
		for _, id := range ids {
			assert.NotNil(t, e.storedOrder(t, accountID, models.ModeTest, id).WorkflowStartedAt, "order %s marked", id)
		}
		batches := counter.batches()
		var marked []string
		for _, b := range batches {
			marked = append(marked, b...)
		}
		assert.ElementsMatch(t, ids, marked, "each order marked once")
		assert.Less(t, len(batches), n, "orders created within the delay share a write: %v", batches)

		// Marked orders are none of the reconciler's business.
		started, err := e.orders.ReconcileOrders(t.Context(), 0)
		require.NoError(t, err)
		assert.Zero(t, started)
		assert.Len(t, e.wf.started(), n)
	})
}
