package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"

	"github.com/memocart/memocart/models"
)

// TestRefusalRoundTrip: an update's refusal reaches the client as the
// models error it was (code, message, field); a refusal of a code the
// caller does not expect, and any other failure, stay the service's own;
// a workflow that is not running is the caller's closed error.
func TestRefusalRoundTrip(t *testing.T) {
	refused := models.FieldError(models.CodeInvalidRefundDestination, "refund_destination.address", "No such account")
	got := updateAnswer(refusal(refused), models.ErrRefundClosed, models.CodeInvalidRefundDestination)
	assert.Equal(t, refused, got)

	other := refusal(models.NewError(models.CodeOrderNotCancellable))
	assert.NotErrorAs(t, updateAnswer(other, models.ErrRefundClosed, models.CodeInvalidRequest), new(*models.Error))

	assert.Equal(t, models.ErrOrderClosed,
		updateAnswer(serviceerror.NewNotFound("gone"), models.ErrOrderClosed, models.CodeInvalidRequest))
	plain := errors.New("connection reset")
	assert.Equal(t, plain, updateAnswer(plain, models.ErrOrderClosed))
	assert.NoError(t, updateAnswer(nil, models.ErrOrderClosed))
	assert.NoError(t, refusal(nil))
}
