package horizontest

import (
	"net/http"
	"time"
)

// protocolVersion is the Stellar protocol the root claims to run; nothing
// here depends on it.
const protocolVersion = 23

// rootResource is Horizon's root resource (GET /), the fields clients read:
// how far Horizon has ingested the network (history_latest_ledger and its
// close time) and which network it serves.
type rootResource struct {
	Links                        map[string]tlink `json:"_links"`
	HorizonVersion               string           `json:"horizon_version"`
	CoreVersion                  string           `json:"core_version"`
	IngestLatestLedger           int64            `json:"ingest_latest_ledger"`
	HistoryLatestLedger          int64            `json:"history_latest_ledger"`
	HistoryLatestLedgerClosedAt  string           `json:"history_latest_ledger_closed_at"`
	HistoryElderLedger           int64            `json:"history_elder_ledger"`
	CoreLatestLedger             int64            `json:"core_latest_ledger"`
	NetworkPassphrase            string           `json:"network_passphrase"`
	CurrentProtocolVersion       int              `json:"current_protocol_version"`
	SupportedProtocolVersion     int              `json:"supported_protocol_version"`
	CoreSupportedProtocolVersion int              `json:"core_supported_protocol_version"`
}

// LagHistory makes the root report its latest ingested ledger as closed d
// before the server's clock, as a Horizon whose ingestion trails the
// network does. Only the root reflects it: transactions already applied
// are still served, so a test can check that a client trusts Horizon's
// history only as far as the root says it reaches.
func (s *Server) LagHistory(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.historyLag = d
}

// root is GET /. The fake network closes a ledger whenever something
// happens, but a real one closes one every few seconds whatever happens,
// so the latest ledger is reported as closed now (less LagHistory); an
// instance that trails the network (SetInstances) reports its own.
func (s *Server) root(w http.ResponseWriter, view int64) {
	s.mu.Lock()
	closedAt := s.now().Add(-s.historyLag)
	if view < s.ledger {
		closedAt = s.closedAt[view]
	}
	body := rootResource{
		Links: map[string]tlink{
			"self":         {Href: s.URL + "/"},
			"account":      {Href: s.URL + "/accounts/{account_id}", Templated: true},
			"transaction":  {Href: s.URL + "/transactions/{hash}", Templated: true},
			"transactions": {Href: s.URL + "/transactions{?cursor,limit,order}", Templated: true},
		},
		HorizonVersion:               "horizontest",
		CoreVersion:                  "horizontest",
		IngestLatestLedger:           view,
		HistoryLatestLedger:          view,
		HistoryLatestLedgerClosedAt:  closedAt.UTC().Format(time.RFC3339),
		HistoryElderLedger:           firstLedger + 1,
		CoreLatestLedger:             s.ledger,
		NetworkPassphrase:            s.passphrase,
		CurrentProtocolVersion:       protocolVersion,
		SupportedProtocolVersion:     protocolVersion,
		CoreSupportedProtocolVersion: protocolVersion,
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, halJSON, mustJSON(body))
}
