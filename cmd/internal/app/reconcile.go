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
	b, err := st.Books(ctx, mode)
	if err != nil {
		return err
	}
	ledgers, found := models.Reconcile(b)
	// The chain is read after the books: a payment the watcher has not
	// stored yet, or a payout not yet written sent, shows until the next
	// run; nothing the books hold can be newer than the chain.
	chain, err := readChain(ctx, e, mode)
	if err != nil {
		return err
	}
	if chain != nil {
		var more []models.Discrepancy
		ledgers, more = models.CompareChain(ledgers, b, *chain)
		found = append(found, more...)
	}
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

// readChain reads the live accounts' payments from Horizon
// (stellar.ChainReader), or nil when the chain is not compared: test mode
// only, or no receiving account configured. The payout account is
// MEMOCART_STELLAR_PAYOUT_ACCOUNT, else the address of the seed in
// MEMOCART_STELLAR_PAYOUT_SECRET_FILE; with neither, only the receiving
// side is compared.
func readChain(ctx context.Context, e Env, mode models.Mode) (*models.Chain, error) {
	if mode == models.ModeTest || e.Cfg.StellarAccount == "" {
		return nil, nil
	}
	payoutAccount := e.Cfg.StellarPayoutAccount
	if payoutAccount == "" && e.Cfg.StellarPayoutSecretFile != "" {
		signer, err := payout.NewFileSigner(e.Cfg.StellarPayoutSecretFile)
		if err != nil {
			return nil, fmt.Errorf("MEMOCART_STELLAR_PAYOUT_SECRET_FILE: %w", err)
		}
		payoutAccount = signer.Address()
	}
	r, err := stellar.NewChainReader(stellar.ChainConfig{
		HorizonURL: e.Cfg.StellarHorizonURL, Network: string(e.Cfg.StellarNetwork), USDCIssuer: e.Cfg.USDCIssuer,
	}, &http.Client{})
	if err != nil {
		return nil, fmt.Errorf("configuring the Horizon reader: %w", err)
	}
	c, err := r.Chain(ctx, e.Cfg.StellarAccount, payoutAccount)
	if err != nil {
		return nil, fmt.Errorf("reading the chain from %s: %w", e.Cfg.StellarHorizonURL, err)
	}
	return &c, nil
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

// booksEvery is how often each api process reconciles the books for its
// metrics: every run reads every payment, refund and order they reached
// (sqlstore.Books), so it is minutes, not seconds.
const booksEvery = 15 * time.Minute

// booksReader reads the books (sqlstore.Store).
type booksReader interface {
	Books(ctx context.Context, mode models.Mode) (models.Books, error)
}

// booksMetrics are what the api process reports of the books.
type booksMetrics struct {
	discrepancies *prometheus.GaugeVec
	lastRun       prometheus.Gauge
}

func newBooksMetrics(reg prometheus.Registerer) *booksMetrics {
	m := &booksMetrics{
		discrepancies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memocart_reconcile_discrepancies",
			Help: "Discrepancies memocart reconcile finds in the database's books, per mode, as of the last run (every 15 minutes).",
		}, []string{"mode"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memocart_reconcile_last_run_timestamp_seconds",
			Help: "Unix time the api process last reconciled the books.",
		}),
	}
	for _, mode := range []models.Mode{models.ModeTest, models.ModeLive} {
		m.discrepancies.WithLabelValues(string(mode))
	}
	reg.MustRegister(m.discrepancies, m.lastRun)
	return m
}

// observe reconciles the books once and sets the gauges; on an error it
// leaves them as they were (lastRun then ages, which its alert watches).
func (m *booksMetrics) observe(ctx context.Context, st booksReader) error {
	b, err := st.Books(ctx, "")
	if err != nil {
		return err
	}
	_, found := models.Reconcile(b)
	counts := map[models.Mode]int{}
	for _, d := range found {
		counts[d.Mode]++
	}
	for _, mode := range []models.Mode{models.ModeTest, models.ModeLive} {
		m.discrepancies.WithLabelValues(string(mode)).Set(float64(counts[mode]))
	}
	m.lastRun.SetToCurrentTime()
	return nil
}

// watchBooks reconciles the books every booksEvery until ctx ends, for
// the metrics; nothing without telemetry.
func (t *Telemetry) watchBooks(ctx context.Context, st booksReader, log *slog.Logger) {
	if t == nil {
		return
	}
	m := newBooksMetrics(t.registry)
	for {
		if err := m.observe(ctx, st); err != nil && ctx.Err() == nil {
			log.Warn("reconciling the books", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(booksEvery):
		}
	}
}
