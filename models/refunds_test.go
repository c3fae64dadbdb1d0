package models

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var refundStatuses = []RefundStatus{
	RefundAwaitingDestination, RefundAwaitingApproval, RefundSending, RefundSent, RefundFailed, RefundCancelled,
}

// Every pair of statuses, against the moves the issue allows, written out
// here independently of the table in refunds.go.
func TestCanMoveRefund(t *testing.T) {
	allowed := map[[2]RefundStatus]bool{
		{RefundAwaitingDestination, RefundAwaitingApproval}: true,
		{RefundAwaitingDestination, RefundSent}:             true, // mark-sent by an operator
		{RefundAwaitingDestination, RefundCancelled}:        true,
		{RefundAwaitingApproval, RefundSending}:             true,
		{RefundAwaitingApproval, RefundSent}:                true,
		{RefundAwaitingApproval, RefundCancelled}:           true,
		{RefundSending, RefundSent}:                         true,
		{RefundSending, RefundFailed}:                       true,
		{RefundFailed, RefundAwaitingApproval}:              true, // a new destination
		{RefundFailed, RefundSending}:                       true, // an operator retries
		{RefundFailed, RefundSent}:                          true,
		{RefundFailed, RefundCancelled}:                     true,
	}
	for _, from := range refundStatuses {
		for _, to := range refundStatuses {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				assert.Equal(t, allowed[[2]RefundStatus{from, to}], CanMoveRefund(from, to))
			})
		}
	}
	assert.False(t, CanMoveRefund("bogus", RefundSent))
	assert.False(t, CanMoveRefund(RefundAwaitingApproval, "bogus"))
}

func TestRefundStatusValidSettled(t *testing.T) {
	for _, s := range refundStatuses {
		assert.True(t, s.Valid(), s)
		assert.Equal(t, s == RefundSent || s == RefundCancelled, s.Settled(), s)
	}
	assert.False(t, RefundStatus("refunded").Valid())
	assert.False(t, RefundStatus("").Valid())
}

// A valid destination for the tests: the SEP-23 example account.
const (
	sepAccount = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
	sepMuxed   = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK" // id 2^63, as the Go SDK encodes it
	txHashA    = "3389e9f0f1a65f19736cacf544c2e825313e8447f569233bb8db39aa607c8889"
	txHashB    = "0000000000000000000000000000000000000000000000000000000000000001"
)

var goodDestination = RefundDestination{Address: sepAccount, MemoType: "id", Memo: "123456"}

// refundAt returns a refund in status s as the moves would leave it: with
// a destination from awaiting_approval on, a hash once sending.
func refundAt(s RefundStatus) Refund {
	r := Refund{ID: RefundID("payment:p1"), Key: "payment:p1", Status: s, Amount: dec("5"), Asset: "USDC"}
	if s != RefundAwaitingDestination {
		d := goodDestination
		r.Destination = &d
	}
	switch s {
	case RefundSending, RefundSent:
		r.TransactionHash = txHashA
	case RefundFailed:
		r.TransactionHash, r.FailureReason = txHashA, "no trustline"
	}
	return r
}

// Each named move from each status: where it lands, or the refusal with
// invalid_refund_state.
func TestRefundMoves(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	moves := map[string]func(Refund) (Refund, error){
		"set destination": func(r Refund) (Refund, error) { return SetRefundDestination(r, goodDestination) },
		"approve":         func(r Refund) (Refund, error) { return ApproveRefund(r, now) },
		"mark sent":       func(r Refund) (Refund, error) { return MarkRefundSent(r, txHashB, now) },
		"fail":            func(r Refund) (Refund, error) { return FailRefund(r, "op_no_trust", now) },
		"cancel":          func(r Refund) (Refund, error) { return CancelRefund(r, now) },
	}
	// want[move][from] is the status after; absent means refused.
	want := map[string]map[RefundStatus]RefundStatus{
		"set destination": {
			RefundAwaitingDestination: RefundAwaitingApproval,
			RefundAwaitingApproval:    RefundAwaitingApproval, // replaced
			RefundFailed:              RefundAwaitingApproval,
		},
		"approve": {
			RefundAwaitingApproval: RefundSending,
			RefundFailed:           RefundSending,
		},
		"mark sent": {
			RefundAwaitingDestination: RefundSent,
			RefundAwaitingApproval:    RefundSent,
			RefundSending:             RefundSent,
			RefundFailed:              RefundSent,
		},
		"fail": {RefundSending: RefundFailed},
		"cancel": {
			RefundAwaitingDestination: RefundCancelled,
			RefundAwaitingApproval:    RefundCancelled,
			RefundFailed:              RefundCancelled,
			RefundCancelled:           RefundCancelled, // retried: no change
		},
	}
	for name, move := range moves {
		for _, from := range refundStatuses {
			t.Run(name+"/"+string(from), func(t *testing.T) {
				before := refundAt(from)
				got, err := move(before)
				to, ok := want[name][from]
				if !ok {
					require.Error(t, err)
					assert.Equal(t, CodeInvalidRefundState, CodeOf(err))
					assert.Contains(t, err.Error(), "The refund is "+string(from))
					assert.Equal(t, before, got, "a refused move changes nothing")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, to, got.Status)
				assert.True(t, to == from || CanMoveRefund(from, to), "every named move is in the table")
			})
		}
	}
}

// The preconditions and effects of each move beyond its status.
func TestRefundMoveDetails(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

	t.Run("approval needs a destination", func(t *testing.T) {
		r := refundAt(RefundAwaitingApproval)
		r.Destination = nil
		_, err := ApproveRefund(r, now)
		assert.Equal(t, CodeInvalidRefundState, CodeOf(err))
		assert.Contains(t, err.Error(), "no destination")
	})
	t.Run("approval records when and clears the last attempt", func(t *testing.T) {
		got, err := ApproveRefund(refundAt(RefundFailed), now)
		require.NoError(t, err)
		require.NotNil(t, got.ApprovedAt)
		assert.Equal(t, now, *got.ApprovedAt)
		assert.Empty(t, got.FailureReason)
		assert.Empty(t, got.TransactionHash)
	})
	t.Run("sent needs a transaction hash", func(t *testing.T) {
		for _, h := range []string{"", "abc", txHashA[:63], txHashA + "0", strings.Replace(txHashA, "3", "g", 1)} {
			_, err := MarkRefundSent(refundAt(RefundSending), h, now)
			assert.Equal(t, CodeInvalidRequest, CodeOf(err), h)
		}
	})
	t.Run("sent records hash and time, lower-cased", func(t *testing.T) {
		got, err := MarkRefundSent(refundAt(RefundSending), strings.ToUpper(txHashB), now)
		require.NoError(t, err)
		assert.Equal(t, txHashB, got.TransactionHash)
		require.NotNil(t, got.SentAt)
		assert.Equal(t, now, *got.SentAt)
	})
	t.Run("marking sent again: same hash is a retry, another is refused", func(t *testing.T) {
		sent := refundAt(RefundSent)
		got, err := MarkRefundSent(sent, txHashA, now.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, sent, got)
		_, err = MarkRefundSent(sent, txHashB, now)
		assert.Equal(t, CodeInvalidRefundState, CodeOf(err))
	})
	t.Run("failure needs a reason and records it", func(t *testing.T) {
		_, err := FailRefund(refundAt(RefundSending), "  ", now)
		assert.Equal(t, CodeInvalidRequest, CodeOf(err))
		got, err := FailRefund(refundAt(RefundSending), "The account does not trust USDC", now)
		require.NoError(t, err)
		assert.Equal(t, "The account does not trust USDC", got.FailureReason)
		assert.Equal(t, txHashA, got.TransactionHash, "the refused transaction stays visible")
		require.NotNil(t, got.FailedAt)
		assert.Equal(t, now, *got.FailedAt)
	})
	t.Run("failed → awaiting_approval when a new destination is set", func(t *testing.T) {
		d := RefundDestination{Address: sepMuxed}
		got, err := SetRefundDestination(refundAt(RefundFailed), d)
		require.NoError(t, err)
		assert.Equal(t, RefundAwaitingApproval, got.Status)
		assert.Equal(t, &d, got.Destination)
		assert.Empty(t, got.FailureReason)
		assert.Empty(t, got.TransactionHash, "the next payout is a new transaction")
	})
	t.Run("a destination is replaced while awaiting approval", func(t *testing.T) {
		d := RefundDestination{ToSender: true}
		got, err := SetRefundDestination(refundAt(RefundAwaitingApproval), d)
		require.NoError(t, err)
		assert.Equal(t, &d, got.Destination)
	})
	t.Run("an invalid destination is refused and changes nothing", func(t *testing.T) {
		before := refundAt(RefundAwaitingDestination)
		got, err := SetRefundDestination(before, RefundDestination{Address: "GABC"})
		assert.Equal(t, CodeInvalidRefundDestination, CodeOf(err))
		assert.Equal(t, before, got)
	})
	t.Run("memo type none is stored as no memo", func(t *testing.T) {
		got, err := SetRefundDestination(refundAt(RefundAwaitingDestination), RefundDestination{Address: sepAccount, MemoType: "none"})
		require.NoError(t, err)
		assert.Empty(t, got.Destination.MemoType)
	})
	t.Run("being sent: the destination waits for the outcome", func(t *testing.T) {
		_, err := SetRefundDestination(refundAt(RefundSending), goodDestination)
		assert.Contains(t, err.Error(), "only if this payout fails")
	})
	t.Run("cancel records when; cancelling again keeps the first time", func(t *testing.T) {
		got, err := CancelRefund(refundAt(RefundFailed), now)
		require.NoError(t, err)
		require.NotNil(t, got.CancelledAt)
		again, err := CancelRefund(got, now.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, now, *again.CancelledAt)
	})
	t.Run("a hash is recorded before submitting, only while sending", func(t *testing.T) {
		got, err := RecordRefundTransaction(refundAt(RefundSending), txHashB, "AAAA")
		require.NoError(t, err)
		assert.Equal(t, txHashB, got.TransactionHash)
		assert.Equal(t, "AAAA", got.Envelope)
		assert.Equal(t, RefundSending, got.Status)
		for _, s := range refundStatuses {
			if s == RefundSending {
				continue
			}
			_, err := RecordRefundTransaction(refundAt(s), txHashB, "AAAA")
			assert.Equal(t, CodeInvalidRefundState, CodeOf(err), s)
		}
		_, err = RecordRefundTransaction(refundAt(RefundSending), "nothex", "")
		assert.Equal(t, CodeInvalidRequest, CodeOf(err))
	})
}

func TestRefundID(t *testing.T) {
	a := RefundID("payment:stellar:pubnet:1")
	assert.True(t, ValidID(RefundIDPrefix, a), a)
	assert.True(t, strings.HasPrefix(a, "rfd_"))
	assert.Equal(t, a, RefundID("payment:stellar:pubnet:1"), "the same refund is named the same")
	assert.NotEqual(t, a, RefundID("payment:stellar:pubnet:2"))
	assert.NotEqual(t, RefundID("order:ord_1:1"), RefundID("order:ord_1:2"))
}
