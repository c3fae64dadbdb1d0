package app

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// series are the values of the metric name in reg, by their labels
// written "k=v,k=v" in the labels' order.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			out[strings.Join(labels, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestOpsMetrics: the gauges say the snapshot, every status of every mode
// at zero when empty, ages as of the snapshot; an asset no longer owed
// loses its series.
func TestOpsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newOpsMetrics(reg)
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s := models.OpsSnapshot{At: at}
	test := s.Mode(models.ModeTest)
	test.Refunds[models.RefundAwaitingDestination] = 2
	test.Refunds[models.RefundSent] = 5
	test.RefundsOldest[models.RefundAwaitingDestination] = at.Add(-time.Hour)
	test.RefundsOwed["USDC"] = decimal.RequireFromString("12.5")
	test.RefundsOwed["XLM"] = decimal.RequireFromString("40.0000001")
	test.Unmatched = 1
	test.UnmatchedOwed["USDC"] = decimal.RequireFromString("3.25")
	test.UnmatchedOldest = at.Add(-2 * time.Hour)
	test.OrdersStuck[models.OrderPaid] = 3
	live := s.Mode(models.ModeLive)
	live.EndpointsDisabled = 1
	live.EventsWaiting = 4
	live.EventsOldestWaiting = at.Add(-5 * time.Minute)
	m.set(s)

	refunds := series(t, reg, "memocart_refunds")
	assert.Len(t, refunds, 2*len(models.RefundStatuses), "every status of every mode")
	assert.Equal(t, 2.0, refunds["mode=test,status=awaiting_destination"])
	assert.Equal(t, 5.0, refunds["mode=test,status=sent"])
	assert.Equal(t, 0.0, refunds["mode=live,status=failed"])
	oldest := series(t, reg, "memocart_refunds_oldest_seconds")
	assert.Equal(t, 3600.0, oldest["mode=test,status=awaiting_destination"])
	assert.Equal(t, 0.0, oldest["mode=test,status=sending"])
	assert.NotContains(t, oldest, "mode=test,status=sent", "settled refunds do not wait")
	assert.Equal(t, map[string]float64{"asset=USDC,mode=test": 12.5, "asset=XLM,mode=test": 40.0000001}, series(t, reg, "memocart_refunds_owed"))
	assert.Equal(t, map[string]float64{"mode=test": 1, "mode=live": 0}, series(t, reg, "memocart_unmatched_payments"))
	assert.Equal(t, map[string]float64{"asset=USDC,mode=test": 3.25}, series(t, reg, "memocart_unmatched_payments_amount"))
	assert.Equal(t, map[string]float64{"mode=test": 7200, "mode=live": 0}, series(t, reg, "memocart_unmatched_payments_oldest_seconds"))
	stuck := series(t, reg, "memocart_orders_stuck")
	assert.Len(t, stuck, 2*len(models.OpenStatuses))
	assert.Equal(t, 3.0, stuck["mode=test,status=paid"])
	assert.Equal(t, map[string]float64{"mode=test": 0, "mode=live": 1}, series(t, reg, "memocart_webhook_endpoints_disabled"))
	assert.Equal(t, map[string]float64{"mode=test": 0, "mode=live": 4}, series(t, reg, "memocart_webhook_events_waiting"))
	assert.Equal(t, map[string]float64{"mode=test": 0, "mode=live": 300}, series(t, reg, "memocart_webhook_events_oldest_waiting_seconds"))
	assert.Equal(t, map[string]float64{"": float64(at.Unix())}, series(t, reg, "memocart_ops_metrics_last_run_timestamp_seconds"))

	next := models.OpsSnapshot{At: at.Add(time.Minute)}
	next.Mode(models.ModeTest).RefundsOwed["USDC"] = decimal.RequireFromString("12.5")
	m.set(next)
	assert.Equal(t, map[string]float64{"asset=USDC,mode=test": 12.5}, series(t, reg, "memocart_refunds_owed"), "XLM is owed no more")
	assert.Empty(t, series(t, reg, "memocart_unmatched_payments_amount"))
	assert.Equal(t, 0.0, series(t, reg, "memocart_refunds")["mode=test,status=awaiting_destination"])
}

// BenchmarkScrape is one GET /metrics of an API process's registry: the
// HTTP metrics of 40 routes by method and 8 statuses, the order, payment
// and books metrics, and (ops) the operator's gauges of both modes and two
// assets, against the same registry without them (reference). A scrape
// reads gauges kept in memory (watchOps refreshes them each minute), never
// the database, so its cost is the same at a million orders as at none.
func BenchmarkScrape(b *testing.B) {
	for _, ops := range []bool{false, true} {
		name := "reference"
		if ops {
			name = "ops"
		}
		b.Run(name, func(b *testing.B) {
			tel := &Telemetry{registry: prometheus.NewRegistry()}
			tel.register()
			newBooksMetrics(tel.registry)
			if ops {
				m := newOpsMetrics(tel.registry)
				s := models.OpsSnapshot{At: time.Now()}
				for _, mode := range []models.Mode{models.ModeTest, models.ModeLive} {
					o := s.Mode(mode)
					o.RefundsOwed["USDC"], o.RefundsOwed["XLM"] = decimal.RequireFromString("10"), decimal.RequireFromString("20")
					o.UnmatchedOwed["USDC"] = decimal.RequireFromString("1")
				}
				m.set(s)
				newPayoutMetrics(tel.registry).balance.WithLabelValues("live", "USDC").Set(1)
			}
			for r := range 40 {
				for _, st := range []int{200, 201, 400, 401, 404, 409, 429, 503} {
					tel.ObserveRequest(fmt.Sprintf("/v1/route%d/:id", r), http.MethodGet, st, time.Millisecond)
				}
			}
			h := promhttp.HandlerFor(tel.registry, promhttp.HandlerOpts{})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			var size int
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("scrape: %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size)/1024, "KiB")
		})
	}
}

type fixedBalances map[string]decimal.Decimal

func (b fixedBalances) Balances(context.Context) (map[string]decimal.Decimal, error) { return b, nil }

type fixedSent map[string]decimal.Decimal

func (s fixedSent) RefundsSentSince(_ context.Context, mode models.Mode, _ time.Time) (map[string]decimal.Decimal, error) {
	if mode != models.ModeLive {
		return nil, nil
	}
	return s, nil
}

// TestPayoutMetrics: the balance per asset, and the days it covers at
// the week's rate: 700 USDC sent in 7 days is 100 a day, so 250 covers
// 2.5 days; an asset none was sent of is covered for ever.
func TestPayoutMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newPayoutMetrics(reg)
	d := decimal.RequireFromString
	require.NoError(t, m.observe(t.Context(), models.ModeLive, fixedBalances{"USDC": d("250"), "XLM": d("40")},
		fixedSent{"USDC": d("700")}, time.Now()))
	assert.Equal(t, map[string]float64{"asset=USDC,mode=live": 250, "asset=XLM,mode=live": 40}, series(t, reg, "memocart_payout_balance"))
	cover := series(t, reg, "memocart_payout_coverage_days")
	assert.Equal(t, 2.5, cover["asset=USDC,mode=live"])
	assert.True(t, math.IsInf(cover["asset=XLM,mode=live"], 1))
}
