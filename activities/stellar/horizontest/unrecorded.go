package horizontest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Money that reaches an account without a payment record the watcher can
// read as one: the effects of an account_merge (its record carries no
// amount) and claimable balances (which are not on /payments at all).

// mergeEffects renders the effects of an account_merge operation, as GET
// /operations/{id}/effects serves them: the merged account debited, the
// destination credited with p.Amount, the merged account removed. Only a
// merge has effects here; other operations answer an empty page.
func (s *Server) mergeEffects(p Payment, token int64) []map[string]any {
	op := strconv.FormatInt(token, 10)
	var out []map[string]any
	add := func(typ string, typeI int, account string, amount bool) {
		n := len(out) + 1
		e := map[string]any{
			"_links": map[string]link{
				"operation": {s.URL + "/operations/" + op},
				"succeeds":  {fmt.Sprintf("%s/effects?order=desc&cursor=%s-%d", s.URL, op, n)},
				"precedes":  {fmt.Sprintf("%s/effects?order=asc&cursor=%s-%d", s.URL, op, n)},
			},
			"id":           fmt.Sprintf("%019d-%010d", token, n),
			"paging_token": fmt.Sprintf("%s-%d", op, n),
			"account":      account,
			"type":         typ,
			"type_i":       typeI,
			"created_at":   p.CreatedAt.UTC().Format(time.RFC3339),
		}
		if amount {
			e["asset_type"], e["amount"] = "native", p.Amount
		}
		out = append(out, e)
	}
	add("account_debited", 3, p.From, true)
	add("account_credited", 2, p.To, true)
	add("account_removed", 1, p.From, false)
	return out
}

// serveEffects answers GET /operations/{id}/effects.
func (s *Server) serveEffects(w http.ResponseWriter, id string) {
	s.mu.Lock()
	var effects []map[string]any
	found := false
	for _, rec := range s.records {
		if strconv.FormatInt(rec.token, 10) == id {
			effects, found = rec.effects, true
			break
		}
	}
	s.mu.Unlock()
	if !found {
		writeNotFound(w)
		return
	}
	if effects == nil {
		effects = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, "application/hal+json; charset=utf-8", mustJSON(map[string]any{
		"_links": map[string]link{
			"self": {s.URL + "/operations/" + id + "/effects"},
		},
		"_embedded": map[string]any{"records": effects},
	}))
}

// ClaimableBalance is a claimable balance on the server's ledger.
type ClaimableBalance struct {
	// ID defaults to a 72-hex-digit id (a version and a hash), as
	// Horizon writes them.
	ID string
	// Asset is "native" (default) or "CODE:ISSUER"; Amount is served
	// verbatim.
	Asset, Amount string
	// Sponsor is the account that created it.
	Sponsor string
	// Claimants are the accounts that may claim it (unconditionally),
	// default the watched account.
	Claimants []string
}

// AddClaimableBalance creates a claimable balance and returns its id.
func (s *Server) AddClaimableBalance(b ClaimableBalance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ledger := s.closeLedgerLocked()
	if b.ID == "" {
		sum := sha256.Sum256([]byte("horizontest claimable balance " + strconv.FormatInt(ledger, 10)))
		b.ID = "00000000" + hex.EncodeToString(sum[:])
	}
	if b.Asset == "" {
		b.Asset = "native"
	}
	if len(b.Claimants) == 0 {
		b.Claimants = []string{s.account}
	}
	claimants := make([]map[string]any, len(b.Claimants))
	for i, c := range b.Claimants {
		claimants[i] = map[string]any{"destination": c, "predicate": map[string]any{"unconditional": true}}
	}
	s.balances = append(s.balances, claimable{claimants: slices.Clone(b.Claimants), body: map[string]any{
		"_links": map[string]link{
			"self":         {s.URL + "/claimable_balances/" + b.ID},
			"transactions": {s.URL + "/claimable_balances/" + b.ID + "/transactions{?cursor,limit,order}"},
			"operations":   {s.URL + "/claimable_balances/" + b.ID + "/operations{?cursor,limit,order}"},
		},
		"id":                   b.ID,
		"asset":                b.Asset,
		"amount":               b.Amount,
		"sponsor":              b.Sponsor,
		"last_modified_ledger": ledger,
		"last_modified_time":   s.now().UTC().Format(time.RFC3339),
		"claimants":            claimants,
		"flags":                map[string]bool{"clawback_enabled": false},
		"paging_token":         strconv.FormatInt(ledger, 10) + "-" + b.ID,
	}})
	return b.ID
}

// ClaimBalance removes a claimable balance, as claiming it does.
func (s *Server) ClaimBalance(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances = slices.DeleteFunc(s.balances, func(c claimable) bool { return c.body["id"] == id })
}

// claimable is a claimable balance: who may claim it, and its resource.
type claimable struct {
	claimants []string
	body      map[string]any
}

// serveClaimableBalances answers GET /claimable_balances?claimant=…
// (oldest first; limit 1 to 200, default 10, as Horizon; cursor a
// paging_token). Horizon takes other filters; this only the claimant,
// which it requires here.
func (s *Server) serveClaimableBalances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	claimant := q.Get("claimant")
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "limit: must be between 1 and 200")
			return
		}
		limit = n
	}
	if claimant == "" {
		writeProblem(w, http.StatusBadRequest, "bad_request", "Bad Request", "horizontest: claimant is required")
		return
	}
	cursor := q.Get("cursor")
	s.mu.Lock()
	records := []map[string]any{}
	past := cursor == ""
	for _, b := range s.balances {
		if !past {
			past = b.body["paging_token"] == cursor
			continue
		}
		if slices.Contains(b.claimants, claimant) && len(records) < limit {
			records = append(records, b.body)
		}
	}
	body := mustJSON(map[string]any{
		"_links":    map[string]link{"self": {s.URL + r.URL.RequestURI()}},
		"_embedded": map[string]any{"records": records},
	})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, "application/hal+json; charset=utf-8", body)
}

// serveUnrecorded routes the requests this file answers; false for any
// other.
func (s *Server) serveUnrecorded(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if r.URL.Path == "/claimable_balances" {
		s.serveClaimableBalances(w, r)
		return true
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 3 && parts[0] == "operations" && parts[2] == "effects" {
		s.serveEffects(w, parts[1])
		return true
	}
	return false
}
