package app

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// opsEvery is how often an API process reads the operator's snapshot
// (sqlstore.OpsSnapshot) for its gauges. The scrape reads the gauges, never
// the database, so it stays fast however many orders there are; the
// snapshot's queries touch only the rows still waiting.
const opsEvery = time.Minute

// opsStore is the database as the operator's metrics read it.
type opsStore interface {
	OpsSnapshot(ctx context.Context, now time.Time) (models.OpsSnapshot, error)
}

// opsMetrics are the gauges of the money and the work an operator on call
// watches (docs/production.md, "Metrics"; the alerts in
// docs/monitoring/memocart.rules.yml).
type opsMetrics struct {
	refunds, refundsOldest, refundsOwed            *prometheus.GaugeVec
	unmatched, unmatchedAmount, unmatchedOldest    *prometheus.GaugeVec
	ordersStuck                                    *prometheus.GaugeVec
	endpointsDisabled, eventsWaiting, eventsOldest *prometheus.GaugeVec
	lastRun                                        prometheus.Gauge
	// assets are the asset labels set at the last snapshot, by vector, so
	// an asset no longer owed is dropped rather than left at its old value.
	assets map[*prometheus.GaugeVec]map[[2]string]bool
}

func newOpsMetrics(reg prometheus.Registerer) *opsMetrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &opsMetrics{
		refunds:       gauge("memocart_refunds", "Refunds in each status, per mode.", "mode", "status"),
		refundsOldest: gauge("memocart_refunds_oldest_seconds", "Seconds since the oldest refund in each unsettled status last moved (0: none), per mode.", "mode", "status"),
		refundsOwed:   gauge("memocart_refunds_owed", "Amount the unsettled refunds owe back, per mode and asset.", "mode", "asset"),
		unmatched:     gauge("memocart_unmatched_payments", "Payments whose memo named no order and that no refund returns yet, per mode.", "mode"),
		unmatchedAmount: gauge("memocart_unmatched_payments_amount",
			"Amount of the unmatched payments, per mode and asset.", "mode", "asset"),
		unmatchedOldest: gauge("memocart_unmatched_payments_oldest_seconds", "Seconds since the oldest unmatched payment was stored (0: none), per mode.", "mode"),
		ordersStuck: gauge("memocart_orders_stuck",
			"Orders in a status longer than the service promises (models.StuckAfter: created 15 min past the payment deadline, paid 1 h, ordered 7 days, shipped 30 days without a write), per mode and status.", "mode", "status"),
		endpointsDisabled: gauge("memocart_webhook_endpoints_disabled", "Webhook endpoints disabled after failing (not deleted), per mode.", "mode"),
		eventsWaiting:     gauge("memocart_webhook_events_waiting", "Events recorded and not yet dispatched to their deliveries, per mode.", "mode"),
		eventsOldest:      gauge("memocart_webhook_events_oldest_waiting_seconds", "Seconds since the oldest event not yet dispatched was recorded (0: none), per mode.", "mode"),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memocart_ops_metrics_last_run_timestamp_seconds",
			Help: "Unix time this process last read the operator's snapshot (every minute; 0: not yet)."}),
		assets: map[*prometheus.GaugeVec]map[[2]string]bool{},
	}
	reg.MustRegister(m.refunds, m.refundsOldest, m.refundsOwed, m.unmatched, m.unmatchedAmount, m.unmatchedOldest,
		m.ordersStuck, m.endpointsDisabled, m.eventsWaiting, m.eventsOldest, m.lastRun)
	return m
}

// age is the seconds from at to now, 0 for no time.
func age(now, at time.Time) float64 {
	if at.IsZero() {
		return 0
	}
	return max(now.Sub(at), 0).Seconds()
}

// set makes the gauges say s. Every status of every mode has its series,
// at zero when empty, so a query over them is defined from the start.
func (m *opsMetrics) set(s models.OpsSnapshot) {
	for _, mode := range models.Modes {
		ops := s.Mode(mode)
		md := string(mode)
		for _, st := range models.RefundStatuses {
			m.refunds.WithLabelValues(md, string(st)).Set(float64(ops.Refunds[st]))
			if !st.Settled() {
				m.refundsOldest.WithLabelValues(md, string(st)).Set(age(s.At, ops.RefundsOldest[st]))
			}
		}
		m.unmatched.WithLabelValues(md).Set(float64(ops.Unmatched))
		m.unmatchedOldest.WithLabelValues(md).Set(age(s.At, ops.UnmatchedOldest))
		for _, st := range models.OpenStatuses {
			m.ordersStuck.WithLabelValues(md, string(st)).Set(float64(ops.OrdersStuck[st]))
		}
		m.endpointsDisabled.WithLabelValues(md).Set(float64(ops.EndpointsDisabled))
		m.eventsWaiting.WithLabelValues(md).Set(float64(ops.EventsWaiting))
		m.eventsOldest.WithLabelValues(md).Set(age(s.At, ops.EventsOldestWaiting))
	}
	m.setByAsset(m.refundsOwed, s, func(o *models.ModeOps) map[string]decimal.Decimal { return o.RefundsOwed })
	m.setByAsset(m.unmatchedAmount, s, func(o *models.ModeOps) map[string]decimal.Decimal { return o.UnmatchedOwed })
	m.lastRun.Set(float64(s.At.Unix()))
}

// setByAsset sets v's series of each mode and asset s has, and deletes
// those set before that s no longer has. A gauge is a float64, so an
// amount shows to about 15 digits; the database keeps the exact one.
func (m *opsMetrics) setByAsset(v *prometheus.GaugeVec, s models.OpsSnapshot, of func(*models.ModeOps) map[string]decimal.Decimal) {
	now := map[[2]string]bool{}
	for _, mode := range models.Modes {
		for asset, amount := range of(s.Mode(mode)) {
			v.WithLabelValues(string(mode), asset).Set(amount.InexactFloat64())
			now[[2]string{string(mode), asset}] = true
		}
	}
	for k := range m.assets[v] {
		if !now[k] {
			v.DeleteLabelValues(k[0], k[1])
		}
	}
	m.assets[v] = now
}

// watchOps keeps the operator's gauges until ctx ends, reading the
// snapshot every opsEvery; nothing without telemetry.
func (t *Telemetry) watchOps(ctx context.Context, st opsStore, log *slog.Logger) {
	if t == nil {
		return
	}
	m := newOpsMetrics(t.registry)
	every := opsEvery
	if TestHooks.OpsEvery > 0 {
		every = TestHooks.OpsEvery
	}
	repeatEvery(ctx, every, log, "reading the operator's metrics", func(ctx context.Context, now time.Time) error {
		s, err := st.OpsSnapshot(ctx, now)
		if err == nil {
			m.set(s)
		}
		return err
	})
}

// repeatEvery runs observe at once, then every interval, until ctx ends.
// A failed run is logged (what failed) and leaves the gauges it sets as
// they were, so their last-run timestamps age for the alerts to see.
func repeatEvery(ctx context.Context, interval time.Duration, log *slog.Logger, what string, observe func(context.Context, time.Time) error) {
	for {
		if err := observe(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Warn(what, slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// The payout account's metrics: its balance per asset, read from the chain
// every payoutEvery by each worker that pays live refunds, and the days of
// refunds it covers at the rate of the last coverageWindow.
const (
	payoutEvery    = 5 * time.Minute
	coverageWindow = 7 * 24 * time.Hour
)

// balanceReader is the live payout account as its metrics read it
// (payout.Payer).
type balanceReader interface {
	Balances(ctx context.Context) (map[string]decimal.Decimal, error)
}

// sentReader is the database as the payout's coverage reads it.
type sentReader interface {
	RefundsSentSince(ctx context.Context, mode models.Mode, since time.Time) (map[string]decimal.Decimal, error)
}

type payoutMetrics struct {
	balance, coverage *prometheus.GaugeVec
}

func newPayoutMetrics(reg prometheus.Registerer) *payoutMetrics {
	m := &payoutMetrics{
		balance: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "memocart_payout_balance",
			Help: "The payout account's balance per asset, as Horizon says (XLM includes the account's reserve), read every 5 minutes."}, []string{"mode", "asset"}),
		coverage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "memocart_payout_coverage_days",
			Help: "Days of refunds the payout account's balance covers at the rate sent over the last 7 days (+Inf when none was sent)."}, []string{"mode", "asset"}),
	}
	reg.MustRegister(m.balance, m.coverage)
	return m
}

// observe reads the balance and the week's refunds and sets the gauges
// of mode's payout account.
func (m *payoutMetrics) observe(ctx context.Context, mode models.Mode, payer balanceReader, st sentReader, now time.Time) error {
	balances, err := payer.Balances(ctx)
	if err != nil {
		return err
	}
	sent, err := st.RefundsSentSince(ctx, mode, now.Add(-coverageWindow))
	if err != nil {
		return err
	}
	days := decimal.NewFromInt(int64(coverageWindow / (24 * time.Hour)))
	for asset, b := range balances {
		m.balance.WithLabelValues(string(mode), asset).Set(b.InexactFloat64())
		perDay := sent[asset].Div(days)
		cover := math.Inf(1)
		if perDay.IsPositive() {
			cover = b.Div(perDay).InexactFloat64()
		}
		m.coverage.WithLabelValues(string(mode), asset).Set(cover)
	}
	return nil
}

// watchPayout keeps the live payout account's gauges until ctx ends;
// nothing without telemetry.
func (t *Telemetry) watchPayout(ctx context.Context, payer balanceReader, st sentReader, log *slog.Logger) {
	if t == nil {
		return
	}
	m := newPayoutMetrics(t.registry)
	repeatEvery(ctx, payoutEvery, log, "reading the payout account's balance", func(ctx context.Context, now time.Time) error {
		return m.observe(ctx, models.ModeLive, payer, st, now)
	})
}
