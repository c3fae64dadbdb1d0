package workflows

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// updateClient is a Temporal client whose UpdateWorkflow answers what a
// test says; every other method is the nil interface's (it panics).
type updateClient struct {
	client.Client
	got    client.UpdateWorkflowOptions
	err    error // from UpdateWorkflow
	getErr error // from the handle's Get
}

func (c *updateClient) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.got = o
	if c.err != nil {
		return nil, c.err
	}
	return updateHandle{err: c.getErr}, nil
}

type updateHandle struct {
	client.WorkflowUpdateHandle
	err error
}

func (h updateHandle) Get(context.Context, any) error { return h.err }

func TestClientCancelOrder(t *testing.T) {
	refused := temporal.NewNonRetryableApplicationError("The order is paid: only an order awaiting payment can be cancelled",
		string(models.CodeOrderNotCancellable), nil)
	unavailable := serviceerror.NewUnavailable("connection refused")
	for _, tt := range []struct {
		name        string
		err, getErr error
		want        func(t *testing.T, err error)
	}{
		{"cancelled", nil, nil, func(t *testing.T, err error) { assert.NoError(t, err) }},
		{"refused by the validator", nil, fmt.Errorf("update failed: %w", refused), func(t *testing.T, err error) {
			var me *models.Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, models.CodeOrderNotCancellable, me.Code)
			assert.Equal(t, "The order is paid: only an order awaiting payment can be cancelled", me.Message)
		}},
		{"workflow finished", serviceerror.NewNotFound("workflow execution already completed"), nil, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, models.ErrOrderClosed)
		}},
		{"Temporal down", unavailable, nil, func(t *testing.T, err error) {
			var u *serviceerror.Unavailable
			assert.ErrorAs(t, err, &u, "kept as is: the API answers 503")
		}},
		{"another application error", nil, temporal.NewApplicationError("boom", "other"), func(t *testing.T, err error) {
			var me *models.Error
			assert.False(t, errors.As(err, &me))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc := &updateClient{err: tt.err, getErr: tt.getErr}
			err := NewClient(tc, "q").CancelOrder(t.Context(), "ord_1", "note")
			tt.want(t, err)
			assert.Equal(t, "order-ord_1", tc.got.WorkflowID)
			assert.Equal(t, UpdateCancel, tc.got.UpdateName)
			assert.Equal(t, client.WorkflowUpdateStageCompleted, tc.got.WaitForStage, "the answer waits for the outcome")
			assert.Equal(t, []any{CancelRequest{Note: "note"}}, tc.got.Args)
		})
	}
}
