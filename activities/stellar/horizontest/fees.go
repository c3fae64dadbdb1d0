package horizontest

import (
	"net/http"
	"strconv"
)

// SetBaseFee sets the network's base fee per operation, in stroops
// (default and minimum 100): surge pricing. A transaction bidding less per
// operation is refused with tx_insufficient_fee, one that bids more is
// charged the base fee only, as on the network, and GET /fee_stats reports
// it.
func (s *Server) SetBaseFee(stroops int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.baseFee = max(stroops, minBaseFee)
}

// SetFeeStats makes GET /fee_stats report bids of stroops per operation
// instead of the base fee, as statistics of past ledgers trail a surge;
// 0 reports the base fee again.
func (s *Server) SetFeeStats(stroops int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feeStatsBid = stroops
}

// feeStatsPath is Horizon's fee statistics of the last ledgers.
const feeStatsPath = "/fee_stats"

// feeStats is GET /fee_stats in Horizon's shape: every field a string
// of stroops but ledger_capacity_usage. The server's ledgers are paid at
// the base fee by bidders who bid exactly it, so each percentile is the
// base fee (or SetFeeStats').
func (s *Server) feeStats(w http.ResponseWriter) {
	s.mu.Lock()
	s.tickLocked()
	bid := s.baseFee
	if s.feeStatsBid != 0 {
		bid = s.feeStatsBid
	}
	ledger, fee := s.ledger, strconv.FormatInt(bid, 10)
	s.mu.Unlock()
	dist := map[string]string{"max": fee, "min": fee, "mode": fee}
	for _, p := range []string{"p10", "p20", "p30", "p40", "p50", "p60", "p70", "p80", "p90", "p95", "p99"} {
		dist[p] = fee
	}
	writeJSON(w, http.StatusOK, halJSON, mustJSON(map[string]any{
		"last_ledger":           strconv.FormatInt(ledger, 10),
		"last_ledger_base_fee":  fee,
		"ledger_capacity_usage": "0.97",
		"fee_charged":           dist,
		"max_fee":               dist,
	}))
}
