package checkout

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/memocart/memocart/models"
)

// PaymentSetup is the receiving side of one mode.
type PaymentSetup struct {
	Address    string // the receiving account
	Network    string // "pubnet", "testnet" or "sandbox"
	USDCIssuer string // the accepted USDC issuer
	// NetworkPassphrase goes into SEP-0007 links for networks other than
	// pubnet; empty for pubnet and the sandbox.
	NetworkPassphrase string
	// Watched: payments to Address are read by a chain watcher, which
	// must have recorded where it starts before an order may be paid
	// there, or a payment made in between would never be seen.
	Watched bool
}

// RateProvider prices one asset in another (XLM in USD).
type RateProvider interface {
	Rate(ctx context.Context, base, quote string) (models.Rate, error)
}

// NewOrder is a customer's validated request to buy a cart.
type NewOrder struct {
	AccountID string
	Mode      models.Mode
	CartID    string
	Email     string
	Asset     models.Asset
	Address   models.ShippingAddress
	// Metadata is merged over the cart's (models.MergeMetadata).
	Metadata map[string]string
	// RefundDestination is where money owed back goes (validated); nil
	// when the client did not say.
	RefundDestination *models.RefundDestination
	// IdempotencyKey (may be empty) and RequestHash, a hash of the
	// normalised request, tell a retry from another request.
	IdempotencyKey string
	RequestHash    string
}

// Placed is the order a CreateOrder call answers with.
type Placed struct {
	Order models.Order
	// Created is false when the cart's order existed already: a retry of
	// the request that made it.
	Created bool
}

// NotStartedError is CreateOrder's answer for an order it committed but
// whose workflow it could not start: the reconciler starts it, and a
// retry of the same request returns the order.
type NotStartedError struct {
	OrderID string
	Err     error
}

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("order %s saved, its workflow not started: %v", e.OrderID, e.Err)
}

func (e *NotStartedError) Unwrap() error { return e.Err }

// CreateOrder creates the order for a cart, exactly once per cart, and
// starts its workflow. A mode takes orders only where payers can pay and
// orders can be bought, and only once its chain watcher (if any) knows
// where it starts reading. The order row is committed first, then its
// workflow is started; if the process dies in between, the reconciler (or
// the client's retry, which returns the same order) starts it. The events
// the creation recorded are handed to their delivery before it returns.
func (s *Orders) CreateOrder(ctx context.Context, r NewOrder) (Placed, error) {
	if !models.ValidID("crt", r.CartID) {
		// No cart has an id of this shape: no need to ask the database.
		return Placed{}, models.ErrCartNotFound
	}
	setup, ok := s.cfg.Payments[r.Mode]
	if !ok || setup.Address == "" {
		return Placed{}, models.Errorf(models.CodeLiveUnavailable, "Live payments are not configured on this deployment")
	}
	if why, ok := s.cfg.NoPurchasing[r.Mode]; ok {
		return Placed{}, models.Errorf(models.CodeLiveUnavailable, "%s", why)
	}
	if r.RefundDestination != nil {
		if err := checkDestination(*r.RefundDestination, s.own); err != nil {
			return Placed{}, err
		}
	}
	if setup.Watched {
		cursor, err := s.store.StellarCursor(ctx, setup.Network, setup.Address)
		if err != nil {
			return Placed{}, err
		}
		if cursor == "" {
			return Placed{}, models.Errorf(models.CodeLiveUnavailable, "Live payments are starting up; retry in a minute")
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	// An asset not quoted 1:1 needs a fresh rate, fetched before the
	// transaction (no I/O under the cart's lock) and locked on the order.
	// A failure only matters if a new order is built: a replay of an
	// existing order must succeed while the rate source is down.
	var (
		rate    *models.Rate
		rateErr error
		events  = -1 // unknown until the store says
	)
	if r.Asset.Floating() {
		q, err := s.freshRate(ctx, r.Mode, r.Asset.Code, now)
		rate, rateErr = &q, err
	}
	order, created, err := s.store.CreateOrder(ctx, models.OrderRequest{
		AccountID: r.AccountID, Mode: r.Mode, CartID: r.CartID,
		IdempotencyKey: r.IdempotencyKey, RequestHash: r.RequestHash, Now: now,
		Build: func(cart models.Cart) (models.Order, error) {
			if rateErr != nil {
				return models.Order{}, rateErr
			}
			id, err := models.NewID("ord", rand.Reader)
			if err != nil {
				return models.Order{}, err
			}
			return models.BuildOrder(cart, models.OrderTerms{
				ID: id, AccountID: r.AccountID, Mode: r.Mode, Email: r.Email, Asset: r.Asset, Address: r.Address,
				Metadata: r.Metadata, RefundDestination: r.RefundDestination,
				PayTo: setup.Address, Network: setup.Network, USDCIssuer: setup.USDCIssuer, Rate: rate,
				Now: now, Window: s.cfg.PaymentWindow,
			})
		},
		NewNumber:      func() (string, error) { return models.NewOrderNumber(rand.Reader) },
		EventsRecorded: func(n int) { events = n },
	})
	if err != nil {
		return Placed{}, err
	}
	if s.afterCommit != nil {
		if err := s.afterCommit(order); err != nil {
			return Placed{}, err
		}
	}
	if order.WorkflowStartedAt == nil {
		if err := s.startNew(ctx, order); err != nil {
			return Placed{}, &NotStartedError{OrderID: order.ID, Err: err}
		}
	}
	// No subscribed endpoint, no event: one read saved per order.
	if created && events != 0 {
		if err := s.events.DispatchOrderEvents(ctx, order.ID); err != nil {
			s.log.WarnContext(ctx, "dispatching webhook events; the sweep will retry", slog.String("order_id", order.ID), slog.Any("error", err))
		}
	}
	return Placed{Order: order, Created: created}, nil
}

// freshRate returns a rate for base in USD no older than RateMaxAge, or
// rate_unavailable: quoting on a stale or missing rate would guess.
func (s *Orders) freshRate(ctx context.Context, mode models.Mode, base string, now time.Time) (models.Rate, error) {
	p, ok := s.rates[mode]
	if !ok || p == nil {
		return models.Rate{}, models.NewError(models.CodeRateUnavailable)
	}
	r, err := p.Rate(ctx, base, "USD")
	if err != nil {
		s.log.WarnContext(ctx, "exchange rate unavailable", slog.String("asset", base), slog.Any("error", err))
		return models.Rate{}, models.NewError(models.CodeRateUnavailable)
	}
	if !r.FreshAt(now, s.cfg.RateMaxAge) {
		s.log.WarnContext(ctx, "exchange rate too old", slog.String("asset", base), slog.Time("at", r.At))
		return models.Rate{}, models.NewError(models.CodeRateUnavailable)
	}
	return r, nil
}

// startNew starts a new order's workflow; the mark that it exists joins
// the next batch (Config.StartMarkDelay), or is written now.
func (s *Orders) startNew(ctx context.Context, o models.Order) error {
	if s.marks == nil {
		return s.startWorkflow(ctx, o)
	}
	if err := s.workflows.StartOrder(ctx, o); err != nil {
		return err
	}
	s.marks.add(o.ID)
	return nil
}
