// Package horizontest is an in-process Horizon server for tests, end-to-end
// tests and benchmarks of code that reads a Stellar account's payments or
// sends payments. It serves one watched account's "payments for account"
// endpoint, both as JSON pages and as a Server-Sent Events stream, in
// Horizon's documented formats, and can inject the failures a real Horizon
// or the network in front of it produces: rate limiting, server errors,
// history that has been pruned, dropped, duplicated, silent and lossy
// streams.
//
// It also keeps a small ledger of accounts (native and credit balances,
// trustlines, sequence numbers) and takes transactions: POST /transactions
// decodes and checks the real XDR envelope like stellar-core would, applies
// its payments, and answers with Horizon's success or transaction_failed
// bodies, fee bumps included; GET /fee_stats reports the network's base
// fee (SetBaseFee: surge pricing); GET /transactions/{hash}, GET
// /accounts/{id} (with its
// Latest-Ledger header), GET /accounts/{id}/transactions and GET
// /ledgers/{sequence} read the result, GET / says how far the history
// reaches, and LedgerPayments lists every payment the ledger took. GET
// /transactions/{hash}/payments and GET /accounts/{id}/payments of any
// other account serve the payments of the whole network's history
// (history.go). The
// network closes a ledger every five seconds of the server's clock.
// Submissions can be delayed, answered 504 after being applied, and have
// their sequence number stolen; the history can be made to trail the
// clock, and GETs be answered in turn by instances that trail the network
// by some ledgers, as behind a load balancer (see ledger.go, submit.go,
// root.go and instances.go).
//
// Where it knowingly differs from Horizon:
//   - operations of failed transactions are always listed (Horizon lists
//     them only with include_failed=true), so that clients' filters run;
//   - every operation is in its own ledger unless AddPayment is given the
//     transaction hash of the operation before it;
//   - only payment operations are taken; accounts have one signer (their
//     master key, weight 1, thresholds 0) and no liabilities or offers.
//
// It may import the standard library, models, stellar/resultcodes (Horizon's
// names of results, which the payout client reads), and the Stellar SDK's
// amount, keypair, network and xdr packages (the same envelope code the
// service signs with, so a test cannot pass on a home-made decoder).
package horizontest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/network"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
)

// Horizon's page size limits, which the server enforces like Horizon does.
const (
	defaultLimit = 10
	maxLimit     = 200
)

// firstLedger is where the fake chain's history starts; any value works,
// a realistic one makes paging tokens look like Horizon's.
const firstLedger = 1_000_000

// Payment describes one operation to append to the account's history.
// Zero fields take the documented defaults.
type Payment struct {
	// Type is the Horizon operation type: "payment" (default),
	// "path_payment_strict_receive", "path_payment_strict_send",
	// "create_account", "account_merge", or any other name, which is served
	// with the common fields only.
	Type string
	// From and To are the sender and receiver (the funder and the new
	// account for create_account; the merged account and the destination
	// for account_merge).
	From, To string
	// AssetType is "native" (default), "credit_alphanum4" or
	// "credit_alphanum12"; AssetCode and AssetIssuer name a credit asset.
	AssetType, AssetCode, AssetIssuer string
	// Amount is served verbatim, so a test can send malformed amounts.
	// An account_merge's record has none, as in Horizon: its Amount is
	// served in its effects (GET /operations/{id}/effects).
	// SourceAmount is what the sender spent on a path payment (default
	// Amount), in the source asset (default native).
	Amount, SourceAmount                                string
	SourceAssetType, SourceAssetCode, SourceAssetIssuer string
	// ToMuxed and ToMuxedID are the muxed account (M...) a payment was sent
	// to and its id in decimal (a JSON string, as Horizon writes it); both
	// are empty, and absent from the record, for a plain account. To is
	// then the muxed account's G... account.
	ToMuxed, ToMuxedID string
	// FromMuxed and FromMuxedID are the same for the sender: the muxed
	// account (M...) a payment was sent from, From being its G... account.
	FromMuxed, FromMuxedID string
	// MemoType is "none" (default), "text", "id", "hash" or "return"; Memo
	// is served verbatim (base64 for hash and return, as Horizon does).
	MemoType, Memo string
	// Successful is the transaction's outcome, default true.
	Successful *bool
	// TxHash defaults to a hash derived from the ledger. Giving the hash of
	// the previous operation puts this one in the same transaction.
	TxHash string
	// CreatedAt is the ledger close time, default now.
	CreatedAt time.Time
}

// record is one operation of the account's history, rendered once.
type record struct {
	token    int64
	plain    []byte           // the operation as served without join
	joined   []byte           // the operation with its transaction embedded
	dup      bool             // served twice
	withheld bool             // never sent on streams
	effects  []map[string]any // an account_merge's effects (unrecorded.go)
}

// Server is a Horizon test server for one account. All methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:1234.
	URL string

	// Faults inject failures of requests (pages or streams): FailNext's
	// status with a Horizon problem body, 429 and 503 carrying a
	// Retry-After header (SetRetryAfter).
	upstreamtest.Faults
	// GoneNext's, DuplicateNext's and WithholdNext's requests and records.
	gone, dup, withhold upstreamtest.Next

	srv     *httptest.Server
	account string
	done    chan struct{}

	mu         sync.Mutex
	records    []*record
	history    []historyOp // every payment of the network (history.go)
	ledger     int64
	lastTxHash string
	lastOp     int64
	changed    chan struct{} // closed and replaced when streams must look again
	requests   []string
	streams    int // streams opened
	open       int // streams open now
	keepAlive  time.Duration
	retryAfter int
	dropArmed  bool
	dropLeft   int
	silentTill time.Time
	usdcIssuer string
	balances   []claimable // claimable balances (unrecorded.go)

	// The ledger that takes transactions (ledger.go, submit.go).
	passphrase  string
	baseFee     int64 // the network's fee per operation, in stroops (fees.go)
	feeStatsBid int64 // what /fee_stats reports instead, if not 0
	now         func() time.Time
	accounts    map[string]*ledgerAccount
	txs         map[string]*txEntry
	timeoutN    int           // submissions to answer 504 after applying
	delayN      int           // submissions to hold before checking
	delay       time.Duration // how long delayN submissions are held
	submitted   int           // submissions received (POST /transactions)
	applied     []Payment     // payment operations of transactions in the ledger
	historyLag  time.Duration // how far the root's latest ledger trails the clock

	// The network's ledgers and the Horizon instances that serve them
	// (instances.go).
	closedAt map[int64]time.Time // close time of each ledger
	txList   []*txEntry          // transactions in the ledger, in order
	lags     []int64             // how many ledgers each instance trails the network by
	turn     int                 // the instance that answers the next GET

	// Submissions refused before any ledger, by result code (rejections.go).
	rejections map[string]int
}

// New starts a server holding the (empty) history of account.
func New(account string) *Server {
	s := &Server{
		account:    account,
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
		ledger:     firstLedger,
		keepAlive:  time.Second,
		retryAfter: 1,
		passphrase: network.TestNetworkPassphrase,
		baseFee:    minBaseFee,
		now:        time.Now,
		accounts:   make(map[string]*ledgerAccount),
		txs:        make(map[string]*txEntry),
		closedAt:   map[int64]time.Time{firstLedger: time.Now().UTC().Truncate(time.Second)},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close ends open streams and shuts the server down.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetKeepAlive sets how often streams send a keep-alive comment (default
// 1s). Tests with a short client idle timeout need a shorter interval.
func (s *Server) SetKeepAlive(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepAlive = d
	s.notifyLocked()
}

// SetRetryAfter sets the Retry-After seconds sent with injected 429 and 503
// answers (default 1; 0 sends none).
func (s *Server) SetRetryAfter(seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryAfter = seconds
}

// AddPayment appends an operation to the account's history and pushes it to
// open streams. It returns the operation's id, which is also its paging
// token.
func (s *Server) AddPayment(p Payment) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	defaults(&p)
	if p.TxHash != "" && p.TxHash == s.lastTxHash {
		s.lastOp++
	} else {
		s.closeLedgerLocked()
		s.lastOp = 1
	}
	if p.TxHash == "" {
		sum := sha256.Sum256([]byte("horizontest tx " + strconv.FormatInt(s.ledger, 10)))
		p.TxHash = hex.EncodeToString(sum[:])
	}
	s.lastTxHash = p.TxHash
	id := s.appendLocked(p, s.ledger, s.lastOp, nil)
	s.historyLocked(p, s.ledger, s.lastOp, nil)
	return id
}

// txTOID is the id of a ledger's transaction, as Horizon's ids are TOIDs:
// ledger, transaction order (always 1 here: one transaction per ledger) and
// operation order (0 for the transaction itself) packed into an int64.
func txTOID(ledger int64) int64 { return ledger<<32 | 1<<12 }

// appendLocked adds operation op (1-based) of the transaction in ledger to
// the watched account's history. tx is the transaction resource to embed
// on join=transactions, nil for the synthetic one AddPayment describes.
func (s *Server) appendLocked(p Payment, ledger, op int64, tx json.RawMessage) string {
	txID := txTOID(ledger)
	rec := &record{token: txID | op}
	rec.plain, rec.joined, _ = s.render(p, rec.token, txID, ledger, tx)
	if p.Type == "account_merge" {
		rec.effects = s.mergeEffects(p, rec.token)
	}
	rec.dup, rec.withheld = s.dup.Take(), s.withhold.Take()
	s.records = append(s.records, rec)
	s.notifyLocked()
	return strconv.FormatInt(rec.token, 10)
}

// ControlPaymentsPath is where a person (or a script) sends a payment to
// the account over HTTP, when the server runs inside `memocart dev`: POST a
// JSON object {"amount":"117.73","asset":"USDC","memo":"12345678906"} with
// optional "issuer" (default USDCIssuer), "memo_type" (default "text") and
// "from". asset "XLM" is the native asset. The answer is {"id": <paging
// token>}. Horizon has no such path; it cannot collide with one.
const ControlPaymentsPath = "/_horizontest/payments"

// controlPaymentRequest is the body ControlPaymentsPath takes.
type controlPaymentRequest struct {
	Amount   string `json:"amount"`
	Asset    string `json:"asset"`
	Issuer   string `json:"issuer"`
	Memo     string `json:"memo"`
	MemoType string `json:"memo_type"`
	From     string `json:"from"`
}

// readControl reads the JSON body of a POST to a control path into v,
// refusing unknown fields and bodies over 64 KiB. When it cannot, it
// answers a problem (detail post for another method, usage for a bad
// body) and returns false.
func readControl(w http.ResponseWriter, r *http.Request, v any, post, usage string) bool {
	if r.Method != http.MethodPost {
		writeProblem(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed", post)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", usage)
		return false
	}
	return true
}

func (s *Server) controlPayment(w http.ResponseWriter, r *http.Request) {
	const usage = `send {"amount":"<decimal>","asset":"USDC"|"XLM","memo":"<order number>"}`
	var req controlPaymentRequest
	if !readControl(w, r, &req, "POST a payment", usage) {
		return
	}
	if req.Amount == "" {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", usage)
		return
	}
	amount, ok := horizonAmount(req.Amount)
	if !ok {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "amount must be a positive decimal with at most 7 decimal places")
		return
	}
	p := Payment{From: req.From, To: s.account, Amount: amount, Memo: req.Memo, MemoType: req.MemoType}
	if p.From == "" {
		p.From = DevPayer
	}
	if p.MemoType == "" && p.Memo != "" {
		p.MemoType = "text"
	}
	switch code := strings.ToUpper(req.Asset); code {
	case "", "XLM", "NATIVE":
		p.AssetType = "native"
	default:
		p.AssetType, p.AssetCode, p.AssetIssuer = "credit_alphanum4", code, req.Issuer
		if len(code) > 4 {
			p.AssetType = "credit_alphanum12"
		}
		if p.AssetIssuer == "" {
			s.mu.Lock()
			p.AssetIssuer = s.usdcIssuer
			s.mu.Unlock()
		}
	}
	id := s.AddPayment(p)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
}

// horizonAmount writes a decimal amount the way Horizon does, with seven
// decimal places: "117.73" is "117.7300000".
func horizonAmount(a string) (string, bool) {
	whole, frac, _ := strings.Cut(a, ".")
	if whole == "" || len(frac) > 7 || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return "", false
	}
	if strings.Trim(whole+frac, "0") == "" {
		return "", false
	}
	return whole + "." + frac + strings.Repeat("0", 7-len(frac)), true
}

// DevPayer is the sender of payments made through ControlPaymentsPath
// without a "from": a well-formed account id that belongs to nobody.
const DevPayer = "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"

// SetUSDCIssuer sets the issuer ControlPaymentsPath gives credit assets
// sent without one: the USDC issuer the service under test accepts.
func (s *Server) SetUSDCIssuer(issuer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usdcIssuer = issuer
}

// GoneNext makes the next n requests answer 410 Gone with Horizon's
// before_history problem, as when a cursor predates the server's history.
func (s *Server) GoneNext(n int) { s.gone.Arm(n) }

// DropStreamAfter cuts the connection of the open stream (or the next one)
// abruptly, without a closing event, once streams have sent that many more
// records: a mid-stream network failure. It applies once.
func (s *Server) DropStreamAfter(events int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropArmed, s.dropLeft = true, events
	s.notifyLocked()
}

// DuplicateNext makes the next n operations added be sent twice on streams
// and listed twice in pages.
func (s *Server) DuplicateNext(n int) { s.dup.Arm(n) }

// WithholdNext makes the next n operations added appear in pages but never
// on streams: a stream that silently missed them.
func (s *Server) WithholdNext(n int) { s.withhold.Arm(n) }

// SilenceStream makes streams, open and new, send nothing at all (no
// records, no keep-alives, not even response headers) for d. Pages are
// still answered.
func (s *Server) SilenceStream(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silentTill = time.Now().Add(d)
	s.notifyLocked()
}

// Requests returns the path and query of every request received, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// StreamsOpened returns how many streams the server has started (answered
// 200 to), including closed ones.
func (s *Server) StreamsOpened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

// OpenStreams returns how many streams are open now.
func (s *Server) OpenStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// notifyLocked wakes every stream so it re-reads the server's state.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func defaults(p *Payment) {
	if p.Type == "" {
		p.Type = "payment"
	}
	if p.AssetType == "" {
		p.AssetType = "native"
	}
	if p.SourceAmount == "" {
		p.SourceAmount = p.Amount
	}
	if p.SourceAssetType == "" {
		p.SourceAssetType = "native"
	}
	if p.MemoType == "" {
		p.MemoType = "none"
	}
	if p.Successful == nil {
		ok := true
		p.Successful = &ok
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
}

// typeIDs are Horizon's type_i values of the operation types it names.
var typeIDs = map[string]int{
	"create_account":              0,
	"payment":                     1,
	"path_payment_strict_receive": 2,
	"account_merge":               8,
	"path_payment_strict_send":    13,
	"invoke_host_function":        24,
}

type link struct {
	Href string `json:"href"`
}

// tlink is a link that may be a URI template, as Horizon marks them.
type tlink struct {
	Href      string `json:"href"`
	Templated bool   `json:"templated,omitempty"`
}

// render builds the operation's JSON without and with its transaction.
func (s *Server) render(p Payment, token, txID, ledger int64, txBody json.RawMessage) (plain, joined, txRes []byte) {
	id := strconv.FormatInt(token, 10)
	created := p.CreatedAt.UTC().Format(time.RFC3339)
	op := map[string]any{
		"_links": map[string]link{
			"self":        {s.URL + "/operations/" + id},
			"transaction": {s.URL + "/transactions/" + p.TxHash},
			"effects":     {s.URL + "/operations/" + id + "/effects"},
			"succeeds":    {s.URL + "/effects?order=desc&cursor=" + id},
			"precedes":    {s.URL + "/effects?order=asc&cursor=" + id},
		},
		"id":                     id,
		"paging_token":           id,
		"transaction_successful": *p.Successful,
		"source_account":         p.From,
		"type":                   p.Type,
		"type_i":                 typeIDs[p.Type],
		"created_at":             created,
		"transaction_hash":       p.TxHash,
	}
	switch p.Type {
	case "payment", "path_payment_strict_receive", "path_payment_strict_send":
		putAsset(op, "", p.AssetType, p.AssetCode, p.AssetIssuer)
		op["from"], op["to"], op["amount"] = p.From, p.To, p.Amount
		if p.ToMuxed != "" {
			op["to_muxed"], op["to_muxed_id"] = p.ToMuxed, p.ToMuxedID
		}
		if p.FromMuxed != "" {
			op["from_muxed"], op["from_muxed_id"] = p.FromMuxed, p.FromMuxedID
		}
		if p.Type != "payment" {
			putAsset(op, "source_", p.SourceAssetType, p.SourceAssetCode, p.SourceAssetIssuer)
			op["source_amount"] = p.SourceAmount
			op["path"] = []any{}
		}
		if p.Type == "path_payment_strict_receive" {
			op["source_max"] = p.SourceAmount
		}
		if p.Type == "path_payment_strict_send" {
			op["destination_min"] = p.Amount
		}
	case "create_account":
		op["funder"], op["account"], op["starting_balance"] = p.From, p.To, p.Amount
	case "account_merge":
		op["account"], op["into"] = p.From, p.To
	}
	plain = mustJSON(op)
	if txBody != nil {
		op["transaction"] = txBody
		return plain, mustJSON(op), txBody
	}

	tx := map[string]any{
		"_links":          map[string]link{"self": {s.URL + "/transactions/" + p.TxHash}},
		"id":              p.TxHash,
		"paging_token":    strconv.FormatInt(txID, 10),
		"successful":      *p.Successful,
		"hash":            p.TxHash,
		"ledger":          ledger,
		"created_at":      created,
		"source_account":  p.From,
		"fee_account":     p.From,
		"fee_charged":     "100",
		"max_fee":         "100",
		"operation_count": 1,
		"envelope_xdr":    "",
		"result_xdr":      "",
		"memo_type":       p.MemoType,
		"signatures":      []string{},
	}
	if p.MemoType != "none" {
		tx["memo"] = p.Memo
	}
	if p.MemoType == "text" {
		tx["memo_bytes"] = base64.StdEncoding.EncodeToString([]byte(p.Memo))
	}
	op["transaction"] = tx
	joined = mustJSON(op)
	return plain, joined, mustJSON(tx)
}

func putAsset(m map[string]any, prefix, typ, code, issuer string) {
	m[prefix+"asset_type"] = typ
	if typ != "native" {
		m[prefix+"asset_code"] = code
		m[prefix+"asset_issuer"] = issuer
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("horizontest: rendering JSON: %v", err))
	}
	return b
}

// problem is Horizon's error body (RFC 7807 problem details).
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Extras any    `json:"extras,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, kind, title, detail string) {
	writeProblemExtras(w, status, kind, title, detail, nil)
}

func writeProblemExtras(w http.ResponseWriter, status int, kind, title, detail string, extras any) {
	writeJSON(w, status, "application/problem+json; charset=utf-8", mustJSON(problem{
		Type:   "https://stellar.org/horizon-errors/" + kind,
		Title:  title,
		Status: status,
		Detail: detail,
		Extras: extras,
	}))
}

func writeJSON(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// problemKinds are Horizon's problem types for the statuses FailNext takes.
var problemKinds = map[int][2]string{
	http.StatusBadRequest:          {"bad_request", "Bad Request"},
	http.StatusNotFound:            {"not_found", "Resource Missing"},
	http.StatusTooManyRequests:     {"rate_limit_exceeded", "Rate Limit Exceeded"},
	http.StatusInternalServerError: {"server_error", "Internal Server Error"},
	http.StatusServiceUnavailable:  {"server_over_capacity", "Server Over Capacity"},
	http.StatusGatewayTimeout:      {"timeout", "Timeout"},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.RequestURI())
	var injected func()
	switch {
	case s.gone.Take():
		injected = func() {
			writeProblem(w, http.StatusGone, "before_history", "Data Requested Is Before Recorded History",
				"This horizon instance is configured to only track a portion of the stellar network's latest history. "+
					"This request is asking for results prior to the recorded history known to this horizon instance.")
		}
	default:
		status, retryAfter := s.Take().Status, s.retryAfter
		if status == 0 {
			break
		}
		injected = func() {
			if retryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
				w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			}
			kind, ok := problemKinds[status]
			if !ok {
				kind = [2]string{"error", http.StatusText(status)}
			}
			writeProblem(w, status, kind[0], kind[1], "injected by horizontest")
		}
	}
	s.mu.Unlock()
	if injected != nil {
		injected()
		return
	}

	switch r.URL.Path {
	case ControlPaymentsPath:
		s.controlPayment(w, r)
		return
	case ControlAccountsPath:
		s.controlAccount(w, r)
		return
	case "/transactions":
		s.submit(w, r)
		return
	case feeStatsPath:
		s.feeStats(w)
		return
	}
	if s.serveUnrecorded(w, r) {
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method == http.MethodGet && s.servesFromLedger(parts) {
		view := s.view()
		switch {
		case len(parts) == 1 && parts[0] == "":
			s.root(w, view)
		case parts[0] == "transactions" && len(parts) == 3:
			s.transactionPayments(w, r, parts[1], view)
		case parts[0] == "transactions":
			s.getTransaction(w, parts[1], view)
		case parts[0] == "ledgers":
			s.getLedger(w, parts[1], view)
		case len(parts) == 2:
			s.getAccount(w, parts[1], view)
		default:
			s.accountTransactions(w, r, parts[1], view)
		}
		return
	}
	if r.Method != http.MethodGet || len(parts) != 3 || parts[0] != "accounts" || parts[2] != "payments" {
		writeProblem(w, http.StatusNotFound, "not_found", "Resource Missing",
			"The resource at the url requested was not found.")
		return
	}
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", err.Error())
		return
	}
	if parts[1] != s.account {
		s.accountPayments(w, r, parts[1], q)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.stream(w, r, q)
		return
	}
	s.page(w, r, q)
}

// query is a parsed page query. cursor is -1 for "from the start" and
// maxCursor for "now" / "from the end".
type query struct {
	cursor int64
	desc   bool
	limit  int
	join   bool
}

const maxCursor = int64(^uint64(0) >> 1)

func parseQuery(v url.Values) (query, error) {
	q := query{limit: defaultLimit}
	switch v.Get("order") {
	case "", "asc":
	case "desc":
		q.desc = true
	default:
		return q, fmt.Errorf("invalid order %q", v.Get("order"))
	}
	switch c := v.Get("cursor"); {
	case c == "" && q.desc, c == "now":
		q.cursor = maxCursor
	case c == "":
		q.cursor = -1
	default:
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			return q, fmt.Errorf("invalid cursor %q", c)
		}
		q.cursor = n
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 || n > maxLimit {
			return q, fmt.Errorf("invalid limit %q: must be 1..%d", l, maxLimit)
		}
		q.limit = n
	}
	switch j := v.Get("join"); j {
	case "":
	case "transactions":
		q.join = true
	default:
		return q, fmt.Errorf("invalid join %q", j)
	}
	return q, nil
}

// afterLocked returns the index of the first record with a token above
// cursor.
func (s *Server) afterLocked(cursor int64) int {
	return sort.Search(len(s.records), func(i int) bool { return s.records[i].token > cursor })
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, q query) {
	s.mu.Lock()
	recs := selectPage(s.records, q)
	s.mu.Unlock()
	s.writePage(w, r, q, recs)
}

// selectPage picks the records of list (in token order) that a page of q
// holds.
func selectPage(list []*record, q query) []*record {
	after := func(cursor int64) int {
		return sort.Search(len(list), func(i int) bool { return list[i].token > cursor })
	}
	var recs []*record
	if q.desc {
		for i := after(q.cursor-1) - 1; i >= 0 && len(recs) < q.limit; i-- {
			recs = appendRecord(recs, list[i], q.limit)
		}
	} else {
		for i := after(q.cursor); i < len(list) && len(recs) < q.limit; i++ {
			recs = appendRecord(recs, list[i], q.limit)
		}
	}
	return recs
}

// writePage answers a page of recs with Horizon's links.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, q query, recs []*record) {
	body := make([]json.RawMessage, len(recs))
	for i, rec := range recs {
		body[i] = rec.body(q.join)
	}
	self := s.pageURL(r, q, q.cursor, q.desc)
	next, prev := self, self
	if len(recs) > 0 {
		next = s.pageURL(r, q, recs[len(recs)-1].token, q.desc)
		prev = s.pageURL(r, q, recs[0].token, !q.desc)
	}
	page := map[string]any{
		"_links": map[string]link{
			"self": {self},
			"next": {next},
			"prev": {prev},
		},
		"_embedded": map[string]any{"records": body},
	}
	w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
	_, _ = w.Write(mustJSON(page))
}

// appendRecord appends rec, twice if it is duplicated and there is room.
func appendRecord(recs []*record, rec *record, limit int) []*record {
	recs = append(recs, rec)
	if rec.dup && len(recs) < limit {
		recs = append(recs, rec)
	}
	return recs
}

func (rec *record) body(join bool) []byte {
	if join {
		return rec.joined
	}
	return rec.plain
}

func (s *Server) pageURL(r *http.Request, q query, cursor int64, desc bool) string {
	v := url.Values{}
	switch cursor {
	case -1:
		v.Set("cursor", "")
	case maxCursor:
		v.Set("cursor", "now")
		if desc {
			v.Set("cursor", "")
		}
	default:
		v.Set("cursor", strconv.FormatInt(cursor, 10))
	}
	v.Set("limit", strconv.Itoa(q.limit))
	v.Set("order", "asc")
	if desc {
		v.Set("order", "desc")
	}
	if q.join {
		v.Set("join", "transactions")
	}
	return s.URL + r.URL.Path + "?" + v.Encode()
}

// stream serves the records after the cursor as Server-Sent Events, then
// new ones as they are added, like Horizon: a "hello" event first, each
// record with its paging token as the event id, and a closing "byebye"
// event once limit records were sent (Horizon's default limit of 10 applies
// to streams too).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, q query) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "streaming not supported")
		return
	}
	ctx := r.Context()
	if !s.waitSilence(r) {
		return
	}

	s.mu.Lock()
	s.streams++
	s.open++
	next := s.afterLocked(q.cursor)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.open--
		s.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 1000\nevent: open\ndata: \"hello\"\n\n")
	flusher.Flush()

	sent := 0
	for {
		if !s.waitSilence(r) {
			return
		}
		s.mu.Lock()
		if time.Now().Before(s.silentTill) {
			// Silenced since waitSilence looked: checked again under the
			// lock that AddPayment takes, so no record slips out.
			s.mu.Unlock()
			continue
		}
		batch := s.records[next:]
		next = len(s.records)
		changed, keepAlive := s.changed, s.keepAlive
		dropNow := s.dropArmed && s.dropLeft <= 0
		if dropNow {
			s.dropArmed = false
		}
		s.mu.Unlock()
		if dropNow {
			panic(http.ErrAbortHandler)
		}

		for _, rec := range batch {
			if rec.withheld {
				continue
			}
			copies := 1
			if rec.dup {
				copies = 2
			}
			for range copies {
				_, _ = fmt.Fprintf(w, "id: %d\ndata: %s\n\n", rec.token, rec.body(q.join))
				flusher.Flush()
				sent++
				if s.countDrop() {
					// Abort the connection mid-stream: the client sees a
					// truncated body, not a clean end.
					panic(http.ErrAbortHandler)
				}
				if sent >= q.limit {
					_, _ = fmt.Fprint(w, "retry: 10\nevent: close\ndata: \"byebye\"\n\n")
					flusher.Flush()
					return
				}
			}
		}

		timer := time.NewTimer(keepAlive)
		select {
		case <-changed:
			timer.Stop()
		case <-timer.C:
			if s.silent() {
				continue
			}
			_, _ = fmt.Fprint(w, ": keepalive\n\n")
			flusher.Flush()
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.done:
			timer.Stop()
			return
		}
	}
}

// countDrop counts a sent record against an armed DropStreamAfter and
// reports whether the stream must be cut now.
func (s *Server) countDrop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dropArmed {
		return false
	}
	s.dropLeft--
	if s.dropLeft <= 0 {
		s.dropArmed = false
		return true
	}
	return false
}

func (s *Server) silent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.silentTill)
}

// waitSilence blocks while streams are silenced; it reports false if the
// client or the server went away meanwhile.
func (s *Server) waitSilence(r *http.Request) bool {
	for {
		s.mu.Lock()
		d := time.Until(s.silentTill)
		changed := s.changed
		s.mu.Unlock()
		if d <= 0 {
			return true
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-r.Context().Done():
			timer.Stop()
			return false
		case <-s.done:
			timer.Stop()
			return false
		}
	}
}
