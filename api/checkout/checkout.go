// Package checkout is the one home of Memocart's order use cases: create
// an order from a cart, cancel it, start the workflows of orders committed
// without one, attach a payment an operator matched by hand, record
// refunds. The HTTP handlers (package api) and the operator's commands
// (cmd) decode their input, call a Service method and encode its result.
// The decisions are the pure rule functions of models, which the order
// workflow and the store call too where they need the same rule.
//
// It lives under api because it sits where api does, between the
// service's callers and the order workflows, with api's dependencies and
// no more: it may import models, and workflows for the types of its
// requests to a workflow; never a concrete store, a Temporal client or a
// provider. Not under workflows: that tree is deterministic workflow code,
// which a service waiting on a database and a clock is not. The store, the
// workflow client, the rate sources and the payment matcher reach it
// through the small interfaces declared here; api and cmd wire them.
package checkout

import (
	"log/slog"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
)

// Service carries out the order use cases. Each method uses only the
// dependencies it names; a caller wires the ones its use cases need.
type Service struct {
	cfg             Config
	orders          Orders
	workflows       OrderWorkflows
	rates           map[models.Mode]RateProvider
	refunds         Refunds
	refundWorkflows RefundWorkflows
	payouts         Payouts
	payoutWorkflows PayoutWorkflows
	payments        Payments
	now             func() time.Time
	log             *slog.Logger

	// refundRuns is payoutWorkflows's RefundRuns, if it has it;
	// runsSwept is up to when its last sweep looked (runsMu).
	refundRuns RefundRuns
	runsMu     sync.Mutex
	runsSwept  time.Time
	// ownAccounts are the service's Stellar accounts: the Payments
	// addresses and the PayoutAccount.
	ownAccounts []string

	// marks batches new orders' started marks (Config.StartMarkDelay).
	marks *startMarks
	// afterCommit, set only by tests, runs between committing an order
	// and starting its workflow (SetAfterOrderCommit).
	afterCommit func(models.Order) error
}

// Config is how the Service takes orders.
type Config struct {
	// Payments says where and how payers pay, per mode. A mode without
	// one cannot take orders (live_mode_unavailable).
	Payments map[models.Mode]PaymentSetup
	// NoPurchasing lists the modes whose orders could not be bought (no
	// buying provider is configured), with the reason clients read: their
	// orders are refused rather than taking money that cannot be spent.
	NoPurchasing map[models.Mode]string
	// PaymentWindow is how long a payer has to pay a new order
	// (models.DefaultPaymentWindow when zero).
	PaymentWindow time.Duration
	// RateMaxAge is how old an exchange rate may be to quote an order
	// (a minute when zero).
	RateMaxAge time.Duration
	// StartMarkDelay is how long the record that a new order's workflow
	// started may wait to share one write with other orders'; zero writes
	// it before CreateOrder returns.
	StartMarkDelay time.Duration
	// PayoutAccount is the Stellar account (G…) live refunds are paid
	// from, if known. It and the Payments addresses are never a refund's
	// destination (checkDestination).
	PayoutAccount string
}

// Deps are what a Service is built from.
type Deps struct {
	// Orders and Workflows serve CreateOrder, CancelOrder and
	// ReconcileOrders; Rates quote non-dollar assets for CreateOrder, per
	// mode.
	Orders    Orders
	Workflows OrderWorkflows
	Rates     map[models.Mode]RateProvider
	// Refunds and RefundWorkflows serve RecordOrderRefund and
	// RecordPaymentRefund.
	Refunds         Refunds
	RefundWorkflows RefundWorkflows
	// Payouts and PayoutWorkflows serve the refunds the service pays out
	// (payouts.go).
	Payouts         Payouts
	PayoutWorkflows PayoutWorkflows
	// Payments serves AttachPayment.
	Payments Payments
	// Now is the clock (time.Now when nil); Logger gets what the service
	// did on its own (discarded when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// New returns a Service on cfg and deps.
func New(cfg Config, deps Deps) *Service {
	if cfg.PaymentWindow <= 0 {
		cfg.PaymentWindow = models.DefaultPaymentWindow
	}
	if cfg.RateMaxAge <= 0 {
		cfg.RateMaxAge = time.Minute
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		cfg: cfg, orders: deps.Orders, workflows: deps.Workflows, rates: deps.Rates,
		refunds: deps.Refunds, refundWorkflows: deps.RefundWorkflows,
		payouts: deps.Payouts, payoutWorkflows: deps.PayoutWorkflows,
		payments: deps.Payments, now: deps.Now, log: deps.Logger,
	}
	s.refundRuns, _ = deps.PayoutWorkflows.(RefundRuns)
	for _, p := range cfg.Payments {
		s.ownAccounts = append(s.ownAccounts, p.Address)
	}
	if cfg.PayoutAccount != "" {
		s.ownAccounts = append(s.ownAccounts, cfg.PayoutAccount)
	}
	if cfg.StartMarkDelay > 0 {
		s.marks = &startMarks{delay: cfg.StartMarkDelay, write: deps.Orders.MarkWorkflowsStarted, now: deps.Now, log: deps.Logger}
	}
	return s
}

// FlushStartMarks writes the started marks still waiting for their batch;
// call it once no more orders are created.
func (s *Service) FlushStartMarks() {
	if s.marks != nil {
		s.marks.wait()
	}
}

// SetAfterOrderCommit installs f to run between committing an order and
// starting its workflow. Tests use it to make the process "die" at exactly
// that point; production never sets it.
func (s *Service) SetAfterOrderCommit(f func(models.Order) error) { s.afterCommit = f }
