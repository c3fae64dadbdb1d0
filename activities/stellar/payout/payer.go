package payout

import (
	"context"
	"encoding/base64"
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
	"time"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/models"
)

// Defaults of Config's optional fields.
const (
	// DefaultBaseFee is the network's minimum fee per operation, in
	// stroops: the least a payout bids.
	DefaultBaseFee = txnbuild.MinBaseFee
	// DefaultMaxFee is the most a payout bids per operation under surge
	// pricing, in stroops (0.01 XLM). The network charges its base fee
	// of the ledger, not the bid, so a high cap costs nothing while fees
	// are low.
	DefaultMaxFee = 100_000
	// DefaultWindow is how long a transaction may apply after it is
	// built: long enough for a ledger or two, short enough that an
	// attempt that lost track of it soon knows it never will.
	DefaultWindow = 60 * time.Second
	// DefaultMargin is how far past a recorded transaction's time bounds
	// the payer's clock must be before it stops submitting the envelope
	// again and asks whether it never applied: the clocks' skew.
	DefaultMargin = 10 * time.Second
	// DefaultRequestTimeout caps each Horizon GET.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultSubmitTimeout caps each submission; Horizon itself answers
	// 504 after waiting about 30 seconds for the ledger.
	DefaultSubmitTimeout = 40 * time.Second
	// DefaultAwait is how long a submission whose answer was lost (504,
	// a broken connection) is looked up before Pay gives up with
	// models.ErrPayoutOutcomeUnknown.
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
	// Lock serialises payouts from the account across Payers: every
	// process paying from it must share one (the workers of one
	// database). nil leaves this Payer alone with the account, as a
	// single process on SQLite is.
	Lock AccountLock

	// Now is the clock that sets and judges time bounds; nil is
	// time.Now.
	Now func() time.Time
	// Logger gets rebuilds and lost answers; nil discards. Envelopes and
	// keys are never logged.
	Logger *slog.Logger
	// BaseFee and MaxFee bound the fee per operation a payout bids, in
	// stroops: Horizon's fee statistics' bid (see feeRate) within
	// [BaseFee, MaxFee]. BaseFee is at least DefaultBaseFee (also its
	// default); MaxFee defaults to DefaultMaxFee and is at least BaseFee.
	BaseFee, MaxFee int64
	// Window, Margin, RequestTimeout, SubmitTimeout and Await default to
	// the constants of the same name.
	Window, Margin, RequestTimeout, SubmitTimeout, Await time.Duration
}

// AccountLock is a lock shared by every process that pays from an
// account, since the account has one sequence number: LockAccount waits,
// within ctx, until the caller holds key's lock, and returns the function
// that releases it. The lock of a holder that dies must be released (a
// Postgres session advisory lock is, with its connection). Pay holds it
// for a bounded time: every Horizon request it makes has a timeout, and it
// builds a bounded number of transactions.
type AccountLock interface {
	LockAccount(ctx context.Context, key string) (unlock func(), err error)
}

// Payer pays refunds from the payout account, exactly once each (see Pay).
// It is safe for concurrent use.
type Payer struct {
	turn       chan struct{} // one Pay at a time: a one-slot semaphore
	lock       AccountLock   // nil: this Payer alone pays from the account
	base       string
	hc         *http.Client
	passphrase string
	issuer     string
	signer     Signer
	source     string
	now        func() time.Time
	log        *slog.Logger
	baseFee    int64
	maxFee     int64

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
	if cfg.MaxFee == 0 {
		cfg.MaxFee = max(DefaultMaxFee, cfg.BaseFee)
	}
	if cfg.MaxFee < cfg.BaseFee {
		return nil, fmt.Errorf("payout: MaxFee must be at least BaseFee (%d stroops)", cfg.BaseFee)
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
		turn:           make(chan struct{}, 1),
		lock:           cfg.Lock,
		base:           strings.TrimRight(cfg.HorizonURL, "/"),
		hc:             cfg.HTTPClient,
		passphrase:     cfg.NetworkPassphrase,
		issuer:         cfg.USDCIssuer,
		signer:         cfg.Signer,
		source:         source,
		now:            cfg.Now,
		log:            cfg.Logger,
		baseFee:        cfg.BaseFee,
		maxFee:         cfg.MaxFee,
		window:         cfg.Window,
		margin:         cfg.Margin,
		requestTimeout: cfg.RequestTimeout,
		submitTimeout:  cfg.SubmitTimeout,
		await:          cfg.Await,
	}, nil
}

// Address returns the payout account.
func (p *Payer) Address() string { return p.source }

// Balances returns what the payout account holds of the assets it pays
// out, as Horizon says now: XLM (the whole native balance, its reserve
// included) and USDC of the configured issuer (absent without a
// trustline).
func (p *Payer) Balances(ctx context.Context) (map[string]decimal.Decimal, error) {
	acc, err := p.account(ctx, p.source)
	if err != nil {
		return nil, fmt.Errorf("reading the payout account %s: %w", p.source, err)
	}
	out := map[string]decimal.Decimal{}
	for _, b := range acc.Balances {
		var asset string
		switch {
		case b.AssetType == "native":
			asset = AssetXLM
		case b.AssetCode == AssetUSDC && b.AssetIssuer == p.issuer && b.AssetType == "credit_alphanum4":
			asset = AssetUSDC
		default:
			continue
		}
		d, err := decimal.NewFromString(b.Balance)
		if err != nil {
			return nil, fmt.Errorf("the payout account's %s balance %q: %w", asset, b.Balance, err)
		}
		out[asset] = d
	}
	return out, nil
}

// The request fields CheckDestination's errors name.
const (
	destinationField = "refund_destination.address"
	memoField        = "refund_destination.memo"
)

// memoRequiredKey is SEP-29's data entry by which an account says that
// payments to it need a memo; its value is "1" (base64 "MQ==").
const memoRequiredKey = "config.memo_required"

// CheckDestination checks, through Horizon, that d (an address, G… or M…;
// a muxed account is its G… account) can receive asset: the account
// exists; for USDC, it trusts the configured issuer's USDC and is
// authorized to hold it; and if it requires a memo (SEP-29: an exchange's
// or custodian's pooled account, which credits a payment by its memo), d
// carries one or is a muxed account, whose id does that job. Paid without,
// the money lands in the pool, credited to no one. What the payer must fix
// is an invalid_refund_destination models error naming the field; a
// failure to ask Horizon is a plain error, worth retrying.
func (p *Payer) CheckDestination(ctx context.Context, d models.RefundDestination, asset string) error {
	address := d.Address
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
	}
	memoless := (d.MemoType == "" || d.MemoType == "none") && dest.Type != xdr.CryptoKeyTypeKeyTypeMuxedEd25519
	if memoless && acc.Data[memoRequiredKey] == base64.StdEncoding.EncodeToString([]byte("1")) {
		return models.FieldError(models.CodeInvalidRefundDestination, memoField,
			"This account requires a memo (it is likely an exchange's or custodian's): give the memo it told you to use, or another address")
	}
	if asset == AssetXLM {
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
	source   string // its source account (G…)
	seq      int64  // its sequence number
	maxTime  int64  // Unix seconds; 0 if unbounded
}

// Pay pays req exactly once, however often it is called for the same
// refund, provided each call passes as Prior what the calls before it
// recorded, and record refuses (with an error) to record a transaction
// unless the refund's recorded one is still the last one this call knows
// of: req.Prior's, then each one this call recorded. That compare-and-set
// keeps an attempt its caller gave up on, still running, from recording
// and submitting a second payment beside a newer attempt's.
//
//   - A recorded transaction (Prior, or one this call submitted that was
//     refused for its sequence number or time bounds) is looked up first.
//     In the ledger, it decides (sent, or refused); a failed one that only
//     lacked funds is final and a new one is built. Not found while it
//     may still apply, the same envelope is submitted again (the network
//     takes a hash once), unless it is from an earlier payout key.
//     Otherwise another is built, from the current account, only once it
//     provably never applies (see fate, which reads the transaction's own
//     source account); until then Pay returns models.ErrPayoutOutcomeUnknown.
//   - A new transaction is signed with short time bounds, bidding the fee
//     Horizon's statistics suggest (within BaseFee and MaxFee), and passed
//     to record; only if record succeeds is it submitted.
//   - A recorded transaction refused for its fee (tx_insufficient_fee:
//     surge pricing) is submitted again inside a fee bump (CAP-15) paid
//     by the payout account, at a higher bid up to MaxFee: the same
//     signed transaction, whose hash and sequence number stay the ones
//     recorded, so it still applies at most once. When MaxFee is not
//     enough, Pay returns models.ErrPayoutFeeTooLow.
//   - A lost answer (504, a broken connection) is resolved by looking
//     the hash up for a while; if it is still unknown, Pay returns
//     models.ErrPayoutOutcomeUnknown and the next call, with Prior,
//     carries on.
//
// Pay returns models.PayoutSent, or models.PayoutRefused with the code
// and a reason for the payer. Errors: models.ErrPayoutUnderfunded (an
// operator must top the account up), models.ErrPayoutFeeTooLow (the
// network's fee is above MaxFee; retry later), models errors for an
// invalid request, the record function's error (nothing was submitted),
// and retryable ones: models.ErrPayoutOutcomeUnknown, *HorizonError (429
// with RetryAfter, 5xx) and transport failures.
//
// Pays from one account are serialised, since the account has one
// sequence number: those of one Payer by the Payer, those of every Payer
// (and process) paying from it by Config.Lock.
func (p *Payer) Pay(ctx context.Context, req models.PayoutRequest, record RecordFunc) (models.PayoutResult, error) {
	if err := Validate(req); err != nil {
		return models.PayoutResult{}, err
	}
	op, m, err := p.operation(req)
	if err != nil {
		return models.PayoutResult{}, err
	}
	unlock, err := p.lockAccount(ctx)
	if err != nil {
		return models.PayoutResult{}, err
	}
	defer unlock()
	log := p.log.With("refund_id", req.RefundID)

	var tx signedTx
	if req.Prior.Hash != "" || req.Prior.Envelope != "" {
		if tx, err = p.parsePrior(req.Prior); err != nil {
			return models.PayoutResult{}, err
		}
	}
	refused := false
	for builds := 0; ; builds++ {
		if tx.hash != "" {
			res, done, err := p.settle(ctx, req, tx, refused, log)
			if done {
				return res, err
			}
		}
		if builds == maxBuilds {
			return models.PayoutResult{}, fmt.Errorf("payout: %d transactions in a row were refused for their sequence number or time bounds; retry later", maxBuilds)
		}
		if tx, err = p.build(ctx, op, m); err != nil {
			return models.PayoutResult{}, err
		}
		if err := record(ctx, tx.hash, tx.envelope); err != nil {
			return models.PayoutResult{}, fmt.Errorf("payout: recording transaction %s before submitting it: %w", tx.hash, err)
		}
		o, err := p.send(ctx, tx, log)
		if err != nil {
			return models.PayoutResult{}, err
		}
		if o.act != actRebuild {
			return p.conclude(req, o, log)
		}
		// Refused now; but another attempt may have submitted the
		// recorded envelope first, so it is settled like a Prior.
		log.Info("payout transaction refused for its sequence number or time bounds", "hash", tx.hash, "code", o.code)
		refused = true
	}
}

// settle settles a recorded transaction; refused says it was just
// submitted and refused for good. done is false when a new transaction
// must be built.
func (p *Payer) settle(ctx context.Context, req models.PayoutRequest, tx signedTx, refused bool, log *slog.Logger) (res models.PayoutResult, done bool, err error) {
	found, o, err := p.lookup(ctx, tx.hash)
	switch {
	case err != nil:
		return models.PayoutResult{}, true, err
	case found && o.act == actUnderfunded:
		// Failed in a ledger, so final; the account may have been topped
		// up since.
		log.Info("recorded payout transaction failed for lack of funds, building another", "hash", tx.hash, "code", o.code)
		return models.PayoutResult{}, false, nil
	case found:
		res, err := p.conclude(req, o, log)
		return res, true, err
	case tx.envelope == "":
		return models.PayoutResult{}, true, fmt.Errorf("payout: transaction %s is not in Horizon's history and no envelope was recorded to submit again; an operator must settle it", tx.hash)
	}
	// One from an earlier payout key (before a rotation) is only looked
	// up, never submitted again: that account is no longer the one paying.
	if !refused && tx.source == p.source && (tx.maxTime == 0 || !p.now().After(time.Unix(tx.maxTime, 0).Add(p.margin))) {
		o, err = p.send(ctx, tx, log)
		if err != nil {
			return models.PayoutResult{}, true, err
		}
		if o.act != actRebuild {
			res, err = p.conclude(req, o, log)
			return res, true, err
		}
	}
	f, o, err := p.fate(ctx, tx)
	switch {
	case err != nil:
		return models.PayoutResult{}, true, err
	case f == fateNever:
		log.Info("recorded payout transaction never applied and never will, building another", "hash", tx.hash)
		return models.PayoutResult{}, false, nil
	case f == fateApplied && o.act == actUnderfunded:
		log.Info("recorded payout transaction failed for lack of funds, building another", "hash", tx.hash, "code", o.code)
		return models.PayoutResult{}, false, nil
	case f == fateApplied:
		res, err = p.conclude(req, o, log)
		return res, true, err
	}
	return models.PayoutResult{}, true, fmt.Errorf("%w: transaction %s is not in Horizon's history, and not yet provably never to apply; retry later",
		models.ErrPayoutOutcomeUnknown, tx.hash)
}

// fates of a recorded transaction.
const (
	fateUnknown = iota // it may yet be found in the ledger
	fateApplied        // it is in the ledger
	fateNever          // it is in no ledger and never will be
)

// fate decides whether tx applied or never will, from facts that no
// Horizon instance can show wrongly, however far behind the network it
// is: each is one answer about ledgers it has ingested.
//
//   - The account's transaction that used tx's sequence number, found in
//     its history: tx itself (applied), or another (tx never will: a
//     number is used once).
//   - The account's sequence number below tx's as of a ledger (the
//     account answer's Latest-Ledger) that closed after tx's time bounds:
//     nothing used the number up to that ledger, and no later ledger can
//     take tx.
//
// A transaction not found proves nothing alone: behind a load balancer,
// the instance that answered may not have ingested the ledger it is in.
func (p *Payer) fate(ctx context.Context, tx signedTx) (int, outcome, error) {
	acc, latest, err := p.accountAt(ctx, tx.source)
	if errors.Is(err, errNotFound) {
		return fateUnknown, outcome{}, nil
	}
	if err != nil {
		return fateUnknown, outcome{}, err
	}
	seq, err := strconv.ParseInt(acc.Sequence, 10, 64)
	if err != nil {
		return fateUnknown, outcome{}, errors.New("payout: horizon sent the transaction's source account without a valid sequence number")
	}
	if seq < tx.seq {
		if tx.maxTime == 0 || latest == 0 {
			return fateUnknown, outcome{}, nil
		}
		closed, err := p.ledgerClosedAt(ctx, latest)
		switch {
		case errors.Is(err, errNotFound):
			return fateUnknown, outcome{}, nil
		case err != nil:
			return fateUnknown, outcome{}, err
		case closed.Unix() > tx.maxTime:
			return fateNever, outcome{}, nil
		}
		return fateUnknown, outcome{}, nil
	}
	user, found, err := p.sequenceUser(ctx, tx.source, tx.seq)
	switch {
	case err != nil || !found:
		return fateUnknown, outcome{}, err
	case !user.is(tx.hash):
		return fateNever, outcome{}, nil
	}
	user.Hash = tx.hash // a fee bump's is its own; tx is its inner one
	o, err := txOutcome(user)
	return fateApplied, o, err
}

// parsePrior decodes a recorded envelope and checks that it is the
// recorded hash's. Its source may be an earlier payout account (the key
// was rotated since): settle then only looks it up, in that account's
// history.
func (p *Payer) parsePrior(prior models.PayoutPrior) (signedTx, error) {
	if prior.Envelope == "" {
		return signedTx{hash: strings.ToLower(prior.Hash)}, nil
	}
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
	tx := signedTx{hash: hash, envelope: prior.Envelope, source: src.Address(), seq: env.SeqNum()}
	if tb := env.TimeBounds(); tb != nil {
		tx.maxTime = int64(tb.MaxTime)
	}
	return tx, nil
}

// operation is req's payment.
func (p *Payer) operation(req models.PayoutRequest) (*txnbuild.Payment, txnbuild.Memo, error) {
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
		return signedTx{}, fmt.Errorf("payout: the payout account does not exist on the network; fund it: %w", models.ErrPayoutUnderfunded)
	}
	if err != nil {
		return signedTx{}, err
	}
	seq, err := strconv.ParseInt(acc.Sequence, 10, 64)
	if err != nil {
		return signedTx{}, errors.New("payout: horizon sent the payout account without a valid sequence number")
	}
	fee, err := p.feeRate(ctx)
	if err != nil {
		return signedTx{}, err
	}
	maxTime := p.now().Add(p.window).Unix()
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: p.source, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           []txnbuild.Operation{op},
		BaseFee:              fee,
		Memo:                 m,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime)},
	})
	if err != nil {
		return signedTx{}, fmt.Errorf("payout: building the transaction: %w", err)
	}
	hash, envelope, err := signChecked(p.passphrase, "the transaction", tx, p.signer.Sign)
	if err != nil {
		return signedTx{}, err
	}
	return signedTx{hash: hash, envelope: envelope, source: p.source, seq: seq + 1, maxTime: maxTime}, nil
}

// signable is a transaction or a fee bump.
type signable interface {
	HashHex(passphrase string) (string, error)
	Signatures() []xdr.DecoratedSignature
	Base64() (string, error)
}

// signChecked signs tx (named what in errors) with sign and returns its
// hash and envelope. The signer must return it signed and unchanged: the
// hash is what the payout records before it submits, so a signer that
// altered the transaction would send money the record does not know.
func signChecked[T signable](passphrase, what string, tx T, sign func(T, string) (T, error)) (hash, envelope string, err error) {
	want, err := tx.HashHex(passphrase)
	if err != nil {
		return "", "", fmt.Errorf("payout: hashing %s: %w", what, err)
	}
	signed, err := sign(tx, passphrase)
	if err != nil {
		return "", "", fmt.Errorf("payout: signing %s: %w", what, err)
	}
	hash, err = signed.HashHex(passphrase)
	if err != nil || hash != want || len(signed.Signatures()) == 0 {
		return "", "", fmt.Errorf("payout: the signer did not return %s signed and unchanged", what)
	}
	if envelope, err = signed.Base64(); err != nil {
		return "", "", fmt.Errorf("payout: encoding %s: %w", what, err)
	}
	return hash, envelope, nil
}

// send submits tx, and submits it again inside a fee bump when the
// network refuses its fee.
func (p *Payer) send(ctx context.Context, tx signedTx, log *slog.Logger) (outcome, error) {
	o, err := p.submit(ctx, tx.envelope, tx.hash, tx.hash, log)
	if err != nil || o.code != "tx_insufficient_fee" {
		return o, err
	}
	return p.bump(ctx, tx, log)
}

// bump submits tx inside a fee bump paid by the payout account, bidding
// the fee statistics' rate, then MaxFee if that rate is no more than tx
// bids already or is refused too (the statistics trail the network).
// Whatever it bids, a bump only pays the fee of tx, which still applies at
// most once: its hash and sequence number are the recorded ones.
func (p *Payer) bump(ctx context.Context, tx signedTx, log *slog.Logger) (outcome, error) {
	generic, err := txnbuild.TransactionFromXDR(tx.envelope)
	if err != nil {
		return outcome{}, fmt.Errorf("payout: decoding transaction %s to bump its fee: %w", tx.hash, err)
	}
	inner, ok := generic.Transaction()
	if !ok {
		return outcome{}, fmt.Errorf("payout: transaction %s is a fee bump already", tx.hash)
	}
	rate, err := p.feeRate(ctx)
	if err != nil {
		return outcome{}, err
	}
	bid := inner.BaseFee()
	for _, r := range []int64{rate, p.maxFee} {
		if r <= bid {
			continue
		}
		bid = r
		o, err := p.bumpAt(ctx, tx, inner, bid, log)
		if err != nil || o.code != "tx_insufficient_fee" {
			return o, err
		}
	}
	return outcome{}, fmt.Errorf("%w: transaction %s, bumped to %d stroops per operation, is refused for its fee", models.ErrPayoutFeeTooLow, tx.hash, bid)
}

// bumpAt submits inner, transaction tx, in a fee bump bidding rate per
// operation.
func (p *Payer) bumpAt(ctx context.Context, tx signedTx, inner *txnbuild.Transaction, rate int64, log *slog.Logger) (outcome, error) {
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: p.source, BaseFee: rate})
	if err != nil {
		return outcome{}, fmt.Errorf("payout: building a fee bump of transaction %s: %w", tx.hash, err)
	}
	hash, envelope, err := signChecked(p.passphrase, "the fee bump", fb, p.signer.SignFeeBump)
	if err != nil {
		return outcome{}, err
	}
	log.Warn("payout transaction refused for its fee, submitting it in a fee bump", "hash", tx.hash, "fee_bump", hash, "fee_per_operation", rate)
	return p.submit(ctx, envelope, tx.hash, hash, log)
}

// maxFeeStat is the percentile of the bids (max_fee) of the last ledgers'
// transactions a payout bids: most transactions bid no more.
const maxFeeStat = "p90"

// feeRate is the fee per operation a payout bids: Horizon's fee
// statistics' maxFeeStat of the bids, within [BaseFee, MaxFee].
func (p *Payer) feeRate(ctx context.Context) (int64, error) {
	var stats struct {
		MaxFee map[string]string `json:"max_fee"`
	}
	if _, err := p.getJSON(ctx, "/fee_stats", &stats); err != nil {
		if errors.Is(err, errNotFound) {
			return 0, errors.New("payout: horizon has no fee statistics")
		}
		return 0, err
	}
	bid, err := strconv.ParseInt(stats.MaxFee[maxFeeStat], 10, 64)
	if err != nil {
		return 0, errors.New("payout: horizon sent fee statistics without a valid max_fee." + maxFeeStat)
	}
	return min(max(bid, p.baseFee), p.maxFee), nil
}

// submit submits envelope, which is transaction hash or a fee bump of it
// whose own hash is outer, and reads the answer, which is about hash. An
// answer lost on the way (504, a broken connection or a timeout once the
// request may have left) is looked for in the ledger instead.
func (p *Payer) submit(ctx context.Context, envelope, hash, outer string, log *slog.Logger) (outcome, error) {
	status, header, body, err := p.post(ctx, envelope)
	if err != nil {
		return p.awaitLedger(ctx, hash, err, log)
	}
	switch {
	case status == http.StatusOK:
		var b txBody
		if err := json.Unmarshal(body, &b); err != nil || !(strings.EqualFold(b.Hash, hash) || strings.EqualFold(b.Hash, outer)) {
			// Horizon answers 200 only with the transaction applied;
			// one whose body does not say which is looked up instead.
			return p.awaitLedger(ctx, hash, errors.New("payout: horizon's 200 answer does not name the transaction"), log)
		}
		return outcome{act: actSent, hash: hash}, nil
	case status == http.StatusBadRequest:
		var pr problem
		if json.Unmarshal(body, &pr) == nil && pr.transactionFailed() {
			rc := pr.Extras.ResultCodes
			txCode, ops := rc.Transaction, rc.Operations
			if txCode == "tx_fee_bump_inner_failed" {
				// The inner transaction's result decides; result_xdr
				// holds it.
				if txCode, ops, err = resultCodes(pr.Extras.ResultXDR); err != nil {
					return outcome{}, err
				}
			}
			o := classify(txCode, ops)
			o.hash = hash
			return o, nil
		}
	case status == http.StatusGatewayTimeout:
		return p.awaitLedger(ctx, hash, horizonError(status, header, body, p.now()), log)
	}
	return outcome{}, horizonError(status, header, body, p.now())
}

// awaitLedger looks hash up, with a short backoff, until it is found, ctx
// ends or the await time has passed; then it is models.ErrPayoutOutcomeUnknown.
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
				models.ErrPayoutOutcomeUnknown, hash, cause)
		case <-t.C:
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// lookup GETs the transaction hash. Not found is (false, nil).
func (p *Payer) lookup(ctx context.Context, hash string) (bool, outcome, error) {
	var b txBody
	_, err := p.getJSON(ctx, "/transactions/"+url.PathEscape(hash), &b)
	if errors.Is(err, errNotFound) {
		return false, outcome{}, nil
	}
	if err != nil {
		return false, outcome{}, err
	}
	b.Hash = hash
	o, err := txOutcome(b)
	return err == nil, o, err
}

// txOutcome is the outcome of a transaction in the ledger.
func txOutcome(b txBody) (outcome, error) {
	hash := strings.ToLower(b.Hash)
	if b.Successful {
		return outcome{act: actSent, hash: hash}, nil
	}
	txCode, ops, err := resultCodes(b.ResultXDR)
	if err != nil {
		return outcome{}, err
	}
	o := classify(txCode, ops)
	o.hash = hash
	return o, nil
}

// conclude turns an outcome into Pay's answer.
func (p *Payer) conclude(req models.PayoutRequest, o outcome, log *slog.Logger) (models.PayoutResult, error) {
	switch o.act {
	case actSent:
		log.Debug("payout sent", "hash", o.hash)
		return models.PayoutResult{Outcome: models.PayoutSent, Hash: o.hash}, nil
	case actRefused:
		log.Debug("payout refused", "hash", o.hash, "code", o.code)
		return models.PayoutResult{Outcome: models.PayoutRefused, Hash: o.hash, Code: o.code, Reason: reason(o, req.Asset)}, nil
	case actUnderfunded:
		return models.PayoutResult{}, fmt.Errorf("payout: transaction %s: %s: %w", o.hash, o.code, models.ErrPayoutUnderfunded)
	case actRetry:
		return models.PayoutResult{}, fmt.Errorf("payout: transaction %s was refused for now (%s); retry later", o.hash, o.code)
	}
	return models.PayoutResult{}, fmt.Errorf("payout: transaction %s was refused (%s); retry later", o.hash, o.code)
}

// lockAccount waits, within ctx, for this Payer's turn, then for the
// shared lock (Config.Lock); unlock ends both.
func (p *Payer) lockAccount(ctx context.Context) (unlock func(), err error) {
	select {
	case p.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("payout: waiting for the payout account: %w", ctx.Err())
	}
	if p.lock == nil {
		return func() { <-p.turn }, nil
	}
	release, err := p.lock.LockAccount(ctx, p.passphrase+"\x00"+p.source)
	if err != nil {
		<-p.turn
		return nil, fmt.Errorf("payout: waiting for the payout account's lock: %w", err)
	}
	return func() {
		release()
		<-p.turn
	}, nil
}
