// Package checkout is the one home of Memocart's use cases, one type per
// aggregate, each built once by cmd from every part it needs (its
// constructor refuses a missing one) and handed to the HTTP handlers
// (package api) and the operator's commands: Carts (a product's preview,
// a priced cart), Orders (create an order from a cart, cancel it, start
// the workflows of orders committed without one), Refunds (the refunds the
// service pays out: destinations, claim links, operators' moves, runs to
// restart), HandRefunds (money an operator sent back by hand,
// refunds_legacy.go), TestHelpers (test mode's payment of an order) and
// the payment Matcher (every payment source delivers through it, in the
// API and in the worker).
// Callers decode their input, call a use case and encode its result.
// The decisions are the pure rule functions of models, which the order
// workflow and the store call too where they need the same rule.
//
// It lives under api because it sits where api does, between the
// service's callers and the order workflows, with api's dependencies and
// no more: it may import models, and workflows for the types of its
// requests to a workflow; never a concrete store, a Temporal client or a
// provider. Not under workflows: that tree is deterministic workflow code,
// which a service waiting on a database and a clock is not. The store, the
// workflow client, the catalogs, the rate sources and the sandbox chain
// reach it through the small interfaces declared here; cmd wires them.
package checkout

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
)

// Config is how orders are taken.
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

// ownAccounts are the service's Stellar accounts cfg names: the Payments
// addresses and the PayoutAccount.
func (cfg Config) ownAccounts() []string {
	var own []string
	for _, p := range cfg.Payments {
		own = append(own, p.Address)
	}
	if cfg.PayoutAccount != "" {
		own = append(own, cfg.PayoutAccount)
	}
	return own
}

// Clock and Logger are what every use case may be given: the time
// (time.Now when nil) and where it logs what it did on its own (discarded
// when nil).
type Clock = func() time.Time

func orNow(now Clock) Clock {
	if now == nil {
		return time.Now
	}
	return now
}

func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// missing answers the error of a constructor given nil parts, naming them.
func missing(useCase string, parts map[string]bool) error {
	var names []string
	for name, isNil := range parts {
		if isNil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return fmt.Errorf("checkout: %s needs %s", useCase, strings.Join(names, ", "))
}
