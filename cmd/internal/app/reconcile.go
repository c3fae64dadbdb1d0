package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memocart/memocart/activities/stellar"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

const reconcileUsage = `Usage:
  memocart reconcile [--mode test|live] [--json]
      Check the database's books (both modes unless --mode says one): for each
      mode and asset, where every unit received went (kept by an order, sent
      back by a refund or by hand, settled another way, owed by an open refund
      or by hand, unmatched, or not through the books yet), and every
      discrepancy with the ids to look at. Exits non-zero when any is found.
      In live mode, with MEMOCART_STELLAR_ACCOUNT set, it also reads the
      receiving account's payments and the payout account's
      (MEMOCART_STELLAR_PAYOUT_ACCOUNT) from Horizon
      (MEMOCART_STELLAR_HORIZON_URL) and compares them with the books.
      docs/operators.md ("Reconciling the books") says what each means.

Works on the database of MEMOCART_DATABASE_URL (or the dev SQLite file, which it
never creates), reading it in one snapshot; it writes nothing.`

// errBooksUnbalanced is reconcile's answer when it found a discrepancy:
// the command exits non-zero, after printing them.
var errBooksUnbalanced = errors.New("the books do not balance")

// runReconcile is `memocart reconcile`.
func runReconcile(ctx context.Context, e Env, args []string) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() { fmt.Fprintln(e.Stderr, reconcileUsage) }
	mode := fs.String("mode", "", "only this mode's books: test or live")
	asJSON := fs.Bool("json", false, "print one JSON object: ledgers, discrepancies")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("reconcile takes no arguments, got %q", fs.Args())
	}
	if *mode != "" && !models.Mode(*mode).Valid() {
		return fmt.Errorf("--mode is test or live, not %q", *mode)
	}
	return onOperatorStore(func(ctx context.Context, e Env, st *sqlstore.Store, _ []string) error {
		return reconcile(ctx, e, st, models.Mode(*mode), *asJSON)
	})(ctx, e, nil)
}

func reconcile(ctx context.Context, e Env, st *sqlstore.Store, mode models.Mode, asJSON bool) error {
	k := models.NewBookkeeper()
	var parts models.BookParts = k
	var live *models.LiveBooks
	if chainCompared(e, mode) {
		live = &models.LiveBooks{}
		parts = models.EachOf(k, live)
	}
	if err := st.ReadBooks(ctx, mode, parts); err != nil {
		return err
	}
	ledgers, found := k.Finish()
	if live != nil {
		// The chain is read after the books: a payment the watcher has not
		// stored yet, or a payout not yet written sent, shows until the
		// next run; nothing the books hold can be newer than the chain.
		chain, err := readChain(ctx, e)
		if err != nil {
			return err
		}
		var more []models.Discrepancy
		ledgers, more = models.CompareChain(ledgers, live.Books, chain)
		found = append(found, more...)
	}
	var err error
	if asJSON {
		err = printJSON(e, reconcileOutOf(ledgers, found))
	} else {
		err = printBooks(e, ledgers, found)
	}
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %d discrepancies", errBooksUnbalanced, len(found))
	}
	return nil
}

// chainCompared reports whether reconcile compares the books of mode
// with the chain: the live books, with a receiving account configured.
func chainCompared(e Env, mode models.Mode) bool {
	return mode != models.ModeTest && e.Cfg.StellarAccount != ""
}

// readChain reads the live accounts' payments from Horizon
// (stellar.ChainReader). The payout account is
// MEMOCART_STELLAR_PAYOUT_ACCOUNT, else the address of the seed in
// MEMOCART_STELLAR_PAYOUT_SECRET_FILE; with neither, only the receiving
// side is compared.
func readChain(ctx context.Context, e Env) (models.Chain, error) {
	payoutAccount := e.Cfg.StellarPayoutAccount
	if payoutAccount == "" && e.Cfg.StellarPayoutSecretFile != "" {
		signer, err := payout.NewFileSigner(e.Cfg.StellarPayoutSecretFile)
		if err != nil {
			return models.Chain{}, fmt.Errorf("MEMOCART_STELLAR_PAYOUT_SECRET_FILE: %w", err)
		}
		payoutAccount = signer.Address()
	}
	r, err := stellar.NewChainReader(stellar.ChainConfig{
		HorizonURL: e.Cfg.StellarHorizonURL, Network: string(e.Cfg.StellarNetwork), USDCIssuer: e.Cfg.USDCIssuer,
	}, &http.Client{})
	if err != nil {
		return models.Chain{}, fmt.Errorf("configuring the Horizon reader: %w", err)
	}
	c, err := r.Chain(ctx, e.Cfg.StellarAccount, payoutAccount)
	if err != nil {
		return models.Chain{}, fmt.Errorf("reading the chain from %s: %w", e.Cfg.StellarHorizonURL, err)
	}
	return c, nil
}

// ledgerRows are the rows of one ledger's table, in the order printed.
func ledgerRows(l models.Ledger) [][2]string {
	if l.Chain {
		return append(bookRows(l),
			[2]string{"received on chain", l.ChainReceived.String()},
			[2]string{"paid out on chain", l.ChainPaidOut.String()})
	}
	return bookRows(l)
}

// bookRows are the rows of what the books hold.
func bookRows(l models.Ledger) [][2]string {
	return [][2]string{
		{"received", l.Received.String()},
		{"kept by orders", l.Kept.String()},
		{"sent back by refunds", l.Sent.String()},
		{"sent back by hand", l.SentByHand.String()},
		{"settled another way", l.Cancelled.String()},
		{"owed by open refunds", l.Owed.String()},
		{"owed by hand", l.OwedByHand.String()},
		{"unmatched", l.Unmatched.String()},
		{"not through the books yet", l.Pending.String()},
		{"difference", l.Difference.String()},
	}
}

func printBooks(e Env, ledgers []models.Ledger, found []models.Discrepancy) error {
	if len(ledgers) == 0 {
		fmt.Fprintln(e.Stdout, "no payments")
	}
	for _, l := range ledgers {
		rows := ledgerRows(l)
		width := 0
		for _, r := range rows {
			width = max(width, len(r[1]))
		}
		fmt.Fprintf(e.Stdout, "BOOKS %s %s\n", l.Mode, l.Asset)
		for _, r := range rows {
			fmt.Fprintf(e.Stdout, "  %-26s %*s\n", r[0], width, r[1])
		}
		fmt.Fprintln(e.Stdout)
	}
	if len(found) == 0 {
		fmt.Fprintln(e.Stdout, "the books balance: no discrepancy")
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "DISCREPANCIES (%d)\nKIND\tMODE\tASSET\tORDER\tPAYMENTS\tREFUNDS\tDETAIL\n", len(found))
	for _, d := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Kind, d.Mode, d.Asset, dash(d.OrderID),
			dash(strings.Join(d.PaymentIDs, ",")), dash(strings.Join(d.RefundIDs, ",")), d.Detail)
	}
	return tw.Flush()
}

// reconcileOut is reconcile --json.
type reconcileOut struct {
	Ledgers       []ledgerOut      `json:"ledgers"`
	Discrepancies []discrepancyOut `json:"discrepancies"`
}

type ledgerOut struct {
	Mode       string `json:"mode"`
	Asset      string `json:"asset"`
	Received   string `json:"received"`
	Kept       string `json:"kept"`
	Sent       string `json:"sent"`
	SentByHand string `json:"sent_by_hand"`
	Cancelled  string `json:"cancelled"`
	Owed       string `json:"owed"`
	OwedByHand string `json:"owed_by_hand"`
	Unmatched  string `json:"unmatched"`
	Pending    string `json:"pending"`
	Difference string `json:"difference"`
	// The chain's totals, when it was read (live mode).
	ChainReceived string `json:"chain_received,omitempty"`
	ChainPaidOut  string `json:"chain_paid_out,omitempty"`
}

type discrepancyOut struct {
	Kind       string   `json:"kind"`
	Mode       string   `json:"mode"`
	Asset      string   `json:"asset"`
	OrderID    string   `json:"order_id,omitempty"`
	PaymentIDs []string `json:"payment_ids"`
	RefundIDs  []string `json:"refund_ids"`
	Detail     string   `json:"detail"`
}

func reconcileOutOf(ledgers []models.Ledger, found []models.Discrepancy) reconcileOut {
	out := reconcileOut{Ledgers: []ledgerOut{}, Discrepancies: []discrepancyOut{}}
	for _, l := range ledgers {
		lo := ledgerOut{Mode: string(l.Mode), Asset: l.Asset, Received: l.Received.String(),
			Kept: l.Kept.String(), Sent: l.Sent.String(), SentByHand: l.SentByHand.String(), Cancelled: l.Cancelled.String(),
			Owed: l.Owed.String(), OwedByHand: l.OwedByHand.String(), Unmatched: l.Unmatched.String(),
			Pending: l.Pending.String(), Difference: l.Difference.String()}
		if l.Chain {
			lo.ChainReceived, lo.ChainPaidOut = l.ChainReceived.String(), l.ChainPaidOut.String()
		}
		out.Ledgers = append(out.Ledgers, lo)
	}
	for _, d := range found {
		out.Discrepancies = append(out.Discrepancies, discrepancyOut{Kind: string(d.Kind), Mode: string(d.Mode), Asset: d.Asset,
			OrderID: d.OrderID, PaymentIDs: nonNil(d.PaymentIDs), RefundIDs: nonNil(d.RefundIDs), Detail: d.Detail})
	}
	return out
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// booksEvery is how often a deployment checks its books for the metrics.
// A check reads every payment, refund and order they reached
// (sqlstore.ReadBooks), so it is minutes apart, and one process of the
// deployment makes it: the one that claims it (ClaimBooksCheck). Every
// process reads the last check's counts each booksReportEvery, so every
// replica's gauges say the same.
const (
	booksEvery       = 15 * time.Minute
	booksReportEvery = time.Minute
)

// booksStore is the database as the books' metrics use it (sqlstore.Store).
type booksStore interface {
	ReadBooks(ctx context.Context, mode models.Mode, k models.BookParts) error
	ClaimBooksCheck(ctx context.Context, now time.Time, every time.Duration) (bool, error)
	RecordBooksCheck(ctx context.Context, c models.BooksCheck) error
	LastBooksCheck(ctx context.Context) (models.BooksCheck, error)
}

// booksMetrics are what a process reports of the books.
type booksMetrics struct {
	discrepancies *prometheus.GaugeVec
	lastRun       prometheus.Gauge
}

func newBooksMetrics(reg prometheus.Registerer) *booksMetrics {
	m := &booksMetrics{
		discrepancies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memocart_reconcile_discrepancies",
			Help: "Discrepancies memocart reconcile found in the database's books, per mode, as of the deployment's last check (every 15 minutes).",
		}, []string{"mode"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memocart_reconcile_last_run_timestamp_seconds",
			Help: "Unix time the deployment last checked the books (0: not yet).",
		}),
	}
	for _, mode := range models.Modes {
		m.discrepancies.WithLabelValues(string(mode))
	}
	reg.MustRegister(m.discrepancies, m.lastRun)
	return m
}

// observe checks the books as of now if this process claims the check,
// then reports the last check recorded. On an error the gauges stay as
// they were (lastRun then ages, which its alert watches).
func (m *booksMetrics) observe(ctx context.Context, st booksStore, now time.Time) error {
	claimed, err := st.ClaimBooksCheck(ctx, now, booksEvery)
	if err != nil {
		return err
	}
	if claimed {
		k := models.NewBookkeeper()
		if err := st.ReadBooks(ctx, "", k); err != nil {
			return err
		}
		_, found := k.Finish()
		if err := st.RecordBooksCheck(ctx, models.NewBooksCheck(now, found)); err != nil {
			return err
		}
	}
	c, err := st.LastBooksCheck(ctx)
	if err != nil {
		return err
	}
	if c.CheckedAt.IsZero() {
		return nil
	}
	for _, mode := range models.Modes {
		m.discrepancies.WithLabelValues(string(mode)).Set(float64(c.Discrepancies[mode]))
	}
	m.lastRun.Set(float64(c.CheckedAt.Unix()))
	return nil
}

// watchBooks keeps the books' metrics until ctx ends (observe, every
// booksReportEvery); nothing without telemetry.
func (t *Telemetry) watchBooks(ctx context.Context, st booksStore, log *slog.Logger) {
	if t == nil {
		return
	}
	m := newBooksMetrics(t.registry)
	repeatEvery(ctx, booksReportEvery, log, "checking the books", func(ctx context.Context, now time.Time) error {
		return m.observe(ctx, st, now)
	})
}
