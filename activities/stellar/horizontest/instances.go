package horizontest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// ledgerInterval is how often the network closes a ledger when nothing
// happens, as Stellar's does (about every five seconds).
const ledgerInterval = 5 * time.Second

// closeLedgerLocked closes the next ledger at the server's clock and
// returns its sequence number.
func (s *Server) closeLedgerLocked() int64 {
	s.ledger++
	s.closedAt[s.ledger] = s.now().UTC().Truncate(time.Second)
	return s.ledger
}

// tickLocked closes an empty ledger when the clock has passed a ledger
// interval since the last one closed, so that a test that moves its clock
// sees the network move on, as a real one does whatever happens.
func (s *Server) tickLocked() {
	if !s.now().Before(s.closedAt[s.ledger].Add(ledgerInterval)) {
		s.closeLedgerLocked()
	}
}

// SetInstances puts the server behind a load balancer of Horizon
// instances that take the GET requests for the root, accounts, ledgers and
// transactions in turn: instance i has ingested the network's ledgers but
// the last lags[i] (0 is caught up). Each answers as of its own latest
// ledger: a transaction in a later ledger is not found, an account has
// the sequence number it had then (Latest-Ledger says which), the root
// reports that ledger. Balances are always current, and payment pages,
// streams and submissions (which go to the network) ignore instances.
// Without lags, one caught-up instance answers (the default).
func (s *Server) SetInstances(lags ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lags, s.turn = append([]int64(nil), lags...), 0
}

// view ticks the network and returns the latest ledger of the instance
// whose turn it is.
func (s *Server) view() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tickLocked()
	if len(s.lags) == 0 {
		return s.ledger
	}
	lag := s.lags[s.turn%len(s.lags)]
	s.turn++
	return max(s.ledger-lag, firstLedger)
}

// servesFromLedger reports whether the path is one an instance answers
// from the ledgers it has ingested: the root, a transaction or its
// payments, a ledger, an account or an account's transactions.
func (s *Server) servesFromLedger(parts []string) bool {
	switch len(parts) {
	case 1:
		return parts[0] == ""
	case 2:
		return parts[0] == "transactions" || parts[0] == "ledgers" || parts[0] == "accounts"
	case 3:
		return (parts[0] == "accounts" && parts[2] == "transactions") || (parts[0] == "transactions" && parts[2] == "payments")
	}
	return false
}

// ledgerResource is what the server says of a ledger (GET
// /ledgers/{sequence}): Horizon's fields that do not need the ledger's
// contents.
type ledgerResource struct {
	Links       map[string]tlink `json:"_links"`
	ID          string           `json:"id"`
	PagingToken string           `json:"paging_token"`
	Sequence    int64            `json:"sequence"`
	ClosedAt    string           `json:"closed_at"`
}

// getLedger is GET /ledgers/{sequence}: not found beyond the instance's
// latest ledger.
func (s *Server) getLedger(w http.ResponseWriter, seq string, view int64) {
	n, err := strconv.ParseInt(seq, 10, 32)
	if err != nil || n <= 0 {
		writeProblemExtras(w, http.StatusBadRequest, "bad_request", "Bad Request", "The request you sent was invalid in some way.",
			map[string]string{"invalid_field": "ledger_id", "reason": "Ledger ID must be an integer higher than 0"})
		return
	}
	s.mu.Lock()
	closed, ok := s.closedAt[n]
	s.mu.Unlock()
	if !ok || n > view {
		writeNotFound(w)
		return
	}
	self := s.URL + "/ledgers/" + seq
	writeJSON(w, http.StatusOK, halJSON, mustJSON(ledgerResource{
		Links: map[string]tlink{
			"self":         {Href: self},
			"transactions": {Href: self + "/transactions{?cursor,limit,order}", Templated: true},
		},
		ID: ledgerHash(n), PagingToken: strconv.FormatInt(n<<32, 10), Sequence: n,
		ClosedAt: closed.Format(time.RFC3339),
	}))
}

// ledgerHash is a made-up, stable hash for ledger n.
func ledgerHash(n int64) string {
	sum := sha256.Sum256([]byte("horizontest ledger " + strconv.FormatInt(n, 10)))
	return hex.EncodeToString(sum[:])
}

// accountTransactions is GET /accounts/{id}/transactions: the
// transactions the account takes part in (as source or as a payment's
// destination) that the instance has ingested, in pages, like Horizon:
// failed ones only with include_failed=true.
func (s *Server) accountTransactions(w http.ResponseWriter, r *http.Request, id string, view int64) {
	q, err := parseQuery(r.URL.Query())
	includeFailed := r.URL.Query().Get("include_failed")
	if err != nil || (includeFailed != "" && includeFailed != "true" && includeFailed != "false") {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "The request you sent was invalid in some way.")
		return
	}
	s.mu.Lock()
	var list []*txEntry
	for _, e := range s.txList {
		if e.ledger <= view && (e.successful || includeFailed == "true") && slices.Contains(e.accounts, id) {
			list = append(list, e)
		}
	}
	s.mu.Unlock()
	var recs []json.RawMessage
	var last int64 = -1
	add := func(e *txEntry) bool {
		if len(recs) == q.limit {
			return false
		}
		recs, last = append(recs, e.resource), txTOID(e.ledger)
		return true
	}
	if q.desc {
		for i := len(list) - 1; i >= 0; i-- {
			if txTOID(list[i].ledger) < q.cursor && !add(list[i]) {
				break
			}
		}
	} else {
		for _, e := range list {
			if txTOID(e.ledger) > q.cursor && !add(e) {
				break
			}
		}
	}
	base := s.URL + r.URL.Path + "?"
	v := r.URL.Query()
	self := base + v.Encode()
	next := self
	if last >= 0 {
		v.Set("cursor", strconv.FormatInt(last, 10))
		next = base + v.Encode()
	}
	if recs == nil {
		recs = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, halJSON, mustJSON(map[string]any{
		"_links":    map[string]link{"self": {self}, "next": {next}},
		"_embedded": map[string]any{"records": recs},
	}))
}
