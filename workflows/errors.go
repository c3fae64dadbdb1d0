package workflows

import (
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// An update's refusal travels as a non-retryable application error whose
// type is the models error's code, its message the message and its details
// the field; the client turns it back (updateAnswer). The one translation
// each way, for every update (cancel, a refund's moves, a refund recorded
// by hand).

// refusal is err, a refused update (a *models.Error), as the update's
// failure; any other error is returned as it is.
func refusal(err error) error {
	var me *models.Error
	if err == nil || !errors.As(err, &me) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(me.Message, string(me.Code), nil, me.Field)
}

// updateAnswer is err, what an update answered, in the models' words: a
// refusal of one of codes as the *models.Error it was, a workflow that is
// not running as closed, anything else (the service's own failure) as it
// is.
func updateAnswer(err error, closed error, codes ...models.Code) error {
	var (
		appErr   *temporal.ApplicationError
		notFound *serviceerror.NotFound
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &appErr):
		for _, c := range codes {
			if appErr.Type() != string(c) {
				continue
			}
			var field string
			if appErr.HasDetails() {
				_ = appErr.Details(&field)
			}
			return &models.Error{Code: c, Message: appErr.Message(), Field: field}
		}
	case errors.As(err, &notFound):
		return closed
	}
	return err
}
