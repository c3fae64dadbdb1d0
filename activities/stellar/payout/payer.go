package payout

import (
	"context"
	"encoding/hex"
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

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/models"
)

// Defaults of Config's optional fields.
const (
	// DefaultBaseFee is the network's minimum fee per operation, in
	// stroops; no surge pricing is paid unless configured.
	DefaultBaseFee = txnbuild.MinBaseFee
	// DefaultWindow is how long a transaction may apply after it is
	// built: long enough for a ledger or two, short enough that an
	// attempt that lost track of it soon knows it never will.
	DefaultWindow = 60 * time.Second
	// DefaultMargin is how far past a transaction's time bounds the
	// payer's clock must be before Horizon is asked whether its history
	// reaches beyond them: the clocks' skew.
	DefaultMargin = 10 * time.Second
	// DefaultRequestTimeout caps each Horizon GET.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultSubmitTimeout caps each submission; Horizon itself answers
	// 504 after waiting about 30 seconds for the ledger.
	DefaultSubmitTimeout = 40 * time.Second
	// DefaultAwait is how long a submission whose answer was lost (504,
	// a broken connection) is looked up before Pay gives up with
	// ErrOutcomeUnknown.
	DefaultAwait = 30 * time.Second
)

// maxBuilds bounds the transactions one Pay builds when the network
// refuses them for their sequence number (another process used it) or
// time bounds: more in a row means something else is wrong.
const maxBuilds = 3

// Config is what a Payer needs: HorizonURL, NetworkPassphrase, USDCIssuer
// and Signer are required, the rest have defaults.
type Config struct {
	// HorizonURL is the Horizon server's base URL, e.g.
	// https://horizon.stellar.org.
	HorizonURL string
	// HTTPClient makes the requests; every request is also bounded by
	// RequestTimeout or SubmitTimeout.
	HTTPClient *http.Client
	// NetworkPassphrase is the network transactions are signed for
	// (models.StellarNetwork.Passphrase).
	NetworkPassphrase string
	// USDCIssuer is the account whose USDC refunds are paid in.
	USDCIssuer string
	// Signer holds the payout account's key.
	Signer Signer

	// Now is the clock that sets and judges time bounds; nil is
	// time.Now.
	Now func() time.Time
	// Logger gets rebuilds and lost answers; nil discards. Envelopes and
	// keys are never logged.
	Logger *slog.Logger
	// BaseFee is the fee per operation in stroops, at least
	// DefaultBaseFee (also the default).
	BaseFee int64
	// Window, Margin, RequestTimeout, SubmitTimeout and Await default to
	// the constants of the same name.
	Window, Margin, RequestTimeout, SubmitTimeout, Await time.Duration
}

// Payer pays refunds from the payout account, exactly once each (see Pay).
// It is safe for concurrent use.
type Payer struct {
	base       string
	hc         *http.Client
	passphrase string
	issuer     string
	signer     Signer
	source     string
	now        func() time.Time
	log        *slog.Logger
	baseFee    int64

	window, margin, requestTimeout, submitTimeout, await time.Duration
}

// NewPayer checks cfg and returns a Payer.
func NewPayer(cfg Config) (*Payer, error) {
	u, err := url.Parse(cfg.HorizonURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("payout: HorizonURL must be an http(s) URL")
	}
	if cfg.NetworkPassphrase == "" {
		return nil, errors.New("payout: NetworkPassphrase is required")
	}
	if err := models.ValidateStellarAccount(cfg.USDCIssuer); err != nil {
		return nil, fmt.Errorf("payout: USDCIssuer: %w", err)
	}
	if cfg.Signer == nil {
		return nil, errors.New("payout: Signer is required")
	}
	source := cfg.Signer.Address()
	if err := models.ValidateStellarAccount(source); err != nil {
		return nil, fmt.Errorf("payout: the signer's address: %w", err)
	}
	if cfg.BaseFee == 0 {
		cfg.BaseFee = DefaultBaseFee
	}
	if cfg.BaseFee < DefaultBaseFee {
		return nil, fmt.Errorf("payout: BaseFee must be at least %d stroops", DefaultBaseFee)
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&cfg.Window, DefaultWindow}, {&cfg.Margin, DefaultMargin}, {&cfg.RequestTimeout, DefaultRequestTimeout},
		{&cfg.SubmitTimeout, DefaultSubmitTimeout}, {&cfg.Await, DefaultAwait},
	} {
		if *d.v < 0 {
			return nil, errors.New("payout: durations must not be negative")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Window < time.Second {
		return nil, errors.New("payout: Window must be at least a second (time bounds are in seconds)")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Payer{
		base:           strings.TrimRight(cfg.HorizonURL, "/"),
		hc:             cfg.HTTPClient,
		passphrase:     cfg.NetworkPassphrase,
		issuer:         cfg.USDCIssuer,
		signer:         cfg.Signer,
		source:         source,
		now:            cfg.Now,
		log:            cfg.Logger,
		baseFee:        cfg.BaseFee,
		window:         cfg.Window,
		margin:         cfg.Margin,
		requestTimeout: cfg.RequestTimeout,
		submitTimeout:  cfg.SubmitTimeout,
		await:          cfg.Await,
	}, nil
}

// Address returns the payout account.
func (p *Payer) Address() string { return p.source }

// destinationField is the request field CheckDestination's errors name.
const destinationField = "refund_destination.address"

// CheckDestination checks, through Horizon, that address (G… or M…; a
// muxed account is its G… account) can receive asset: the account exists
// and, for USDC, trusts the configured issuer's USDC and is authorized to
// hold it. What the payer must fix is an invalid_refund_destination
// models error naming the address field; a failure to ask Horizon is a
// plain error, worth retrying.
func (p *Payer) CheckDestination(ctx context.Context, address, asset string) error {
	if err := models.ValidateRefundAddress(address); err != nil {
		return err
	}
	if asset != AssetXLM && asset != AssetUSDC {
		return models.Errorf(models.CodeInvalidRequest, "A payout is in %s or %s, not %q", AssetXLM, AssetUSDC, asset)
	}
	dest, err := xdr.AddressToMuxedAccount(address)
	if err != nil {
		return models.FieldError(models.CodeInvalidRefundDestination, destinationField, "The address is not a Stellar account")
	}
	id := dest.ToAccountId()
	acc, err := p.account(ctx, id.Address())
	switch {
	case errors.Is(err, errNotFound):
		return models.FieldError(models.CodeInvalidRefundDestination, destinationField,
			"This account does not exist on the Stellar network: create it with some XLM first, or give another address")
	case err != nil:
		return err
	case asset == AssetXLM:
		return nil
	}
	for _, b := range acc.Balances {
		if b.AssetCode != AssetUSDC || b.AssetIssuer != p.issuer || b.AssetType != "credit_alphanum4" {
			continue
		}
		if b.IsAuthorized != nil && !*b.IsAuthorized {
			return models.FieldError(models.CodeInvalidRefundDestination, destinationField,
				"The USDC issuer has not authorized this account to hold USDC: get it authorized, or give another address")
		}
		return nil
	}
	return models.FieldError(models.CodeInvalidRefundDestination, destinationField,
		"This account does not trust USDC: add a USDC trustline first, or give another address")
}

// signedTx is a signed payout transaction.
type signedTx struct {
	hash     string
	envelope string // base64 TransactionEnvelope
	maxTime  int64  // Unix seconds; 0 if unbounded
}

// Pay pays req exactly once, however often it is called for the same
// refund, provided each call passes as Prior what the calls before it
// recorded:
//
//   - A Prior transaction is looked up first. In the ledger, it decides
//     (sent, or refused); a failed one that only lacked funds is final
//     and a new one is built. Not found while it may still apply, the
//     same envelope is submitted again (Horizon answers a known one with
//     its result; the network takes a hash once). Not found once
//     Horizon's history reaches past its time bounds, it never will
//     apply, and a new one is built.
//   - A new transaction is signed with short time bounds and passed to
//     record; only if record succeeds is it submitted. tx_bad_seq and
//     tx_too_late mean it can never apply: another is built (a few
//     times at most).
//   - A lost answer (504, a broken connection) is resolved by looking
//     the hash up for a while; if it is still unknown, Pay returns
//     ErrOutcomeUnknown and the next call, with Prior, carries on.
//
// Pay returns Sent, or Refused with the code and a reason for the payer.
// Errors: ErrUnderfunded (an operator must top the account up), models
// errors for an invalid request, the record function's error (nothing was
// submitted), and retryable ones: ErrOutcomeUnknown, *HorizonError (429
// with RetryAfter, 5xx) and transport failures.
//
// Pays from one account are serialised within the process, since the
// account has one sequence number; other processes are caught by
// tx_bad_seq.
func (p *Payer) Pay(ctx context.Context, req Request, record RecordFunc) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	op, m, err := p.operation(req)
	if err != nil {
		return Result{}, err
	}
	unlock, err := lockAccount(ctx, p.passphrase+"\x00"+p.source)
	if err != nil {
		return Result{}, fmt.Errorf("payout: waiting for the payout account: %w", err)
	}
	defer unlock()
	log := p.log.With("refund_id", req.RefundID)

	if req.Prior.Hash != "" || req.Prior.Envelope != "" {
		res, done, err := p.resolvePrior(ctx, req, log)
		if done {
			return res, err
		}
	}
	for range maxBuilds {
		tx, err := p.build(ctx, op, m)
		if err != nil {
			return Result{}, err
		}
		if err := record(ctx, tx.hash, tx.envelope); err != nil {
			return Result{}, fmt.Errorf("payout: recording transaction %s before submitting it: %w", tx.hash, err)
		}
		o, err := p.submit(ctx, tx, log)
		if err != nil {
			return Result{}, err
		}
		if o.act == actRebuild {
			// Refused in answer to its only submission: it never applied.
			log.Info("payout transaction refused for good, building another", "hash", tx.hash, "code", o.code)
			continue
		}
		return p.conclude(req, o, log)
	}
	return Result{}, fmt.Errorf("payout: %d transactions in a row were refused for their sequence number or time bounds; retry later", maxBuilds)
}

// resolvePrior settles the transaction an earlier attempt recorded. done
// is false when a new transaction must be built.
func (p *Payer) resolvePrior(ctx context.Context, req Request, log *slog.Logger) (res Result, done bool, err error) {
	hash := strings.ToLower(req.Prior.Hash)
	var tx signedTx
	if req.Prior.Envelope != "" {
		if tx, err = p.parsePrior(req.Prior); err != nil {
			return Result{}, true, err
		}
		hash = tx.hash
	}

	// Whether Horizon's history reaches past the time bounds is asked
	// before the hash is looked up, so that a miss covers every ledger
	// the transaction could be in. The clock only spares the question
	// while the answer must be no.
	covered := false
	if tx.maxTime != 0 && p.now().After(time.Unix(tx.maxTime, 0).Add(p.margin)) {
		reach, err := p.historyReaches(ctx)
		if err != nil {
			return Result{}, true, err
		}
		covered = reach.Unix() > tx.maxTime
	}
	found, o, err := p.lookup(ctx, hash)
	switch {
	case err != nil:
		return Result{}, true, err
	case found && o.act == actUnderfunded:
		// Failed in a ledger, so final; the account may have been topped
		// up since.
		log.Info("recorded payout transaction failed for lack of funds, building another", "hash", hash, "code", o.code)
		return Result{}, false, nil
	case found:
		res, err := p.conclude(req, o, log)
		return res, true, err
	case covered:
		log.Info("recorded payout transaction expired unapplied, building another", "hash", hash)
		return Result{}, false, nil
	case tx.envelope == "":
		return Result{}, true, fmt.Errorf("payout: transaction %s is not in Horizon's history and no envelope was recorded to submit again; an operator must settle it", hash)
	}

	o, err = p.submit(ctx, tx, log)
	if err != nil {
		return Result{}, true, err
	}
	if o.act == actRebuild {
		// Refused now, but an earlier attempt may have applied it and
		// Horizon's history not show it yet: only the history reaching
		// past its time bounds proves otherwise.
		return Result{}, true, fmt.Errorf("%w: transaction %s is refused now (%s) but not yet provably absent from the ledger; retry after its time bounds",
			ErrOutcomeUnknown, hash, o.code)
	}
	res, err = p.conclude(req, o, log)
	return res, true, err
}

// parsePrior decodes a recorded envelope and checks that it is the
// recorded hash's and the payout account's.
func (p *Payer) parsePrior(prior Prior) (signedTx, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(prior.Envelope, &env); err != nil {
		return signedTx{}, fmt.Errorf("payout: the recorded envelope does not decode: %w", err)
	}
	sum, err := network.HashTransactionInEnvelope(env, p.passphrase)
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: hashing the recorded envelope: %w", err)
	}
	hash := hex.EncodeToString(sum[:])
	if prior.Hash != "" && !strings.EqualFold(prior.Hash, hash) {
		return signedTx{}, fmt.Errorf("payout: the recorded envelope is not transaction %s", prior.Hash)
	}
	src := env.SourceAccount().ToAccountId()
	if src.Address() != p.source {
		return signedTx{}, fmt.Errorf("payout: recorded transaction %s is not from the payout account", hash)
	}
	tx := signedTx{hash: hash, envelope: prior.Envelope}
	if tb := env.TimeBounds(); tb != nil {
		tx.maxTime = int64(tb.MaxTime)
	}
	return tx, nil
}

// operation is req's payment.
func (p *Payer) operation(req Request) (*txnbuild.Payment, txnbuild.Memo, error) {
	m, err := memo(req.Destination)
	if err != nil {
		return nil, nil, err
	}
	var asset txnbuild.Asset = txnbuild.NativeAsset{}
	if req.Asset == AssetUSDC {
		asset = txnbuild.CreditAsset{Code: AssetUSDC, Issuer: p.issuer}
	}
	return &txnbuild.Payment{Destination: req.Destination.Address, Amount: req.Amount.StringFixed(7), Asset: asset}, m, nil
}

// build signs a new transaction with the payout account's next sequence
// number, valid from now for the window.
func (p *Payer) build(ctx context.Context, op *txnbuild.Payment, m txnbuild.Memo) (signedTx, error) {
	acc, err := p.account(ctx, p.source)
	if errors.Is(err, errNotFound) {
		return signedTx{}, fmt.Errorf("payout: the payout account does not exist on the network; fund it: %w", ErrUnderfunded)
	}
	if err != nil {
		return signedTx{}, err
	}
	seq, err := strconv.ParseInt(acc.Sequence, 10, 64)
	if err != nil {
		return signedTx{}, errors.New("payout: horizon sent the payout account without a valid sequence number")
	}
	maxTime := p.now().Add(p.window).Unix()
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: p.source, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           []txnbuild.Operation{op},
		BaseFee:              p.baseFee,
		Memo:                 m,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime)},
	})
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: building the transaction: %w", err)
	}
	want, err := tx.HashHex(p.passphrase)
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: hashing the transaction: %w", err)
	}
	signed, err := p.signer.Sign(tx, p.passphrase)
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: signing the transaction: %w", err)
	}
	hash, err := signed.HashHex(p.passphrase)
	if err != nil || hash != want || len(signed.Signatures()) == 0 {
		return signedTx{}, errors.New("payout: the signer did not return the transaction signed and unchanged")
	}
	envelope, err := signed.Base64()
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: encoding the transaction: %w", err)
	}
	return signedTx{hash: hash, envelope: envelope, maxTime: maxTime}, nil
}

// submit submits tx and reads the answer. An answer lost on the way (504,
// a broken connection or a timeout once the request may have left) is
// looked for in the ledger instead.
func (p *Payer) submit(ctx context.Context, tx signedTx, log *slog.Logger) (outcome, error) {
	status, header, body, err := p.post(ctx, tx.envelope)
	if err != nil {
		return p.awaitLedger(ctx, tx.hash, err, log)
	}
	switch {
	case status == http.StatusOK:
		var b txBody
		if err := json.Unmarshal(body, &b); err != nil || !strings.EqualFold(b.Hash, tx.hash) {
			// Horizon answers 200 only with the transaction applied;
			// one whose body does not say which is looked up instead.
			return p.awaitLedger(ctx, tx.hash, errors.New("payout: horizon's 200 answer does not name the transaction"), log)
		}
		return outcome{act: actSent, hash: tx.hash}, nil
	case status == http.StatusBadRequest:
		var pr problem
		if json.Unmarshal(body, &pr) == nil && pr.transactionFailed() {
			o := classify(pr.Extras.ResultCodes.Transaction, pr.Extras.ResultCodes.Operations)
			o.hash = tx.hash
			return o, nil
		}
	case status == http.StatusGatewayTimeout:
		return p.awaitLedger(ctx, tx.hash, horizonError(status, header, body, p.now()), log)
	}
	return outcome{}, horizonError(status, header, body, p.now())
}

// awaitLedger looks hash up, with a short backoff, until it is found, ctx
// ends or the await time has passed; then it is ErrOutcomeUnknown.
func (p *Payer) awaitLedger(ctx context.Context, hash string, cause error, log *slog.Logger) (outcome, error) {
	log.Warn("payout submission answer lost, looking the transaction up", "hash", hash, "error", cause)
	ctx, cancel := context.WithTimeout(ctx, p.await)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		found, o, err := p.lookup(ctx, hash)
		if err == nil && found {
			return o, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return outcome{}, fmt.Errorf("%w: transaction %s was submitted (%v) and is not in Horizon's history yet; retry with it as Prior",
				ErrOutcomeUnknown, hash, cause)
		case <-t.C:
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// lookup GETs the transaction hash. Not found is (false, nil).
func (p *Payer) lookup(ctx context.Context, hash string) (bool, outcome, error) {
	var b txBody
	err := p.getJSON(ctx, "/transactions/"+url.PathEscape(hash), &b)
	if errors.Is(err, errNotFound) {
		return false, outcome{}, nil
	}
	if err != nil {
		return false, outcome{}, err
	}
	if b.Successful {
		return true, outcome{act: actSent, hash: hash}, nil
	}
	txCode, ops, err := resultCodes(b.ResultXDR)
	if err != nil {
		return false, outcome{}, err
	}
	o := classify(txCode, ops)
	o.hash = hash
	return true, o, nil
}

// conclude turns an outcome into Pay's answer.
func (p *Payer) conclude(req Request, o outcome, log *slog.Logger) (Result, error) {
	switch o.act {
	case actSent:
		log.Debug("payout sent", "hash", o.hash)
		return Result{Outcome: Sent, Hash: o.hash}, nil
	case actRefused:
		log.Debug("payout refused", "hash", o.hash, "code", o.code)
		return Result{Outcome: Refused, Hash: o.hash, Code: o.code, Reason: reason(o, req.Asset)}, nil
	case actUnderfunded:
		return Result{}, fmt.Errorf("payout: transaction %s: %s: %w", o.hash, o.code, ErrUnderfunded)
	case actRetry:
		return Result{}, fmt.Errorf("payout: transaction %s was refused for now (%s); retry later", o.hash, o.code)
	}
	return Result{}, fmt.Errorf("payout: transaction %s was refused (%s); retry later", o.hash, o.code)
}

// accountLocks holds a one-slot channel per payout account (and network):
// one process submits from an account one transaction at a time, since
// each takes the account's next sequence number.
var accountLocks sync.Map

// lockAccount waits, within ctx, for key's turn; unlock ends it.
func lockAccount(ctx context.Context, key string) (unlock func(), err error) {
	v, _ := accountLocks.LoadOrStore(key, make(chan struct{}, 1))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
