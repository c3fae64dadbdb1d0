package checkout

import (
	"context"

	"github.com/memocart/memocart/models"
)

// Payments hands payments to their orders' workflows: the payment
// matcher, which every payment source delivers through.
type Payments interface {
	// Attach attaches an unmatched payment to the order with the number
	// and hands it to the order's workflow, as the store allows
	// (models.CanAttachPayment).
	Attach(ctx context.Context, paymentID, orderNumber string) (models.PaymentOutcome, error)
}

// AttachPayment attaches a payment that matched no order to the order an
// operator names by its (normalised) number, for the payer who got the
// memo wrong: the order's workflow then counts it like any matched
// payment. The store decides whether it may (models.CanAttachPayment),
// under the lock of its transaction, before any workflow is told.
func (s *Service) AttachPayment(ctx context.Context, paymentID, orderNumber string) (models.PaymentOutcome, error) {
	return s.payments.Attach(ctx, paymentID, orderNumber)
}
