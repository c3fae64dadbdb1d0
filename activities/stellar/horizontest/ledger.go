package horizontest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// The network's minimum fee and its reserve, in stroops, as on pubnet and
// testnet: every operation costs at least minBaseFee (more under surge
// pricing, SetBaseFee), and an account must keep baseReserve for itself,
// another for its account entry, and one per trustline (its subentries).
const (
	minBaseFee  = 100
	baseReserve = 5_000_000
)

// maxTrustLimit is a trustline's default limit (the largest int64 amount),
// rendered as Horizon does.
const maxTrustLimit = int64(^uint64(0) >> 1)

// ledgerAccount is an account of the server's ledger. Amounts are stroops.
type ledgerAccount struct {
	id       string
	seq      int64
	native   int64
	lines    map[string]int64 // credit asset ("CODE:ISSUER") → balance
	modified int64            // ledger of the last change
	modTime  time.Time
	created  int64             // ledger that created it
	seqs     []seqChange       // every sequence number it had, oldest first
	data     map[string]string // data entries: name → raw value
}

// seqChange is a sequence number an account took in a ledger.
type seqChange struct{ ledger, seq int64 }

// setSeq gives the account sequence number seq from ledger on.
func (a *ledgerAccount) setSeq(ledger, seq int64) {
	a.seq = seq
	a.seqs = append(a.seqs, seqChange{ledger, seq})
}

// seqAt is the account's sequence number as of ledger (0 before it
// existed).
func (a *ledgerAccount) seqAt(ledger int64) int64 {
	var seq int64
	for _, c := range a.seqs {
		if c.ledger > ledger {
			break
		}
		seq = c.seq
	}
	return seq
}

// minBalance is the native amount the account cannot spend.
func (a *ledgerAccount) minBalance() int64 {
	return (2 + int64(len(a.lines))) * baseReserve
}

// spendable is the native amount the account can pay (fees included).
func (a *ledgerAccount) spendable() int64 { return a.native - a.minBalance() }

func (a *ledgerAccount) clone() *ledgerAccount {
	c := *a
	c.seqs = append([]seqChange(nil), a.seqs...)
	c.lines = make(map[string]int64, len(a.lines))
	for k, v := range a.lines {
		c.lines[k] = v
	}
	return &c
}

// creditKey names a credit asset in ledgerAccount.lines.
func creditKey(code, issuer string) string { return code + ":" + issuer }

// Account is an account of the server's ledger, as SetAccount takes it and
// Account returns it.
type Account struct {
	// ID is the account id (G...).
	ID string
	// XLM and USDC are decimal amounts with at most 7 decimal places
	// ("250", "12.5"); empty is zero. Account returns them in Horizon's
	// form ("250.0000000"). USDC is the credit asset of the server's issuer
	// (SetUSDCIssuer).
	XLM, USDC string
	// TrustUSDC is whether the account has a USDC trustline; a USDC
	// balance needs one, so SetAccount with a non-zero USDC adds it.
	TrustUSDC bool
	// Sequence is the account's sequence number: its next transaction must
	// carry Sequence+1. Zero in SetAccount keeps the sequence of an
	// existing account and gives a new one ledger<<32, as Stellar does.
	Sequence int64
	// Data are the account's data entries, name → raw value, served
	// base64-encoded in the account's "data" as Horizon does (SEP-29's
	// "config.memo_required" → "1" is served as "MQ=="). Nil in SetAccount
	// keeps an existing account's entries. They take no reserve here.
	Data map[string]string
}

// SetAccount creates the account or replaces its native and USDC
// balances, its USDC trustline and (unless zero) its sequence number: the
// test's way to fund a payer, a payout account or a refund destination.
// Other trustlines of an existing account are kept.
func (s *Server) SetAccount(a Account) error {
	if _, err := keypair.ParseAddress(a.ID); err != nil || a.ID[0] != 'G' {
		return fmt.Errorf("horizontest: invalid account id %q", a.ID)
	}
	native, err := parseAmount(a.XLM)
	if err != nil {
		return fmt.Errorf("horizontest: XLM: %w", err)
	}
	usdc, err := parseAmount(a.USDC)
	if err != nil {
		return fmt.Errorf("horizontest: USDC: %w", err)
	}
	if a.Sequence < 0 {
		return errors.New("horizontest: negative sequence")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	trust := a.TrustUSDC || usdc != 0
	if trust && s.usdcIssuer == "" {
		return errors.New("horizontest: a USDC trustline needs SetUSDCIssuer first")
	}
	// Each change closes a ledger, so last_modified_ledger moves like on
	// the network and a new account's sequence is unique.
	ledger := s.closeLedgerLocked()
	acc, ok := s.accounts[a.ID]
	if !ok {
		acc = &ledgerAccount{id: a.ID, created: ledger, lines: map[string]int64{}}
		acc.setSeq(ledger, ledger<<32)
		s.accounts[a.ID] = acc
	}
	if a.Sequence != 0 {
		acc.setSeq(ledger, a.Sequence)
	}
	acc.native = native
	if a.Data != nil {
		acc.data = maps.Clone(a.Data)
	}
	if s.usdcIssuer != "" {
		key := creditKey("USDC", s.usdcIssuer)
		if trust {
			acc.lines[key] = usdc
		} else {
			delete(acc.lines, key)
		}
	}
	acc.modified, acc.modTime = s.ledger, s.now().UTC()
	return nil
}

// Account returns the account as the server's ledger holds it.
func (s *Server) Account(id string) (Account, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc, ok := s.accounts[id]
	if !ok {
		return Account{}, false
	}
	out := Account{ID: id, XLM: amount.StringFromInt64(acc.native), Sequence: acc.seq, Data: maps.Clone(acc.data)}
	if s.usdcIssuer != "" {
		if bal, ok := acc.lines[creditKey("USDC", s.usdcIssuer)]; ok {
			out.TrustUSDC, out.USDC = true, amount.StringFromInt64(bal)
		}
	}
	return out, true
}

// StealSequence consumes the account's next sequence number, as another
// process submitting from the same account would: a transaction of no
// operations takes it, and is in the account's history. A transaction
// built before the call is then refused with tx_bad_seq.
func (s *Server) StealSequence(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc, ok := s.accounts[id]
	if !ok {
		return fmt.Errorf("horizontest: no account %s", id)
	}
	ledger := s.closeLedgerLocked()
	acc.setSeq(ledger, acc.seq+1)
	acc.modified, acc.modTime = ledger, s.closedAt[ledger]
	sum := sha256.Sum256([]byte("horizontest stolen sequence " + strconv.FormatInt(ledger, 10)))
	hash := hex.EncodeToString(sum[:])
	token := strconv.FormatInt(txTOID(ledger), 10)
	e := &txEntry{ledger: ledger, successful: true, accounts: []string{id}, resource: mustJSON(txResourceBody{
		Links: txLinks{Self: tlink{Href: s.URL + "/transactions/" + hash}},
		ID:    hash, PagingToken: token, Successful: true, Hash: hash, Ledger: ledger,
		CreatedAt:     s.closedAt[ledger].Format(time.RFC3339),
		SourceAccount: id, SourceAccountSequence: strconv.FormatInt(acc.seq, 10), FeeAccount: id,
		FeeCharged: "0", MaxFee: strconv.Itoa(minBaseFee), ResultXDR: resultXDR(nil, xdr.TransactionResultCodeTxSuccess, 0, nil),
		MemoType: "none", Signatures: []string{},
	})}
	s.txs[hash] = e
	s.txList = append(s.txList, e)
	return nil
}

// SetNetworkPassphrase sets the network whose signatures the server
// accepts (default the test network's, network.TestNetworkPassphrase).
func (s *Server) SetNetworkPassphrase(passphrase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.passphrase = passphrase
}

// SetClock sets the server's clock (default time.Now): it checks time
// bounds and dates ledgers, so a test can pass a transaction's deadline
// without sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// parseAmount parses a decimal amount into stroops, exactly; empty is 0.
func parseAmount(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := amount.ParseInt64(v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("negative amount %q", v)
	}
	return n, nil
}

// ControlAccountsPath is where the dev stack (or a script) creates or funds
// an account of the server's ledger over HTTP: POST a JSON object
// {"id":"G...","xlm":"100","usdc":"50","trust_usdc":true} (optional
// "sequence"); the answer is the account as GET /accounts/{id} serves it.
// Horizon has no such path; it cannot collide with one.
const ControlAccountsPath = "/_horizontest/accounts"

type controlAccountRequest struct {
	ID        string `json:"id"`
	XLM       string `json:"xlm"`
	USDC      string `json:"usdc"`
	TrustUSDC bool   `json:"trust_usdc"`
	// Sequence is a string, as Horizon writes sequence numbers, so that
	// values beyond 2^53 survive JSON decoders that use floats.
	Sequence string `json:"sequence"`
}

func (s *Server) controlAccount(w http.ResponseWriter, r *http.Request) {
	var req controlAccountRequest
	if !readControl(w, r, &req, "POST an account",
		`send {"id":"G...","xlm":"<decimal>","usdc":"<decimal>","trust_usdc":true|false}`) {
		return
	}
	a := Account{ID: req.ID, XLM: req.XLM, USDC: req.USDC, TrustUSDC: req.TrustUSDC}
	if req.Sequence != "" {
		seq, err := strconv.ParseInt(req.Sequence, 10, 64)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "sequence must be a decimal integer string")
			return
		}
		a.Sequence = seq
	}
	if err := s.SetAccount(a); err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request",
			"id must be a G... account id and amounts non-negative decimals with at most 7 decimal places; "+
				"a USDC trustline needs the server's USDC issuer")
		return
	}
	s.mu.Lock()
	tip := s.ledger
	s.mu.Unlock()
	s.getAccount(w, req.ID, tip)
}

// accountResource is Horizon's account resource, fields in its order.
type accountResource struct {
	Links              map[string]tlink  `json:"_links"`
	ID                 string            `json:"id"`
	AccountID          string            `json:"account_id"`
	Sequence           string            `json:"sequence"`
	SubentryCount      int               `json:"subentry_count"`
	LastModifiedLedger int64             `json:"last_modified_ledger"`
	LastModifiedTime   string            `json:"last_modified_time"`
	Thresholds         map[string]int    `json:"thresholds"`
	Flags              map[string]bool   `json:"flags"`
	Balances           []balanceResource `json:"balances"`
	Signers            []signerResource  `json:"signers"`
	Data               map[string]string `json:"data"`
	NumSponsoring      int               `json:"num_sponsoring"`
	NumSponsored       int               `json:"num_sponsored"`
	PagingToken        string            `json:"paging_token"`
}

// balanceResource is one entry of an account's balances; the trustline
// fields are absent for the native balance, as in Horizon.
type balanceResource struct {
	Balance                           string `json:"balance"`
	Limit                             string `json:"limit,omitempty"`
	BuyingLiabilities                 string `json:"buying_liabilities"`
	SellingLiabilities                string `json:"selling_liabilities"`
	LastModifiedLedger                int64  `json:"last_modified_ledger,omitempty"`
	IsAuthorized                      *bool  `json:"is_authorized,omitempty"`
	IsAuthorizedToMaintainLiabilities *bool  `json:"is_authorized_to_maintain_liabilities,omitempty"`
	AssetType                         string `json:"asset_type"`
	AssetCode                         string `json:"asset_code,omitempty"`
	AssetIssuer                       string `json:"asset_issuer,omitempty"`
}

type signerResource struct {
	Weight int    `json:"weight"`
	Key    string `json:"key"`
	Type   string `json:"type"`
}

// getAccount is GET /accounts/{id}, answered by an instance that has
// ingested the ledgers up to view: it says so in the Latest-Ledger header,
// as Horizon does on the endpoints that serve the ledger's current state,
// and serves the sequence number the account had then.
func (s *Server) getAccount(w http.ResponseWriter, id string, view int64) {
	if _, err := keypair.ParseAddress(id); err != nil || id[0] != 'G' {
		// Horizon answers a malformed id with 400, not 404.
		writeProblemExtras(w, http.StatusBadRequest, "bad_request", "Bad Request",
			"The request you sent was invalid in some way.",
			map[string]string{"invalid_field": "account_id", "reason": "invalid address"})
		return
	}
	s.mu.Lock()
	acc, ok := s.accounts[id]
	ok = ok && acc.created <= view
	var body []byte
	if ok {
		res := s.accountResourceLocked(acc)
		res.Sequence = strconv.FormatInt(acc.seqAt(view), 10)
		body = mustJSON(res)
	}
	s.mu.Unlock()
	w.Header().Set("Latest-Ledger", strconv.FormatInt(view, 10))
	if !ok {
		writeNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, "application/hal+json; charset=utf-8", body)
}

func (s *Server) accountResourceLocked(acc *ledgerAccount) accountResource {
	base := s.URL + "/accounts/" + acc.id
	yes := true
	var balances []balanceResource
	// Trustlines first, native last, as Horizon lists them; in a stable
	// order so that bodies compare.
	keys := make([]string, 0, len(acc.lines))
	for k := range acc.lines {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		code, issuer, _ := strings.Cut(k, ":")
		typ := "credit_alphanum4"
		if len(code) > 4 {
			typ = "credit_alphanum12"
		}
		balances = append(balances, balanceResource{
			Balance: amount.StringFromInt64(acc.lines[k]), Limit: amount.StringFromInt64(maxTrustLimit),
			BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000", LastModifiedLedger: acc.modified,
			IsAuthorized: &yes, IsAuthorizedToMaintainLiabilities: &yes,
			AssetType: typ, AssetCode: code, AssetIssuer: issuer,
		})
	}
	balances = append(balances, balanceResource{
		Balance: amount.StringFromInt64(acc.native), BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000",
		AssetType: "native",
	})
	data := make(map[string]string, len(acc.data))
	for k, v := range acc.data {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return accountResource{
		Links: map[string]tlink{
			"self":         {Href: base},
			"transactions": {Href: base + "/transactions{?cursor,limit,order}", Templated: true},
			"operations":   {Href: base + "/operations{?cursor,limit,order}", Templated: true},
			"payments":     {Href: base + "/payments{?cursor,limit,order}", Templated: true},
			"effects":      {Href: base + "/effects{?cursor,limit,order}", Templated: true},
			"offers":       {Href: base + "/offers{?cursor,limit,order}", Templated: true},
			"trades":       {Href: base + "/trades{?cursor,limit,order}", Templated: true},
			"data":         {Href: base + "/data/{key}", Templated: true},
		},
		ID: acc.id, AccountID: acc.id,
		Sequence:           strconv.FormatInt(acc.seq, 10),
		SubentryCount:      len(acc.lines),
		LastModifiedLedger: acc.modified,
		LastModifiedTime:   acc.modTime.Format(time.RFC3339),
		Thresholds:         map[string]int{"low_threshold": 0, "med_threshold": 0, "high_threshold": 0},
		Flags: map[string]bool{
			"auth_required": false, "auth_revocable": false, "auth_immutable": false, "auth_clawback_enabled": false,
		},
		Balances:    balances,
		Signers:     []signerResource{{Weight: 1, Key: acc.id, Type: "ed25519_public_key"}},
		Data:        data,
		PagingToken: acc.id,
	}
}

// writeNotFound answers Horizon's not_found problem.
func writeNotFound(w http.ResponseWriter) {
	writeProblem(w, http.StatusNotFound, "not_found", "Resource Missing",
		"The resource at the url requested was not found.  This usually occurs for one of two reasons:  "+
			"The url requested is not valid, or no data in our database could be found with the parameters provided.")
}
