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

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
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
		Amount: decimal.RequireFromString("3.5"), Memo: "nobody", ReceivedAt: at}, "", time.Now()))
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

// countedBooks is the store with its reads of the books counted, or
// failing with err.
type countedBooks struct {
	*sqlstore.Store
	reads int
	err   error
}

func (c *countedBooks) ReadBooks(ctx context.Context, mode models.Mode, k models.BookParts) error {
	c.reads++
	if c.err != nil {
		return c.err
	}
	return c.Store.ReadBooks(ctx, mode, k)
}

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

// TestBooksMetrics: of two processes on one database, one reads the books
// per booksEvery and both report its counts per mode and its time; a
// failed read leaves the last check's counts and time.
func TestBooksMetrics(t *testing.T) {
	dsn := sqlstoretest.DSN(t, sqlstore.DialectSQLite)
	st, err := sqlstore.Open(t.Context(), dsn, nil)
	require.NoError(t, err)
	st.SetEventRenderer(sqlstoretest.Renderer{})
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(t.Context())
	require.NoError(t, err)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, st.SaveMatch(t.Context(), models.Payment{ID: "p1", Mode: models.ModeLive, Asset: "USDC",
		Amount: decimal.RequireFromString("2"), Memo: "nobody", ReceivedAt: at}, "", time.Now()))
	one, two := &countedBooks{Store: st}, &countedBooks{Store: st}
	regOne, regTwo := prometheus.NewRegistry(), prometheus.NewRegistry()
	mOne, mTwo := newBooksMetrics(regOne), newBooksMetrics(regTwo)

	require.NoError(t, mOne.observe(t.Context(), one, at))
	require.NoError(t, mTwo.observe(t.Context(), two, at.Add(time.Minute)))
	assert.Equal(t, []int{1, 0}, []int{one.reads, two.reads}, "one read of the books per period")
	for _, reg := range []*prometheus.Registry{regOne, regTwo} {
		assert.Equal(t, 0.0, gauge(t, reg, "memocart_reconcile_discrepancies", "live"))
		assert.Equal(t, float64(at.Unix()), gauge(t, reg, "memocart_reconcile_last_run_timestamp_seconds", ""))
	}

	raw, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite://"))
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Exec("UPDATE payments SET status = 'refund_due' WHERE id = 'p1'")
	require.NoError(t, err)
	later := at.Add(booksEvery)
	require.NoError(t, mTwo.observe(t.Context(), two, later))
	require.NoError(t, mOne.observe(t.Context(), one, later.Add(time.Minute)))
	assert.Equal(t, []int{1, 1}, []int{one.reads, two.reads}, "the next period's check, by whoever claims it")
	for _, reg := range []*prometheus.Registry{regOne, regTwo} {
		assert.Equal(t, 1.0, gauge(t, reg, "memocart_reconcile_discrepancies", "live"), "payment_unrefunded")
		assert.Equal(t, 0.0, gauge(t, reg, "memocart_reconcile_discrepancies", "test"))
		assert.Equal(t, float64(later.Unix()), gauge(t, reg, "memocart_reconcile_last_run_timestamp_seconds", ""))
	}

	one.err = errors.New("db down")
	require.Error(t, mOne.observe(t.Context(), one, later.Add(booksEvery)))
	assert.Equal(t, 1.0, gauge(t, regOne, "memocart_reconcile_discrepancies", "live"), "the last count stays")
	assert.Equal(t, float64(later.Unix()), gauge(t, regOne, "memocart_reconcile_last_run_timestamp_seconds", ""))
}

// TestReconcileCommandReadsTheChain: in live mode, with the receiving and
// payout accounts configured, reconcile compares the books with their
// payments on Horizon: the table shows the chain's totals, and a payment
// received on the chain that is not stored, or money out of the payout
// account for no refund, is a discrepancy that fails the command. Test
// mode reads no chain.
func TestReconcileCommandReadsTheChain(t *testing.T) {
	receiving := horizontest.AccountID("reconcile receiving")
	payoutAccount := horizontest.AccountID("reconcile payout")
	issuer := horizontest.AccountID("reconcile issuer")
	srv := horizontest.New(receiving)
	t.Cleanup(srv.Close)
	srv.SetUSDCIssuer(issuer)
	dir := t.TempDir()
	c := cli{t: t, vars: map[string]string{
		"MEMOCART_DATA_DIR": dir, "MEMOCART_STELLAR_NETWORK": "testnet", "MEMOCART_STELLAR_ACCOUNT": receiving,
		"MEMOCART_STELLAR_HORIZON_URL": srv.URL, "MEMOCART_STELLAR_USDC_ISSUER": issuer,
		"MEMOCART_STELLAR_PAYOUT_ACCOUNT": payoutAccount,
	}}
	c.ok("migrate")
	usdc := func(from, to, amount string) horizontest.Payment {
		return horizontest.Payment{From: from, To: to, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: issuer,
			Amount: amount, MemoType: "text", Memo: "nobody"}
	}
	tok := srv.AddPayment(usdc(horizontest.AccountID("a payer"), receiving, "3.5000000"))
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(dir, "memocart.db"), nil)
	require.NoError(t, err)
	require.NoError(t, st.SaveMatch(t.Context(), models.Payment{ID: "stellar:testnet:" + tok, Mode: models.ModeLive, Asset: "USDC",
		Amount: decimal.RequireFromString("3.5"), Memo: "nobody", ReceivedAt: time.Now().UTC()}, "", time.Now()))
	require.NoError(t, st.Close())

	out := c.ok("reconcile")
	assert.Regexp(t, `received on chain\s+3.5`, out)
	assert.Regexp(t, `paid out on chain\s+0`, out)
	assert.Contains(t, out, "the books balance")

	late := srv.AddPayment(usdc(horizontest.AccountID("a payer"), receiving, "1.0000000"))
	srv.AddPayment(usdc(payoutAccount, horizontest.AccountID("someone"), "2.0000000"))
	out, _, err = c.run("reconcile", "--mode", "live")
	require.ErrorIs(t, err, errBooksUnbalanced)
	assert.Contains(t, err.Error(), "2 discrepancies")
	assert.Regexp(t, `chain_payment_unrecorded\s+live\s+USDC\s+-\s+stellar:testnet:`+late, out)
	assert.Regexp(t, `payout_unrefunded\s+live\s+USDC`, out)
	assert.Regexp(t, `received on chain\s+4.5`, out)

	out, _, err = c.run("reconcile", "--json")
	require.ErrorIs(t, err, errBooksUnbalanced)
	var got reconcileOut
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Ledgers, 1)
	assert.Equal(t, "4.5", got.Ledgers[0].ChainReceived)
	assert.Equal(t, "2", got.Ledgers[0].ChainPaidOut)

	before := len(srv.Requests())
	assert.Contains(t, c.ok("reconcile", "--mode", "test"), "no payments")
	assert.Len(t, srv.Requests(), before, "test mode reads no chain")
}
