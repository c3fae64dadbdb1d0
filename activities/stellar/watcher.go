package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
)

// Config configures a Watcher. Zero durations and PageLimit take the
// documented defaults.
type Config struct {
	HorizonURL string // e.g. https://horizon.stellar.org
	Network    string // "pubnet" or "testnet": part of payment ids
	Account    string // the receiving account G...
	USDCIssuer string // the accepted USDC issuer; USDC from any other issuer is not USDC
	PageLimit  int    // records per page, default 200 (Horizon's maximum)
	// PayoutAccount is the account (G...) refunds are paid from, if any.
	// A payment from it is not a payer's: it is never saved as a payment
	// (so never matched, never refunded) but raised as
	// AlertPaymentFromPayoutAccount. Refunding it would pay the payout
	// account's money back to itself, or loop through a destination.
	PayoutAccount string
	// SweepEvery is how often the stream is closed to page again over what
	// it delivered, catching anything it skipped. Default 30s.
	SweepEvery time.Duration
	// StreamIdle reconnects a stream that has sent nothing, not even a
	// keep-alive, for this long. Default 60s.
	StreamIdle time.Duration
	// MinBackoff and MaxBackoff bound the jittered exponential wait before
	// reconnecting, default 1s and 60s. A Retry-After header lengthens it.
	MinBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds each page request, default 30s. Streams have no
	// overall deadline; StreamIdle bounds their silences instead.
	RequestTimeout time.Duration
	// ProgressEvery is how often Run reports progress while nothing
	// happens, default 5s.
	ProgressEvery time.Duration
	// HandleConcurrency is how many saved payments are handed to the
	// matcher at once. 1 (the default) hands them on in order; more lets
	// the matcher's database lookups and workflow signals overlap. Order
	// between payments does not matter to matching (each is counted once,
	// by id, and amounts add up), and a payment saved but not handed on
	// when the run ends is re-driven by the service's reconciler.
	HandleConcurrency int
	// Observer, if not nil, is told how far behind the chain the watcher
	// runs (the service's metrics).
	Observer Observer
}

// Observer is told what the watcher's lag is made of. Calls may come from
// several goroutines.
type Observer interface {
	// PaymentSaved: a payment not seen before was saved, lag after the
	// ledger holding it closed (Horizon's created_at). Payments found by
	// a catch-up after an outage show the outage in their lag.
	PaymentSaved(lag time.Duration)
	// CaughtUp: a scan has just read up to the newest payment Horizon
	// holds for the account. A healthy watcher does so every SweepEvery;
	// a stuck one stops.
	CaughtUp()
}

type noObserver struct{}

func (noObserver) PaymentSaved(time.Duration) {}
func (noObserver) CaughtUp()                  {}

// Defaults of Config.
const (
	DefaultPageLimit      = 200
	DefaultSweepEvery     = 30 * time.Second
	DefaultStreamIdle     = 60 * time.Second
	DefaultMinBackoff     = time.Second
	DefaultMaxBackoff     = 60 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultProgressEvery  = 5 * time.Second
)

// Alert kinds the watcher raises. Each needs an operator.
const (
	// AlertBeforeHistory: Horizon no longer holds the history after the
	// saved cursor, so payments in the gap cannot be read from it. The
	// watcher keeps retrying and never skips ahead; an operator must
	// point it at a Horizon with deeper history, or check the gap by other
	// means and move the cursor.
	AlertBeforeHistory = "stellar_before_history"
	// AlertBadRecord: a record that pays the account cannot be read (an
	// amount that is not a Stellar amount, no joined transaction). The
	// watcher stays on it rather than skip a customer's payment.
	AlertBadRecord = "stellar_bad_record"
	// AlertAccountNotFound: Horizon does not know the receiving account
	// (not funded yet, wrong network, or a testnet reset).
	AlertAccountNotFound = "stellar_account_not_found"
	// AlertRequestRejected: Horizon rejected the request itself; Run
	// returns the error.
	AlertRequestRejected = "stellar_request_rejected"
	// AlertPaymentFromPayoutAccount: the receiving account was paid from
	// the payout account (Config.PayoutAccount), most likely a refund
	// whose destination was the receiving account. It is not recorded as
	// a payment; an operator decides what the money is.
	AlertPaymentFromPayoutAccount = "stellar_payment_from_payout_account"
	// AlertAccountMerge: another account was merged into the receiving
	// account. Its XLM (read from the operation's effects) is recorded as
	// an unmatched payment from the merged account; if the effects credit
	// no amount, nothing is recorded and the alert says so, naming the
	// operation. An operator decides what the money is.
	AlertAccountMerge = "stellar_account_merge"
	// AlertClaimableBalance: a claimable balance names the receiving
	// account as a claimant. It is not the account's money until claimed,
	// so it is not recorded; claiming it is an operator's decision.
	// Raised once per balance per Run, from the catch-up scans.
	AlertClaimableBalance = "stellar_claimable_balance"
)

// realertEvery repeats an alert for a condition that persists, so a lost
// alert does not leave it unnoticed.
const realertEvery = time.Hour

// Store persists what the watcher saw. SaveStellarPayments stores the
// payments (idempotently, keyed by payment ID) and advances the cursor in
// one database transaction, so a crash never loses or double-counts a
// payment.
type Store interface {
	// StellarCursor returns the saved paging cursor, "" if none was saved.
	StellarCursor(ctx context.Context, network, account string) (string, error)
	SaveStellarPayments(ctx context.Context, network, account string, ps []models.Payment, cursor string, now time.Time) error
}

// Alerter receives conditions an operator must act on.
type Alerter interface {
	Alert(ctx context.Context, kind, detail string)
}

// Watcher follows one account's incoming payments on one Horizon server.
type Watcher struct {
	cfg    Config
	base   string // HorizonURL without a trailing slash
	hc     *http.Client
	store  Store
	handle models.PaymentHandler
	alerts Alerter
	log    *slog.Logger
	conv   converter
}

// NewWatcher validates cfg and returns a watcher. hc may be nil for a
// default client; it must not set Timeout, which would cut every stream.
// alerts and log may be nil.
func NewWatcher(cfg Config, hc *http.Client, store Store, handle models.PaymentHandler, alerts Alerter, log *slog.Logger) (*Watcher, error) {
	cfg = withDefaults(cfg)
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }

	u, err := url.Parse(cfg.HorizonURL)
	switch {
	case err != nil:
		bad("HorizonURL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.RawQuery != "", u.Fragment != "":
		bad("HorizonURL %q: want an http(s) base URL without query", cfg.HorizonURL)
	}
	if cfg.Network != "pubnet" && cfg.Network != "testnet" {
		bad("Network %q: want pubnet or testnet", cfg.Network)
	}
	if models.ValidateStellarAccount(cfg.Account) != nil {
		bad("Account %q is not a valid Stellar account id", cfg.Account)
	}
	if cfg.PayoutAccount != "" && models.ValidateStellarAccount(cfg.PayoutAccount) != nil {
		bad("PayoutAccount %q is not a valid Stellar account id", cfg.PayoutAccount)
	}
	if models.ValidateStellarAccount(cfg.USDCIssuer) != nil {
		bad("USDCIssuer %q is not a valid Stellar account id", cfg.USDCIssuer)
	}
	if cfg.PageLimit < 1 || cfg.PageLimit > DefaultPageLimit {
		bad("PageLimit %d: want 1..%d", cfg.PageLimit, DefaultPageLimit)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"SweepEvery", cfg.SweepEvery}, {"StreamIdle", cfg.StreamIdle}, {"MinBackoff", cfg.MinBackoff},
		{"MaxBackoff", cfg.MaxBackoff}, {"RequestTimeout", cfg.RequestTimeout}, {"ProgressEvery", cfg.ProgressEvery},
	} {
		if d.d < 0 {
			bad("%s %v is negative", d.name, d.d)
		}
	}
	if cfg.MinBackoff > cfg.MaxBackoff {
		bad("MinBackoff %v exceeds MaxBackoff %v", cfg.MinBackoff, cfg.MaxBackoff)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	if hc.Timeout != 0 {
		bad("http.Client.Timeout must be 0: it would cut streams; requests are bounded by RequestTimeout and StreamIdle")
	}
	if store == nil {
		bad("a Store is required")
	}
	if handle == nil {
		bad("a PaymentHandler is required")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("stellar watcher config: %w", errors.Join(problems...))
	}
	if alerts == nil {
		alerts = noAlerts{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	return &Watcher{
		cfg:    cfg,
		base:   strings.TrimRight(cfg.HorizonURL, "/"),
		hc:     hc,
		store:  store,
		handle: handle,
		alerts: alerts,
		log:    log.With(slog.String("component", "stellar_watcher"), slog.String("network", cfg.Network)),
		conv:   converter{network: cfg.Network, account: cfg.Account, usdcIssuer: cfg.USDCIssuer},
	}, nil
}

func withDefaults(cfg Config) Config {
	setDefault := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	if cfg.PageLimit == 0 {
		cfg.PageLimit = DefaultPageLimit
	}
	setDefault(&cfg.SweepEvery, DefaultSweepEvery)
	setDefault(&cfg.StreamIdle, DefaultStreamIdle)
	setDefault(&cfg.MinBackoff, DefaultMinBackoff)
	setDefault(&cfg.MaxBackoff, DefaultMaxBackoff)
	setDefault(&cfg.RequestTimeout, DefaultRequestTimeout)
	setDefault(&cfg.ProgressEvery, DefaultProgressEvery)
	return cfg
}

type noAlerts struct{}

func (noAlerts) Alert(context.Context, string, string) {}

// Reasons a stream ends that are part of normal operation.
var (
	errSweepDue    = errors.New("sweep due")
	errStreamIdle  = errors.New("stream idle")
	errStreamEnded = errors.New("stream ended")
)

// Run watches until ctx ends, returning ctx.Err(), or until Horizon rejects
// the watcher's requests as malformed. Every other failure (network,
// Horizon, store) is retried with backoff.
//
// On the very first start (no saved cursor) the watcher starts after the
// newest payment the account already has, or from the beginning if it has
// none, and saves that cursor at once: older payments predate Memocart's
// use of the account and are not delivered, while every later gap (a
// crash, a deploy, an outage) resumes from a saved cursor, never from
// "now". Deploy the watcher before taking the first live order.
//
// progress, if not nil, is called with the saved cursor after each saved
// page or streamed payment, and every ProgressEvery while nothing happens
// (the caller turns it into an activity heartbeat); the cursor is "" until
// the saved one has been read. Calls never overlap, but may come from
// another goroutine than Run's.
//
// Run one watcher per network and account at a time (a singleton
// workflow's activity): two would both save, and one could move the saved
// cursor back, which the idempotent store absorbs but handlers then see
// payments again.
func (w *Watcher) Run(ctx context.Context, progress func(cursor string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	r := &run{
		w:            w,
		bo:           newBackoff(w.cfg.MinBackoff, w.cfg.MaxBackoff),
		seen:         map[string]string{},
		claimAlerted: map[string]bool{},
		alertedAt:    map[string]time.Time{},
		progress:     progress,
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		if r.jobs != nil {
			close(r.jobs)
		}
		wg.Wait()
	}()
	wg.Go(func() { r.heartbeat(ctx) })
	if n := w.cfg.HandleConcurrency; n > 1 {
		r.jobs = make(chan models.Payment, n)
		for range n {
			wg.Go(func() {
				for p := range r.jobs {
					r.handle(ctx, p)
				}
			})
		}
	}

	for {
		err := r.step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait, fatal := r.afterStep(ctx, err)
		if fatal != nil {
			return fatal
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// run is the state of one Run call.
type run struct {
	w       *Watcher
	started bool
	// cursor is the saved cursor: every record up to it has been seen and
	// every payment among them saved.
	cursor string
	// sweepFrom is the cursor as of the last completed page scan. The next
	// scan pages from there, over everything the stream delivered since,
	// and saves what the stream skipped.
	sweepFrom string
	// seen holds the ids (and paging tokens) of payments saved after
	// sweepFrom, so a scan or a repeated event never saves one twice.
	seen map[string]string
	// claimAlerted holds the claimable balances already raised.
	claimAlerted map[string]bool
	bo           *backoff
	alertedAt    map[string]time.Time

	pmu      sync.Mutex // serialises progress calls
	progress func(string)
	reported string

	// jobs feeds the handler pool when HandleConcurrency > 1.
	jobs chan models.Payment
}

// step starts if needed, scans, then streams until the next sweep is due
// or the stream fails.
func (r *run) step(ctx context.Context) error {
	if !r.started {
		if err := r.start(ctx); err != nil {
			return err
		}
	}
	if err := r.scan(ctx); err != nil {
		return err
	}
	return r.stream(ctx, time.Now().Add(r.w.cfg.SweepEvery))
}

// start loads the saved cursor, choosing and saving one on the first start.
func (r *run) start(ctx context.Context) error {
	w := r.w
	cursor, err := w.store.StellarCursor(ctx, w.cfg.Network, w.cfg.Account)
	if err != nil {
		return fmt.Errorf("reading the saved cursor: %w", err)
	}
	if cursor == "" {
		recs, err := w.fetchPage(ctx, url.Values{"order": {"desc"}, "limit": {"1"}})
		if err != nil {
			return fmt.Errorf("finding the newest existing payment: %w", err)
		}
		// "0" means the beginning: an account without payments has
		// nothing to skip. It is not "", which means nothing was saved.
		cursor = "0"
		if len(recs) > 0 {
			if recs[0].PagingToken == "" {
				return fmt.Errorf("%w: newest record has no paging_token", errBadRecord)
			}
			cursor = recs[0].PagingToken
		}
		if err := w.store.SaveStellarPayments(ctx, w.cfg.Network, w.cfg.Account, nil, cursor, time.Now()); err != nil {
			return fmt.Errorf("saving the starting cursor: %w", err)
		}
		w.log.InfoContext(ctx, "first start: watching payments after the newest existing one", slog.String("cursor", cursor))
	} else {
		w.log.InfoContext(ctx, "resuming from the saved cursor", slog.String("cursor", cursor))
	}
	r.cursor, r.sweepFrom, r.started = cursor, cursor, true
	r.report(cursor)
	return nil
}

// scan pages from sweepFrom to the newest record, saving every payment not
// saved yet. From the saved cursor it is the catch-up after a gap; from
// further back it is the sweep over what the stream delivered.
func (r *run) scan(ctx context.Context) error {
	limit := r.w.cfg.PageLimit
	from := r.sweepFrom
	for {
		q := url.Values{}
		q.Set("cursor", from)
		q.Set("join", "transactions")
		q.Set("order", "asc")
		q.Set("limit", strconv.Itoa(limit))
		recs, err := r.w.fetchPage(ctx, q)
		if err != nil {
			return err
		}
		if err := r.commit(ctx, recs); err != nil {
			return err
		}
		if len(recs) < limit {
			break
		}
		last := recs[len(recs)-1].PagingToken
		if !tokenAfter(last, from) {
			// A full page that does not move forward would loop forever.
			return fmt.Errorf("payments page after cursor %s ends at %s", from, last)
		}
		from = last
	}
	r.w.cfg.Observer.CaughtUp()
	r.checkClaimable(ctx)
	r.sweepFrom = r.cursor
	for id, token := range r.seen {
		if !tokenAfter(token, r.sweepFrom) {
			delete(r.seen, id)
		}
	}
	clear(r.alertedAt)
	return nil
}

// stream follows the live stream from the saved cursor until the sweep is
// due (errSweepDue), the server ends it (errStreamEnded), it stays silent
// (errStreamIdle) or fails.
func (r *run) stream(ctx context.Context, until time.Time) error {
	idleAfter := r.w.cfg.StreamIdle
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sctx, cancelDeadline := context.WithDeadlineCause(sctx, until, errSweepDue)
	defer cancelDeadline()
	// The idle timer runs from before the request: a server that never
	// answers is as silent as one that stops sending.
	idle := time.AfterFunc(idleAfter, func() { cancel(errStreamIdle) })
	defer idle.Stop()

	resp, err := r.w.openStream(sctx, r.cursor)
	if err != nil {
		return streamCause(sctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp.Body, func() { idle.Reset(idleAfter) })
	for {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			return errStreamEnded
		}
		if err != nil {
			return streamCause(sctx, fmt.Errorf("reading payments stream: %w", err))
		}
		switch {
		case ev.Event == "close" || ev.Data == `"byebye"`:
			return errStreamEnded
		case ev.Event == "error":
			return fmt.Errorf("payments stream error event: %s", ev.Data)
		case ev.Event == "open" || ev.Data == `"hello"`:
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(ev.Data), &rec); err != nil {
			return fmt.Errorf("decoding streamed record %q: %w", ev.ID, err)
		}
		// Saving and handling take the time they take; that is not the
		// server being silent.
		idle.Stop()
		if err := r.commit(ctx, []record{rec}); err != nil {
			return err
		}
		r.bo.reset()
		idle.Reset(idleAfter)
	}
}

// streamCause prefers the watcher's own reason for ending a stream over
// the transport error it caused.
func streamCause(sctx context.Context, err error) error {
	if cause := context.Cause(sctx); errors.Is(cause, errSweepDue) || errors.Is(cause, errStreamIdle) {
		return cause
	}
	return err
}

// commit saves the payments among recs that are new, with the cursor
// advanced past all of recs, in one store call, and only then hands each
// payment to the matcher. A handler failure is logged and left to the
// service's reconciler: the payment is saved, and the cursor stays. A
// payment from the payout account is raised as an alert once saved past,
// never saved (Config.PayoutAccount).
func (r *run) commit(ctx context.Context, recs []record) error {
	w := r.w
	cursor := r.cursor
	var ps, fromPayout []models.Payment
	var tokens, fromPayoutTokens []string
	inBatch := map[string]bool{}
	merges := map[string]record{} // payment id → the merge it records
	for _, rec := range recs {
		p, ok, err := w.conv.payment(rec)
		if err != nil {
			return err
		}
		if tokenAfter(rec.PagingToken, cursor) {
			cursor = rec.PagingToken
		}
		if !tokenAfter(rec.PagingToken, r.sweepFrom) {
			continue
		}
		if !ok && w.conv.mergedIn(rec) {
			if p, ok, err = r.merge(ctx, rec); err != nil {
				return err
			}
			if ok {
				merges[p.ID] = rec
			}
		}
		if !ok {
			continue
		}
		if _, dup := r.seen[p.ID]; dup || inBatch[p.ID] {
			continue
		}
		inBatch[p.ID] = true
		if w.cfg.PayoutAccount != "" && models.RefundAccount(p.Sender) == w.cfg.PayoutAccount {
			fromPayout = append(fromPayout, p)
			fromPayoutTokens = append(fromPayoutTokens, rec.PagingToken)
			continue
		}
		ps = append(ps, p)
		tokens = append(tokens, rec.PagingToken)
	}
	if len(ps) == 0 && cursor == r.cursor {
		return nil
	}
	if err := w.store.SaveStellarPayments(ctx, w.cfg.Network, w.cfg.Account, ps, cursor, time.Now()); err != nil {
		return fmt.Errorf("saving %d payments and cursor %s: %w", len(ps), cursor, err)
	}
	r.cursor = cursor
	for i, p := range fromPayout {
		r.seen[p.ID] = fromPayoutTokens[i]
		w.log.ErrorContext(ctx, "payment from the payout account: not recorded as a payer's payment",
			slog.String("payment_id", p.ID), slog.String("tx_hash", p.TxHash))
		w.alerts.Alert(ctx, AlertPaymentFromPayoutAccount, fmt.Sprintf("%s account %s received %s %s from the payout account (payment %s, transaction %s, memo %s %q): not recorded as a payment",
			w.cfg.Network, w.cfg.Account, p.Amount, p.Asset, p.ID, p.TxHash, p.MemoType, p.Memo))
	}
	for _, p := range ps {
		if m, ok := merges[p.ID]; ok {
			w.alerts.Alert(ctx, AlertAccountMerge, fmt.Sprintf("%s account %s received %s XLM by the merge of account %s into it (operation %s, transaction %s): recorded as unmatched payment %s",
				w.cfg.Network, w.cfg.Account, p.Amount, p.Sender, m.ID, p.TxHash, p.ID))
		}
	}
	savedAt := time.Now()
	for i, p := range ps {
		r.seen[p.ID] = tokens[i]
		w.cfg.Observer.PaymentSaved(savedAt.Sub(p.ReceivedAt))
	}
	r.report(cursor)
	for _, p := range ps {
		if r.jobs == nil {
			r.handle(ctx, p)
			continue
		}
		select {
		case r.jobs <- p:
		case <-ctx.Done():
			return ctx.Err() // saved: the reconciler hands it on
		}
	}
	return nil
}

// handle hands one saved payment to the matcher. A failure is logged and
// left to the service's reconciler: the payment is saved, the cursor stays.
func (r *run) handle(ctx context.Context, p models.Payment) {
	w := r.w
	outcome, err := w.handle(ctx, p)
	if err != nil {
		w.log.WarnContext(ctx, "payment saved but not matched yet; the reconciler will retry it",
			slog.String("payment_id", p.ID), slog.Any("error", err))
		return
	}
	w.log.InfoContext(ctx, "payment received", slog.String("payment_id", p.ID), slog.String("tx_hash", p.TxHash),
		slog.String("asset", p.Asset), slog.String("amount", p.Amount.String()), slog.String("outcome", string(outcome)))
}

// afterStep decides what follows a step's error: how long to wait, or a
// fatal error for Run to return.
func (r *run) afterStep(ctx context.Context, err error) (time.Duration, error) {
	log := r.w.log
	var he *httpError
	switch {
	case err == nil || errors.Is(err, errSweepDue):
		r.bo.reset()
		return 0, nil
	case errors.Is(err, errStreamEnded):
		log.DebugContext(ctx, "payments stream ended; reconnecting")
		return r.bo.next(), nil
	case errors.Is(err, errStreamIdle):
		log.WarnContext(ctx, "payments stream silent too long; reconnecting", slog.Duration("idle", r.w.cfg.StreamIdle))
		return r.bo.next(), nil
	case errors.As(err, &he) && he.beforeHistory():
		log.ErrorContext(ctx, "Horizon no longer holds the history after the saved cursor; retrying, not skipping ahead",
			slog.String("cursor", r.cursor), slog.Any("error", err))
		r.alert(ctx, AlertBeforeHistory, fmt.Sprintf("%s account %s: Horizon %s answered before_history for cursor %s; payments after it cannot be read there: %v",
			r.w.cfg.Network, r.w.cfg.Account, r.w.base, r.cursor, err))
		return r.bo.ceiling(), nil
	case errors.As(err, &he) && he.Status == http.StatusNotFound:
		log.ErrorContext(ctx, "Horizon does not know the receiving account", slog.Any("error", err))
		r.alert(ctx, AlertAccountNotFound, fmt.Sprintf("%s account %s not found on %s: %v", r.w.cfg.Network, r.w.cfg.Account, r.w.base, err))
		return r.bo.ceiling(), nil
	case errors.As(err, &he) && he.permanent():
		r.alert(ctx, AlertRequestRejected, fmt.Sprintf("%s account %s: %v", r.w.cfg.Network, r.w.cfg.Account, err))
		return 0, fmt.Errorf("stellar watcher: %w", err)
	case errors.As(err, &he):
		wait := max(r.bo.next(), he.RetryAfter)
		log.WarnContext(ctx, "Horizon request failed; retrying", slog.Any("error", err), slog.Duration("wait", wait))
		return wait, nil
	case errors.Is(err, errBadRecord):
		log.ErrorContext(ctx, "cannot read a payment record; retrying, not skipping it", slog.Any("error", err))
		r.alert(ctx, AlertBadRecord, fmt.Sprintf("%s account %s: %v", r.w.cfg.Network, r.w.cfg.Account, err))
		return r.bo.ceiling(), nil
	default:
		wait := r.bo.next()
		log.WarnContext(ctx, "payment watcher step failed; retrying", slog.Any("error", err), slog.Duration("wait", wait))
		return wait, nil
	}
}

// alert raises kind once per streak of the condition, and again every
// realertEvery while it lasts; a completed scan ends every streak.
func (r *run) alert(ctx context.Context, kind, detail string) {
	if at, ok := r.alertedAt[kind]; ok && time.Since(at) < realertEvery {
		return
	}
	r.alertedAt[kind] = time.Now()
	r.w.alerts.Alert(ctx, kind, detail)
}

// report records the saved cursor and passes it to progress.
func (r *run) report(cursor string) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	r.reported = cursor
	r.progress(cursor)
}

// heartbeat reports the last cursor every ProgressEvery until ctx ends, so
// a quiet account does not look like a dead watcher.
func (r *run) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.w.cfg.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.pmu.Lock()
			r.progress(r.reported)
			r.pmu.Unlock()
		}
	}
}

// sleep waits d, reporting false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
