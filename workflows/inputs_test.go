package workflows_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// TestActivityInputsFollowTheBaseline: a run from baseline-2026-12 sends
// each order activity one input struct; a run older than that baseline
// keeps sending the positional arguments, which the workers of the code
// it started with decode (a deploy rolls out while it runs). Both deliver
// the order through the same activities, so the commands of either run
// replay alike (TestReplayHistories).
func TestActivityInputsFollowTheBaseline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		old        bool
		firstIsObj bool
	}{
		{name: "from baseline-2026-12: input structs", firstIsObj: true},
		{name: "from baseline-2026-11: positional", old: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.old {
				h.env.OnGetVersion("baseline-2026-12", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			var (
				mu     sync.Mutex
				shapes = map[string][]int{} // activity name: payload count, first payload's JSON kind
			)
			h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
				name := info.ActivityType.Name
				if name != "PlaceOrder" && name != "CheckOrder" && name != "RecordTransition" && name != "RecordPayment" {
					return
				}
				var first json.RawMessage
				require.NoError(t, args.Get(&first))
				obj := 0
				if len(first) > 0 && first[0] == '{' {
					obj = 1
				}
				mu.Lock()
				defer mu.Unlock()
				shapes[name] = append(shapes[name], obj)
			})
			h.payAt(0, pay("p1", "995.98"))
			res := h.run()
			assert.Equal(t, models.OrderDelivered, res.Status)
			require.NotEmpty(t, shapes["PlaceOrder"], "PlaceOrder is always a regular activity")
			want := 0
			if tc.firstIsObj {
				want = 1
			}
			for name, got := range shapes {
				for _, obj := range got {
					assert.Equal(t, want, obj, "%s's first argument: an input struct (1) or the order id (0)", name)
				}
			}
		})
	}
}
