package horizontest

import (
	"maps"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/activities/stellar/resultcodes"
)

// Rejections returns how many submissions the server refused before any
// ledger, by Horizon's transaction result code ("tx_bad_seq",
// "tx_too_late", ...): what a test counts to prove that senders sharing
// an account never collided on its sequence number.
func (s *Server) Rejections() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.rejections)
}

// countRejectionLocked counts one refused submission.
func (s *Server) countRejectionLocked(code xdr.TransactionResultCode) {
	if s.rejections == nil {
		s.rejections = map[string]int{}
	}
	s.rejections[resultcodes.Transaction(code)]++
}
