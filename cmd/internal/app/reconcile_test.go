package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// TestReconcileCommand: balanced books print their table and exit zero; a
// payment whose row no longer says where it is exits non-zero, naming it.
func TestReconcileCommand(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": dir}}
	c.ok("migrate")
	db := filepath.Join(dir, "memocart.db")
	st, err := sqlstore.Open(t.Context(), "sqlite://"+db, nil)
	require.NoError(t, err)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, st.SaveMatch(t.Context(), models.Payment{ID: "p-stray", Mode: models.ModeLive, Asset: "USDC",
		Amount: decimal.RequireFromString("3.5"), Memo: "nobody", ReceivedAt: at}, ""))
	require.NoError(t, st.Close())

	out := c.ok("reconcile")
	assert.Contains(t, out, "BOOKS live USDC")
	assert.Regexp(t, `unmatched\s+3.5`, out)
	assert.Contains(t, out, "the books balance")
	assert.Contains(t, c.ok("reconcile", "--mode", "test"), "no payments")

	raw, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = raw.Exec("UPDATE payments SET status = 'refund_due' WHERE id = 'p-stray'")
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	out, _, err = c.run("reconcile", "--mode", "live")
	require.ErrorIs(t, err, errBooksUnbalanced)
	assert.Contains(t, err.Error(), "1 discrepancies")
	assert.Regexp(t, `payment_unrefunded\s+live\s+USDC\s+-\s+p-stray`, out)

	out, _, err = c.run("reconcile", "--json")
	require.True(t, errors.Is(err, errBooksUnbalanced), "%v", err)
	var got reconcileOut
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Discrepancies, 1)
	assert.Equal(t, "payment_unrefunded", got.Discrepancies[0].Kind)
	assert.Equal(t, []string{"p-stray"}, got.Discrepancies[0].PaymentIDs)
	require.Len(t, got.Ledgers, 1)
	assert.Equal(t, "3.5", got.Ledgers[0].OwedByHand)

	_, _, err = c.run("reconcile", "--mode", "prod")
	require.Error(t, err)
	assert.NotErrorIs(t, err, errBooksUnbalanced)
}

// booksFunc is a booksReader.
type booksFunc func() (models.Books, error)

func (f booksFunc) Books(context.Context, models.Mode) (models.Books, error) { return f() }

// gauge is the value of the gauge name (of mode, when given) in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name, mode string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" {
					got = l.GetValue()
				}
			}
			if got == mode {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no gauge %s{mode=%q}", name, mode)
	return 0
}

// TestBooksMetrics: the api process reports the discrepancies of each
// mode; a failed read leaves the last count and the time of the last run.
func TestBooksMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newBooksMetrics(reg)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	late := models.Books{Payments: []models.BookPayment{
		{ID: "p1", Mode: models.ModeLive, Asset: "USDC", Amount: decimal.RequireFromString("2"), State: models.PaymentStateRefundDue},
		{ID: "p2", Mode: models.ModeLive, Asset: "USDC", Amount: decimal.RequireFromString("3"), State: models.PaymentStateRefundDue},
		{ID: "p3", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("3"), State: models.PaymentStateRefunded,
			RefundedAt: &at, RefundTx: strings.Repeat("a", 64)},
	}}
	require.NoError(t, m.observe(t.Context(), booksFunc(func() (models.Books, error) { return late, nil })))
	assert.Equal(t, 2.0, gauge(t, reg, "memocart_reconcile_discrepancies", "live"))
	assert.Equal(t, 0.0, gauge(t, reg, "memocart_reconcile_discrepancies", "test"))
	ran := gauge(t, reg, "memocart_reconcile_last_run_timestamp_seconds", "")
	assert.Greater(t, ran, 1e9)

	err := m.observe(t.Context(), booksFunc(func() (models.Books, error) { return models.Books{}, errors.New("db down") }))
	require.Error(t, err)
	assert.Equal(t, 2.0, gauge(t, reg, "memocart_reconcile_discrepancies", "live"), "the last count stays")
	assert.Equal(t, ran, gauge(t, reg, "memocart_reconcile_last_run_timestamp_seconds", ""))

	require.NoError(t, m.observe(t.Context(), booksFunc(func() (models.Books, error) { return models.Books{}, nil })))
	assert.Equal(t, 0.0, gauge(t, reg, "memocart_reconcile_discrepancies", "live"), "balanced again")
}
