package horizontest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/activities/stellar/resultcodes"
)

// txEntry is a transaction that made it into a ledger, successful or not:
// what GET /transactions/{hash} serves and what a resubmission of the
// same envelope is answered with.
type txEntry struct {
	resource   []byte    // Horizon's transaction resource
	ops        []*record // its payment operations (history.go)
	failure    []byte    // the transaction_failed problem, for a failed one
	ledger     int64
	successful bool
	accounts   []string // the accounts it involves: its source, then its payments' destinations
}

// answer is the submission answer Horizon gives for a transaction in its
// history: the resource if it succeeded, transaction_failed if not.
func (e *txEntry) answer() (int, string, []byte) {
	if e.failure != nil {
		return http.StatusBadRequest, problemJSON, e.failure
	}
	return http.StatusOK, halJSON, e.resource
}

const (
	halJSON     = "application/hal+json; charset=utf-8"
	problemJSON = "application/problem+json; charset=utf-8"
)

// TimeoutAfterApply makes the next n submissions be processed as usual (a
// valid transaction is applied) and then answered 504 with Horizon's
// timeout problem: the unknown outcome a client must resolve by looking
// the hash up, never by building a second payment.
func (s *Server) TimeoutAfterApply(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeoutN = n
}

// DelaySubmissions holds the next n submissions for d before they are
// checked and applied, like a transaction waiting for its ledger to close.
// A held transaction is applied even if its client gave up meanwhile, as
// one already handed to the network would be.
func (s *Server) DelaySubmissions(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delayN, s.delay = n, d
}

// Submissions returns how many transactions were POSTed, whatever their
// outcome.
func (s *Server) Submissions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submitted
}

// LedgerPayments returns every payment operation of the transactions the
// ledger took, from any account, in the order they were applied, with
// Successful saying whether its transaction succeeded: what a test counts
// to prove that money moved once. Rejected transactions (tx_bad_seq,
// tx_too_late...) never entered the ledger and are not listed.
func (s *Server) LedgerPayments() []Payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Payment(nil), s.applied...)
}

// submit is POST /transactions.
func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// Horizon lists all transactions on GET; nothing here needs it.
		writeProblem(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed", "POST a transaction")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeProblem(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported Media Type",
			"The request has an unsupported content type. Presently, the only supported content type is application/x-www-form-urlencoded.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "The request you sent was invalid in some way.")
		return
	}
	raw := r.PostForm.Get("tx")
	var env xdr.TransactionEnvelope
	if raw == "" || xdr.SafeUnmarshalBase64(raw, &env) != nil {
		writeProblemExtras(w, http.StatusBadRequest, "transaction_malformed", "Transaction Malformed",
			"Horizon could not decode the transaction envelope in this request. A transaction should be an XDR "+
				"TransactionEnvelope struct encoded using base64.  The envelope read from this request is echoed in the "+
				"`extras.envelope_xdr` field of this response for your convenience.",
			map[string]string{"envelope_xdr": raw})
		return
	}

	s.mu.Lock()
	s.submitted++
	var delay time.Duration
	if s.delayN > 0 {
		s.delayN--
		delay = s.delay
	}
	timeout := s.timeoutN > 0
	if timeout {
		s.timeoutN--
	}
	s.mu.Unlock()

	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return
		}
	}

	s.mu.Lock()
	status, contentType, body := s.applyLocked(env, raw)
	s.mu.Unlock()
	if timeout {
		writeProblem(w, http.StatusGatewayTimeout, "timeout", "Timeout",
			"Your request timed out before completing.  Please try your request again. If you are submitting a "+
				"transaction make sure you are sending exactly the same transaction (with the same sequence number).")
		return
	}
	writeJSON(w, status, contentType, body)
}

// getTransaction is GET /transactions/{hash}, answered by an instance
// that has ingested the ledgers up to view.
func (s *Server) getTransaction(w http.ResponseWriter, hash string, view int64) {
	s.mu.Lock()
	e, ok := s.txs[hash]
	s.mu.Unlock()
	if !ok || e.ledger > view {
		writeNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, halJSON, e.resource)
}

// applyLocked checks the envelope the way stellar-core does before and
// while applying it, and applies it when it may enter a ledger. It returns
// the answer to the submission.
//
// A transaction that fails its checks (time bounds, fee, sequence,
// signatures, fee balance, malformed operations) is rejected: it never
// enters a ledger and costs nothing. One whose operations fail when
// applied (no destination, no trustline, underfunded) enters a ledger as
// failed: its fee is charged and its sequence number consumed, its
// payments are undone, and it is in the history like on the network.
//
// A fee bump (CAP-15) is checked first for itself (its fee, at least the
// network's for one more operation than the inner transaction has and at
// no lower rate than the inner's; its fee account's signature and
// balance), then for its inner transaction, whose own fee is not checked:
// that is the point of bumping it. Its fee account pays, its inner
// transaction's source spends its sequence number, and the inner
// transaction's failures are tx_fee_bump_inner_failed with the inner
// result.
func (s *Server) applyLocked(env xdr.TransactionEnvelope, raw string) (int, string, []byte) {
	hashBytes, err := network.HashTransactionInEnvelope(env, s.passphrase)
	if err != nil {
		return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxMalformed, 0, nil)
	}
	hash := hex.EncodeToString(hashBytes[:])
	// Horizon answers an envelope it already has in its history with the
	// recorded result, without sending it to the network again: a
	// resubmission after a timeout never pays twice.
	if e, ok := s.txs[hash]; ok {
		return e.answer()
	}

	ops := env.Operations()
	n := int64(max(len(ops), 1))
	// The network charges its base fee per operation, whatever the bid.
	charge := s.baseFee * n
	srcID := env.SourceAccount().ToAccountId()
	src := srcID.Address()
	feeSource, signedHash := src, hashBytes
	var bump *feeBump
	if env.IsFeeBump() {
		inner := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: env.FeeBump.Tx.InnerTx.V1}
		innerHash, err := network.HashTransactionInEnvelope(inner, s.passphrase)
		if err != nil {
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxMalformed, 0, nil)
		}
		bump = &feeBump{innerHash: innerHash, fee: env.FeeBumpFee()}
		signedHash, charge = innerHash, s.baseFee*(n+1)
		feeID := env.FeeBumpAccount().ToAccountId()
		feeSource = feeID.Address()
		outerSigs := env.FeeBumpSignatures()
		outerUsed := make([]bool, len(outerSigs))
		switch {
		case bump.fee < charge || bump.fee*n < int64(env.Fee())*(n+1):
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxInsufficientFee, charge, nil)
		case s.accounts[feeSource] == nil:
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxNoAccount, 0, nil)
		case !signedBy(outerSigs, hashBytes, feeSource, outerUsed):
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxBadAuth, charge, nil)
		case slices.Contains(outerUsed, false):
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxBadAuthExtra, charge, nil)
		case s.accounts[feeSource].spendable() < charge:
			return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxInsufficientBalance, charge, nil)
		}
	}
	now := s.now()
	if len(ops) == 0 {
		return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxMissingOperation, charge, nil)
	}
	if tb := env.TimeBounds(); tb != nil {
		if tb.MinTime != 0 && now.Unix() < int64(tb.MinTime) {
			return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxTooEarly, charge, nil)
		}
		if tb.MaxTime != 0 && now.Unix() > int64(tb.MaxTime) {
			return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxTooLate, charge, nil)
		}
	}
	if bump == nil && int64(env.Fee()) < charge {
		return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxInsufficientFee, charge, nil)
	}
	acc, ok := s.accounts[src]
	if !ok {
		return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxNoAccount, 0, nil)
	}
	if env.SeqNum() != acc.seq+1 {
		return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxBadSeq, charge, nil)
	}
	sigs := env.Signatures()
	used := make([]bool, len(sigs))
	signed := func(addr string) bool { return signedBy(sigs, signedHash, addr, used) }
	if !signed(src) {
		return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxBadAuth, charge, nil)
	}
	if bump == nil && acc.spendable() < charge {
		return s.rejectLocked(raw, nil, xdr.TransactionResultCodeTxInsufficientBalance, charge, nil)
	}

	// Operation checks that need no balances. Core stops at the first
	// invalid operation; the others keep their default (success) result.
	opSources := make([]string, len(ops))
	checked := make([]opOutcome, len(ops))
	for i := range checked {
		checked[i] = payOutcome(xdr.PaymentResultCodePaymentSuccess)
	}
	for i, op := range ops {
		opSources[i] = src
		if op.SourceAccount != nil {
			id := op.SourceAccount.ToAccountId()
			opSources[i] = id.Address()
		}
		var bad *opOutcome
		switch {
		case op.Body.Type != xdr.OperationTypePayment:
			// Only payments are simulated; anything else is refused the
			// way a network that does not support it would.
			bad = ptr(opResult(xdr.OperationResultCodeOpNotSupported))
		case s.accounts[opSources[i]] == nil:
			bad = ptr(opResult(xdr.OperationResultCodeOpNoAccount))
		case !signed(opSources[i]):
			bad = ptr(opResult(xdr.OperationResultCodeOpBadAuth))
		case !validPayment(*op.Body.PaymentOp):
			bad = ptr(payOutcome(xdr.PaymentResultCodePaymentMalformed))
		}
		if bad != nil {
			checked[i] = *bad
			return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxFailed, charge, checked)
		}
	}
	if slices.Contains(used, false) {
		return s.rejectLocked(raw, bump, xdr.TransactionResultCodeTxBadAuthExtra, charge, nil)
	}

	// Into a ledger: the fee and the sequence number are spent whatever
	// the operations do.
	ledger := s.closeLedgerLocked()
	closed := s.closedAt[ledger]
	payer := s.accounts[feeSource]
	payer.native -= charge
	payer.modified, payer.modTime = ledger, closed
	acc.setSeq(ledger, env.SeqNum())
	acc.modified, acc.modTime = ledger, closed

	// Operations apply to copies of the accounts they touch, kept only if
	// every one succeeds: a transaction is atomic.
	scratch := map[string]*ledgerAccount{}
	get := func(id string) *ledgerAccount {
		if c, ok := scratch[id]; ok {
			return c
		}
		a, ok := s.accounts[id]
		if !ok {
			return nil
		}
		c := a.clone()
		scratch[id] = c
		return c
	}
	results := make([]opOutcome, len(ops))
	successful := true
	for i, op := range ops {
		results[i] = pay(get, opSources[i], *op.Body.PaymentOp)
		successful = successful && results[i].code == "op_success"
	}
	if successful {
		for id, c := range scratch {
			c.modified, c.modTime = ledger, closed
			s.accounts[id] = c
		}
	}

	code := xdr.TransactionResultCodeTxSuccess
	if !successful {
		code = xdr.TransactionResultCodeTxFailed
	}
	resultXDR := resultXDR(bump, code, charge, results)
	resource := s.txResource(env, raw, hash, hash, bump, ledger, closed, successful, charge, resultXDR)
	e := &txEntry{resource: resource, ledger: ledger, successful: successful, accounts: []string{src}}
	if !successful {
		e.failure = failureProblem(raw, bump, code, results, resultXDR)
	}
	if !slices.Contains(e.accounts, feeSource) {
		e.accounts = append(e.accounts, feeSource)
	}
	for _, op := range ops {
		destID := op.Body.PaymentOp.Destination.ToAccountId()
		if d := destID.Address(); !slices.Contains(e.accounts, d) {
			e.accounts = append(e.accounts, d)
		}
	}
	s.txs[hash] = e
	s.txList = append(s.txList, e)
	if bump != nil {
		// Horizon finds a fee bump by its inner transaction's hash too,
		// and serves it under that hash.
		inner := *e
		innerHex := hex.EncodeToString(bump.innerHash[:])
		inner.resource = s.txResource(env, raw, hash, innerHex, bump, ledger, closed, successful, charge, resultXDR)
		s.txs[innerHex] = &inner
	}

	// The watched account's history shows the operations it takes part
	// in, with the transaction (and its memo) embedded.
	for i, op := range ops {
		p := paymentRecord(opSources[i], *op.Body.PaymentOp, env.Memo(), successful, hash, closed)
		s.applied = append(s.applied, p)
		s.historyLocked(p, ledger, int64(i+1), resource)
		if p.From == s.account || p.To == s.account {
			s.appendLocked(p, ledger, int64(i+1), resource)
		}
	}
	if inner, ok := s.txs[txHashOf(bump)]; ok && bump != nil {
		inner.ops = e.ops
	}
	s.lastTxHash, s.lastOp = hash, int64(len(ops))
	return e.answer()
}

// feeBump is what applying a fee bump needs beyond its envelope's
// accessors (which read its inner transaction).
type feeBump struct {
	innerHash [32]byte
	fee       int64 // the fee bump's own fee, for all operations
}

// signedBy reports whether one of sigs is addr's signature of hash,
// marking in used each signature that is.
func signedBy(sigs []xdr.DecoratedSignature, hash [32]byte, addr string, used []bool) bool {
	kp, err := keypair.ParseAddress(addr)
	if err != nil {
		return false
	}
	hint, found := xdr.SignatureHint(kp.Hint()), false
	for i, sig := range sigs {
		if sig.Hint == hint && kp.Verify(hash[:], sig.Signature) == nil {
			used[i], found = true, true
		}
	}
	return found
}

func ptr[T any](v T) *T { return &v }

// validPayment is the payment's own validity (core's doCheckValid): a
// positive amount and a well-formed asset.
func validPayment(op xdr.PaymentOp) bool {
	if op.Amount <= 0 {
		return false
	}
	switch op.Asset.Type {
	case xdr.AssetTypeAssetTypeNative:
		return true
	case xdr.AssetTypeAssetTypeCreditAlphanum4, xdr.AssetTypeAssetTypeCreditAlphanum12:
		return op.Asset.GetCode() != ""
	}
	return false
}

// pay applies one payment to the accounts get returns, checking in
// stellar-core's order: the destination, its trustline and room, then the
// source's trustline and funds. An asset's issuer needs no trustline: it
// creates the asset it pays and destroys the asset it receives.
func pay(get func(string) *ledgerAccount, from string, op xdr.PaymentOp) opOutcome {
	destID := op.Destination.ToAccountId()
	to := destID.Address()
	amt := int64(op.Amount)
	dst := get(to)
	if dst == nil {
		return payOutcome(xdr.PaymentResultCodePaymentNoDestination)
	}
	src := get(from)
	if op.Asset.Type == xdr.AssetTypeAssetTypeNative {
		if dst.native > maxTrustLimit-amt {
			return payOutcome(xdr.PaymentResultCodePaymentLineFull)
		}
		if src.spendable() < amt {
			return payOutcome(xdr.PaymentResultCodePaymentUnderfunded)
		}
		src.native -= amt
		dst.native += amt
		return payOutcome(xdr.PaymentResultCodePaymentSuccess)
	}
	issuer := op.Asset.GetIssuer()
	key := creditKey(op.Asset.GetCode(), issuer)
	if to != issuer {
		bal, ok := dst.lines[key]
		if !ok {
			return payOutcome(xdr.PaymentResultCodePaymentNoTrust)
		}
		if bal > maxTrustLimit-amt {
			return payOutcome(xdr.PaymentResultCodePaymentLineFull)
		}
	}
	if from != issuer {
		bal, ok := src.lines[key]
		if !ok {
			return payOutcome(xdr.PaymentResultCodePaymentSrcNoTrust)
		}
		if bal < amt {
			return payOutcome(xdr.PaymentResultCodePaymentUnderfunded)
		}
		src.lines[key] -= amt
	}
	if to != issuer {
		dst.lines[key] += amt
	}
	return payOutcome(xdr.PaymentResultCodePaymentSuccess)
}

// opOutcome is an operation's result, as XDR and as Horizon's code.
type opOutcome struct {
	code   string
	result xdr.OperationResult
}

func payOutcome(c xdr.PaymentResultCode) opOutcome {
	return outcomeOf(xdr.OperationResult{
		Code: xdr.OperationResultCodeOpInner,
		Tr:   &xdr.OperationResultTr{Type: xdr.OperationTypePayment, PaymentResult: &xdr.PaymentResult{Code: c}},
	})
}

func opResult(c xdr.OperationResultCode) opOutcome {
	return outcomeOf(xdr.OperationResult{Code: c})
}

func outcomeOf(r xdr.OperationResult) opOutcome {
	return opOutcome{code: resultcodes.Operation(r), result: r}
}

// resultXDR is the transaction's TransactionResult, base64 as Horizon
// serves it; operation results only for tx_success and tx_failed, as the
// XDR union has them. A fee bump's is tx_fee_bump_inner_success or
// _failed, holding its inner transaction's hash and result.
func resultXDR(bump *feeBump, code xdr.TransactionResultCode, fee int64, ops []opOutcome) string {
	var results *[]xdr.OperationResult
	if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFailed {
		rs := make([]xdr.OperationResult, len(ops))
		for i, o := range ops {
			rs[i] = o.result
		}
		results = &rs
	}
	res := xdr.TransactionResult{FeeCharged: xdr.Int64(fee), Result: xdr.TransactionResultResult{Code: code, Results: results}}
	if bump != nil {
		outer := xdr.TransactionResultCodeTxFeeBumpInnerFailed
		if code == xdr.TransactionResultCodeTxSuccess {
			outer = xdr.TransactionResultCodeTxFeeBumpInnerSuccess
		}
		res.Result = xdr.TransactionResultResult{Code: outer, InnerResultPair: &xdr.InnerTransactionResultPair{
			TransactionHash: bump.innerHash,
			Result:          xdr.InnerTransactionResult{Result: xdr.InnerTransactionResultResult{Code: code, Results: results}},
		}}
	}
	out, err := xdr.MarshalBase64(res)
	if err != nil {
		panic(fmt.Sprintf("horizontest: encoding a transaction result: %v", err))
	}
	return out
}

// resultCodes is extras.result_codes of transaction_failed; a fee bump's
// names its inner transaction's code too, and the operations are the
// inner transaction's.
type resultCodes struct {
	Transaction      string   `json:"transaction"`
	InnerTransaction string   `json:"inner_transaction,omitempty"`
	Operations       []string `json:"operations,omitempty"`
}

type failureExtras struct {
	EnvelopeXDR string      `json:"envelope_xdr"`
	ResultCodes resultCodes `json:"result_codes"`
	ResultXDR   string      `json:"result_xdr"`
}

// failureProblem is Horizon's transaction_failed problem (status 400).
// Operation codes are listed only when operations ran (tx_failed).
func failureProblem(raw string, bump *feeBump, code xdr.TransactionResultCode, ops []opOutcome, resultXDR string) []byte {
	rc := resultCodes{Transaction: resultcodes.Transaction(code)}
	if bump != nil {
		rc = resultCodes{Transaction: "tx_fee_bump_inner_failed", InnerTransaction: resultcodes.Transaction(code)}
	}
	if code == xdr.TransactionResultCodeTxFailed {
		for _, o := range ops {
			rc.Operations = append(rc.Operations, o.code)
		}
	}
	return mustJSON(problem{
		Type:   "https://stellar.org/horizon-errors/transaction_failed",
		Title:  "Transaction Failed",
		Status: http.StatusBadRequest,
		Detail: "The transaction failed when submitted to the stellar network. The `extras.result_codes` field on " +
			"this response contains further details.  Descriptions of each code can be found at: " +
			"https://developers.stellar.org/docs/data/apis/horizon/api-reference/errors/result-codes/transactions",
		Extras: failureExtras{EnvelopeXDR: raw, ResultCodes: rc, ResultXDR: resultXDR},
	})
}

// rejectLocked answers a transaction refused before any ledger: nothing
// is charged or recorded.
// bump is nil unless the inner transaction of a fee bump failed them.
func (s *Server) rejectLocked(raw string, bump *feeBump, code xdr.TransactionResultCode, fee int64, ops []opOutcome) (int, string, []byte) {
	s.countRejectionLocked(code)
	return http.StatusBadRequest, problemJSON, failureProblem(raw, bump, code, ops, resultXDR(bump, code, fee, ops))
}

// txLinks are a transaction resource's links, in Horizon's order.
type txLinks struct {
	Self        tlink `json:"self"`
	Account     tlink `json:"account"`
	Ledger      tlink `json:"ledger"`
	Operations  tlink `json:"operations"`
	Effects     tlink `json:"effects"`
	Precedes    tlink `json:"precedes"`
	Succeeds    tlink `json:"succeeds"`
	Transaction tlink `json:"transaction"`
}

// txResourceBody is Horizon's transaction resource. The memo comes first,
// as Horizon's wrapper struct puts it. result_meta_xdr and fee_meta_xdr
// are left out, as Horizon leaves them out when it skips transaction meta.
type txResourceBody struct {
	Memo                  *string        `json:"memo,omitempty"`
	MemoBytes             string         `json:"memo_bytes,omitempty"`
	Links                 txLinks        `json:"_links"`
	ID                    string         `json:"id"`
	PagingToken           string         `json:"paging_token"`
	Successful            bool           `json:"successful"`
	Hash                  string         `json:"hash"`
	Ledger                int64          `json:"ledger"`
	CreatedAt             string         `json:"created_at"`
	SourceAccount         string         `json:"source_account"`
	SourceAccountSequence string         `json:"source_account_sequence"`
	FeeAccount            string         `json:"fee_account"`
	FeeCharged            string         `json:"fee_charged"`
	MaxFee                string         `json:"max_fee"`
	OperationCount        int            `json:"operation_count"`
	EnvelopeXDR           string         `json:"envelope_xdr"`
	ResultXDR             string         `json:"result_xdr"`
	MemoType              string         `json:"memo_type"`
	Signatures            []string       `json:"signatures"`
	ValidAfter            string         `json:"valid_after,omitempty"`
	ValidBefore           string         `json:"valid_before,omitempty"`
	Preconditions         *preconditions `json:"preconditions,omitempty"`
	FeeBumpTransaction    *bumpPart      `json:"fee_bump_transaction,omitempty"`
	InnerTransaction      *bumpPart      `json:"inner_transaction,omitempty"`
}

// bumpPart is the outer or inner transaction of a fee bump, as Horizon
// shows them (max_fee only on the inner one).
type bumpPart struct {
	Hash       string   `json:"hash"`
	Signatures []string `json:"signatures"`
	MaxFee     string   `json:"max_fee,omitempty"`
}

type preconditions struct {
	TimeBounds *timeBounds `json:"timebounds,omitempty"`
}

// timeBounds are Unix seconds as decimal strings, as Horizon writes them.
type timeBounds struct {
	MinTime string `json:"min_time"`
	MaxTime string `json:"max_time,omitempty"`
}

// txResource renders transaction hash as served under the hash as (the
// inner transaction's, for a fee bump looked up by it).
func (s *Server) txResource(env xdr.TransactionEnvelope, raw, hash, as string, bump *feeBump, ledger int64, closed time.Time,
	successful bool, fee int64, resultXDR string) []byte {
	srcID := env.SourceAccount().ToAccountId()
	src := srcID.Address()
	feeID := env.FeeAccount().ToAccountId()
	txURL := s.URL + "/transactions/" + as
	token := strconv.FormatInt(txTOID(ledger), 10)
	memoType, memo := renderMemo(env.Memo())
	body := txResourceBody{
		Links: txLinks{
			Self:        tlink{Href: txURL},
			Account:     tlink{Href: s.URL + "/accounts/" + src},
			Ledger:      tlink{Href: s.URL + "/ledgers/" + strconv.FormatInt(ledger, 10)},
			Operations:  tlink{Href: txURL + "/operations{?cursor,limit,order}", Templated: true},
			Effects:     tlink{Href: txURL + "/effects{?cursor,limit,order}", Templated: true},
			Precedes:    tlink{Href: s.URL + "/transactions?order=asc&cursor=" + token},
			Succeeds:    tlink{Href: s.URL + "/transactions?order=desc&cursor=" + token},
			Transaction: tlink{Href: txURL},
		},
		ID: as, PagingToken: token, Successful: successful, Hash: as, Ledger: ledger,
		CreatedAt:             closed.Format(time.RFC3339),
		SourceAccount:         src,
		SourceAccountSequence: strconv.FormatInt(env.SeqNum(), 10),
		FeeAccount:            feeID.Address(),
		FeeCharged:            strconv.FormatInt(fee, 10),
		MaxFee:                strconv.FormatInt(int64(env.Fee()), 10),
		OperationCount:        len(env.Operations()),
		EnvelopeXDR:           raw,
		ResultXDR:             resultXDR,
		MemoType:              memoType,
		Signatures:            []string{},
	}
	if memoType != "none" {
		body.Memo = &memo
	}
	if memoType == "text" {
		body.MemoBytes = base64.StdEncoding.EncodeToString([]byte(memo))
	}
	sigs := func(ds []xdr.DecoratedSignature) []string {
		out := []string{}
		for _, sig := range ds {
			out = append(out, base64.StdEncoding.EncodeToString(sig.Signature))
		}
		return out
	}
	body.Signatures = sigs(env.Signatures())
	if bump != nil {
		body.MaxFee = strconv.FormatInt(bump.fee, 10)
		body.FeeBumpTransaction = &bumpPart{Hash: hash, Signatures: sigs(env.FeeBumpSignatures())}
		body.InnerTransaction = &bumpPart{Hash: hex.EncodeToString(bump.innerHash[:]), Signatures: body.Signatures,
			MaxFee: strconv.FormatInt(int64(env.Fee()), 10)}
		if as == hash {
			body.Signatures = body.FeeBumpTransaction.Signatures
		}
	}
	if tb := env.TimeBounds(); tb != nil {
		body.ValidAfter = time.Unix(int64(tb.MinTime), 0).UTC().Format(time.RFC3339)
		b := &timeBounds{MinTime: strconv.FormatUint(uint64(tb.MinTime), 10)}
		if tb.MaxTime != 0 {
			body.ValidBefore = time.Unix(int64(tb.MaxTime), 0).UTC().Format(time.RFC3339)
			b.MaxTime = strconv.FormatUint(uint64(tb.MaxTime), 10)
		}
		body.Preconditions = &preconditions{TimeBounds: b}
	}
	return mustJSON(body)
}

// renderMemo gives Horizon's memo_type and memo: text as is, an id in
// decimal, a hash or return hash in base64.
func renderMemo(m xdr.Memo) (typ, memo string) {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return "text", m.MustText()
	case xdr.MemoTypeMemoId:
		return "id", strconv.FormatUint(uint64(m.MustId()), 10)
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		return "hash", base64.StdEncoding.EncodeToString(h[:])
	case xdr.MemoTypeMemoReturn:
		h := m.MustRetHash()
		return "return", base64.StdEncoding.EncodeToString(h[:])
	}
	return "none", ""
}

// paymentRecord describes a submitted payment for the history.
func paymentRecord(from string, op xdr.PaymentOp, memo xdr.Memo, successful bool, hash string, at time.Time) Payment {
	destID := op.Destination.ToAccountId()
	p := Payment{
		Type: "payment", From: from, To: destID.Address(),
		AssetType: xdr.AssetTypeToString[op.Asset.Type],
		Amount:    amount.String(op.Amount),
		TxHash:    hash, CreatedAt: at, Successful: &successful,
	}
	if op.Asset.Type != xdr.AssetTypeAssetTypeNative {
		p.AssetCode, p.AssetIssuer = op.Asset.GetCode(), op.Asset.GetIssuer()
	}
	if med, ok := op.Destination.GetMed25519(); ok {
		p.ToMuxed = op.Destination.Address()
		p.ToMuxedID = strconv.FormatUint(uint64(med.Id), 10)
	}
	p.MemoType, p.Memo = renderMemo(memo)
	defaults(&p)
	return p
}
