package horizontest

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// The network's payment history beyond the watched account: every
// payment operation, of transactions the ledger took and of those
// AddPayment describes, served as Horizon serves them on GET
// /accounts/{id}/payments for any other account (the payout account's
// refunds, a wallet an operator paid from) and on GET
// /transactions/{hash}/payments. The watched account's own history keeps
// its injected faults (records, streams); these pages have none.

// historyOp is one payment operation of the network's history and the
// accounts (G…) it involves.
type historyOp struct {
	rec      *record
	from, to string
}

// historyLocked adds operation op (1-based) of the transaction in ledger
// to the network's history. tx is the transaction resource of one the
// ledger took, nil for one AddPayment describes, which is then served by
// GET /transactions/{hash} too (never listed among an account's
// transactions, which only real ones are).
func (s *Server) historyLocked(p Payment, ledger, op int64, tx json.RawMessage) {
	rec := &record{token: txTOID(ledger) | op}
	var res []byte
	rec.plain, rec.joined, res = s.render(p, rec.token, txTOID(ledger), ledger, tx)
	s.history = append(s.history, historyOp{rec: rec, from: p.From, to: p.To})
	e, ok := s.txs[p.TxHash]
	if !ok {
		e = &txEntry{resource: res, ledger: ledger, successful: *p.Successful, accounts: []string{p.From}}
		s.txs[p.TxHash] = e
	}
	e.ops = append(e.ops, rec)
}

// txHashOf is the hash a fee bump's inner transaction is served under,
// "" for none.
func txHashOf(bump *feeBump) string {
	if bump == nil {
		return ""
	}
	return hex.EncodeToString(bump.innerHash[:])
}

// accountPayments is GET /accounts/{id}/payments of an account other than
// the watched one: the payments it sent or received, in pages. An account
// the network never saw is not found.
func (s *Server) accountPayments(w http.ResponseWriter, r *http.Request, id string, q query) {
	s.mu.Lock()
	var list []*record
	for _, h := range s.history {
		if h.from == id || h.to == id {
			list = append(list, h.rec)
		}
	}
	_, known := s.accounts[id]
	recs := selectPage(list, q)
	s.mu.Unlock()
	if !known && len(list) == 0 {
		writeNotFound(w)
		return
	}
	s.writePage(w, r, q, recs)
}

// transactionPayments is GET /transactions/{hash}/payments: the payment
// operations of a transaction the instance has ingested, in pages.
func (s *Server) transactionPayments(w http.ResponseWriter, r *http.Request, hash string, view int64) {
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", err.Error())
		return
	}
	s.mu.Lock()
	e, ok := s.txs[hash]
	var recs []*record
	if ok && e.ledger <= view {
		recs = selectPage(e.ops, q)
	}
	s.mu.Unlock()
	if !ok || e.ledger > view {
		writeNotFound(w)
		return
	}
	s.writePage(w, r, q, recs)
}
