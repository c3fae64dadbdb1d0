package models

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// RefundStatus is where a refund is on its way back to the payer.
//
//	awaiting_destination → awaiting_approval → sending → sent
//
// with failed (the payout was refused: waiting for a new destination or
// an operator) and cancelled (an operator settled it another way) off the
// line. CanMoveRefund is the whole table of moves.
type RefundStatus string

// Refund statuses.
const (
	RefundAwaitingDestination RefundStatus = "awaiting_destination" // nobody has said where the money goes
	RefundAwaitingApproval    RefundStatus = "awaiting_approval"    // has a destination; waits for the limit check or an operator
	RefundSending             RefundStatus = "sending"              // approved; the payout is being built, submitted or looked up
	RefundSent                RefundStatus = "sent"                 // the payout is on the chain (or an operator recorded one)
	RefundFailed              RefundStatus = "failed"               // the payout was refused; waits for a new destination or an operator
	RefundCancelled           RefundStatus = "cancelled"            // an operator settled it another way; nothing will be sent
)

// RefundStatuses are every refund status, in the order a refund moves.
var RefundStatuses = []RefundStatus{RefundAwaitingDestination, RefundAwaitingApproval, RefundSending, RefundSent, RefundFailed, RefundCancelled}

// Valid reports whether s is a known status.
func (s RefundStatus) Valid() bool { return slices.Contains(RefundStatuses, s) }

// Settled reports whether a refund at s owes nothing more: the money was
// sent, or an operator settled it another way. Both are final.
func (s RefundStatus) Settled() bool { return s == RefundSent || s == RefundCancelled }

// refundMoves is every allowed move, from → to. A move to the same status
// is not in it: setting a destination on a refund awaiting approval
// replaces the destination without moving it (SetRefundDestination).
//
//   - awaiting_destination → awaiting_approval: a destination is set.
//   - awaiting_approval → sending: approved (needs a destination).
//   - sending → sent: the payout's hash is known to be on the chain.
//   - sending → failed: the payout was refused (no trustline, no account).
//   - failed → awaiting_approval: a new destination is set.
//   - failed → sending: an operator retries to the same destination (the
//     payer has added the missing trustline meanwhile).
//   - awaiting_destination, awaiting_approval, failed → sent: an operator
//     paid it from another wallet and records the hash (mark-sent --tx).
//   - awaiting_destination, awaiting_approval, failed → cancelled: an
//     operator settled it another way.
//
// Nothing leaves sent or cancelled, and a refund being sent can be
// neither cancelled nor given a new destination: a transaction to the old
// one may already be submitted, and only its outcome (sent or failed)
// says whether the money left.
var refundMoves = map[RefundStatus][]RefundStatus{
	RefundAwaitingDestination: {RefundAwaitingApproval, RefundSent, RefundCancelled},
	RefundAwaitingApproval:    {RefundSending, RefundSent, RefundCancelled},
	RefundSending:             {RefundSent, RefundFailed},
	RefundFailed:              {RefundAwaitingApproval, RefundSending, RefundSent, RefundCancelled},
}

// CanMoveRefund reports whether a refund may move from one status to
// another (refundMoves).
func CanMoveRefund(from, to RefundStatus) bool {
	for _, s := range refundMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// RefundReason says why money is owed back, in a fixed vocabulary.
type RefundReason string

// Refund reasons. The first four return an order's own money (what it
// credited, or the part beyond its amount due); the last three return one
// payment whole.
const (
	RefundOrderFailed      RefundReason = "order_failed"      // paid, but the purchase failed: everything credited
	RefundOrderExpired     RefundReason = "order_expired"     // underpaid when the deadline passed: everything credited
	RefundOrderCancelled   RefundReason = "order_cancelled"   // underpaid and cancelled (by the client or an operator): everything credited
	RefundOverpaid         RefundReason = "overpaid"          // paid: what was credited beyond the amount due
	RefundLatePayment      RefundReason = "late_payment"      // arrived after the order closed: that payment
	RefundWrongAsset       RefundReason = "wrong_asset"       // in an asset the order does not take: that payment, in its asset
	RefundUnmatchedPayment RefundReason = "unmatched_payment" // named no order; an operator decided to refund it
)

// ofOrder reports whether a refund for reason r returns its order's own
// money, as opposed to one payment whole.
func (r RefundReason) ofOrder() bool { return slices.Contains(RefundReasonsOfOrder(), r) }

// RefundReasonsOfOrder lists the reasons of refunds that return an order's
// own money, for a store that selects them.
func RefundReasonsOfOrder() []RefundReason {
	return []RefundReason{RefundOrderFailed, RefundOrderExpired, RefundOrderCancelled, RefundOverpaid}
}

// RefundDestination is where a refund goes: an account (G… or muxed M…)
// with the memo its owner needs (an exchange's deposit memo), or, with
// ToSender and no Address, explicitly the account that paid.
// ValidateRefundDestination checks it without the network.
type RefundDestination struct {
	Address  string
	MemoType string // "", "none", "text", "id", "hash" or "return"
	Memo     string
	ToSender bool
}

// Normalized is d as it is stored and shown: memo type "none" is no memo,
// written as none at all, so a client reads one spelling of it.
func (d RefundDestination) Normalized() RefundDestination {
	if d.MemoType == "none" {
		d.MemoType = ""
	}
	return d
}

// Refund is money owed back to a payer and its way there. It never
// changes amount or asset once created: more money owed later is another
// refund.
type Refund struct {
	ID string // "rfd_…": RefundID(Key)
	// Key is the refund's natural key, unique among refunds: what it
	// returns ("payment:<payment id>", or "order:<order id>:<n>" for the
	// n-th refund of an order's own money). A store that inserts on it
	// creates each refund once however often it is asked.
	Key string
	// OrderID is empty for an unmatched payment refunded by an operator.
	OrderID string
	// AccountID and Mode are the order's (empty account for an unmatched
	// payment): an API key reads only its own account's refunds in its
	// mode, and a test-mode refund is paid out by the sandbox.
	AccountID string
	Mode      Mode
	// PaymentIDs are the payments whose money it returns, in whole or in
	// part (for an overpayment: those credited beyond the amount due).
	PaymentIDs []string
	Reason     RefundReason
	// Amount and Asset are what was received: a wrong-asset payment goes
	// back in its own asset. The payer is never charged a fee; the payout
	// account pays the network's.
	Amount decimal.Decimal
	Asset  string
	// Value is Amount in the order's currency at the order's own rate
	// (RefundValue), which the operator's approval limits are set in;
	// nil when unknown (another asset, no order): such a refund always
	// waits for an operator's approval.
	Value           *decimal.Decimal
	Status          RefundStatus
	Destination     *RefundDestination // nil until one is set
	TransactionHash string             // recorded before the payout is submitted
	// Envelope is the payout transaction's signed XDR (base64), recorded
	// with its hash before it is submitted, so that a retry can submit the
	// very same transaction again instead of building a second one. Never
	// shown to clients.
	Envelope      string
	FailureReason string // why the last payout was refused, while failed
	// Claim is the refund's claim link (RefundClaim) as the store holds
	// it, expired or not; nil when it has none. The store issues one with
	// a refund created awaiting its destination and a new one when a
	// refund fails, and ends it when the refund stops waiting for a
	// destination. Its token is a bearer secret: never in a Temporal
	// payload (json:"-"), a log, or any page but the claim page itself.
	Claim *RefundClaim `json:"-"`

	CreatedAt   time.Time
	ApprovedAt  *time.Time // the last approval
	SentAt      *time.Time
	FailedAt    *time.Time // the last failure
	CancelledAt *time.Time
}

// RefundIDPrefix is the prefix of refund ids (ValidID(RefundIDPrefix, id)).
const RefundIDPrefix = "rfd"

// RefundID returns the id of the refund with natural key key: "rfd_" and
// 24 base62 characters drawn from SHA-256 of the key. The id is derived,
// not random, so that creating the same refund twice (a retried activity,
// a workflow replaying) names the same refund, and its workflow
// ("refund-<id>") is refused by Temporal the second time.
func RefundID(key string) string {
	return IDFrom(RefundIDPrefix, "memocart refund\x00"+key)
}

// refundStateError refuses a move: a CodeInvalidRefundState error whose
// message names the refund's status, so a client can tell sent from
// sending.
func refundStateError(r Refund, format string, args ...any) *Error {
	return Errorf(CodeInvalidRefundState, "The refund is %s: %s", r.Status, fmt.Sprintf(format, args...))
}

// SetRefundDestination sets or replaces where r goes. A
// destination may be set until the refund is sent, except while it is
// being sent (a transaction to the old one may be on its way: wait for
// sent or failed). A refund awaiting its destination, or failed, then
// awaits approval; one awaiting approval keeps waiting, with the new
// destination. Setting a destination clears a failed refund's failure
// reason and transaction hash: the next payout is a new transaction. d is
// validated first (ValidateRefundDestination's shape rules: the callers
// that take a new destination check it whole first).
func SetRefundDestination(r Refund, d RefundDestination) (Refund, error) {
	switch {
	case r.Status == RefundSending:
		return r, refundStateError(r, "its destination can change only if this payout fails")
	case r.Status != RefundAwaitingApproval && !CanMoveRefund(r.Status, RefundAwaitingApproval):
		return r, refundStateError(r, "its destination can no longer change")
	}
	if err := validateDestinationShape(d); err != nil {
		return r, err
	}
	d = d.Normalized()
	r.Destination = &d
	r.Status = RefundAwaitingApproval
	r.FailureReason, r.TransactionHash, r.Envelope = "", "", ""
	return r, nil
}

// ApproveRefund approves r for payout at now: it moves to sending. Only a
// refund with a destination can be approved: one awaiting approval, or a
// failed one an operator retries as it is.
func ApproveRefund(r Refund, now time.Time) (Refund, error) {
	if !CanMoveRefund(r.Status, RefundSending) {
		return r, refundStateError(r, "only a refund awaiting approval, or failed, can be approved")
	}
	if r.Destination == nil {
		return r, refundStateError(r, "it has no destination to send to")
	}
	r.Status = RefundSending
	r.ApprovedAt = &now
	r.FailureReason, r.TransactionHash, r.Envelope = "", "", ""
	return r, nil
}

// RecordRefundTransaction records the payout transaction of r, its hash
// and signed envelope, before it is submitted, so a retry looks that hash
// up (and may submit the same envelope again) before building another. A
// refund being sent may replace its transaction (one whose time bounds
// passed unknown to the network is rebuilt). The sandbox's payouts have
// no envelope.
func RecordRefundTransaction(r Refund, hash, envelope string) (Refund, error) {
	if r.Status != RefundSending {
		return r, refundStateError(r, "a payout transaction is recorded only while it is being sent")
	}
	h, err := RefundTxHash(hash)
	if err != nil {
		return r, err
	}
	r.TransactionHash, r.Envelope = h, envelope
	return r, nil
}

// MarkRefundSent records that r was paid in transaction hash at now:
// by its payout (sending), or by an operator from another wallet (any
// status before sent but cancelled). A sent refund needs its hash.
// Marking a sent refund again with its own hash is a retried write and
// changes nothing; with another hash it is refused, since the money goes
// back once.
func MarkRefundSent(r Refund, hash string, now time.Time) (Refund, error) {
	h, err := RefundTxHash(hash)
	if err != nil {
		return r, err
	}
	if r.Status == RefundSent && r.TransactionHash == h {
		return r, nil
	}
	if !CanMoveRefund(r.Status, RefundSent) {
		return r, refundStateError(r, "it cannot be marked sent")
	}
	r.Status = RefundSent
	r.TransactionHash = h
	r.FailureReason = ""
	r.SentAt = &now
	return r, nil
}

// RefundPayment is what the transaction an operator says paid a refund
// (mark-sent) must hold to be taken as its payout: a successful payment
// of exactly Amount in Asset to To, and, when To has a memo, that memo.
// To.Address is empty when the refund has no destination yet: a payment
// to any account counts, but for NotTo (the service's own accounts, so a
// payer's incoming payment is never mistaken for its refund).
type RefundPayment struct {
	To     RefundDestination
	Asset  string
	Amount decimal.Decimal
	NotTo  []string
}

// FailRefund records that the payout of r was refused, for reason (shown
// to the client: say what the payer must do, e.g. add a trustline), at
// now. Only a refund being sent can fail; it then waits for a new
// destination or an operator. The refused transaction's hash is kept for
// operators until the next destination or approval.
func FailRefund(r Refund, reason string, now time.Time) (Refund, error) {
	if !CanMoveRefund(r.Status, RefundFailed) {
		return r, refundStateError(r, "only a refund being sent can fail")
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return r, Errorf(CodeInvalidRequest, "A failed refund needs a reason")
	}
	r.Status = RefundFailed
	r.FailureReason = reason
	r.FailedAt = &now
	return r, nil
}

// CancelRefund records, at now, that an operator settled r another way:
// nothing will be sent. A refund being sent cannot be cancelled (its
// money may be on its way), nor a sent one. Cancelling a cancelled refund
// is a retried write and changes nothing.
func CancelRefund(r Refund, now time.Time) (Refund, error) {
	if r.Status == RefundCancelled {
		return r, nil
	}
	if !CanMoveRefund(r.Status, RefundCancelled) {
		return r, refundStateError(r, "only a refund not being sent and not sent can be cancelled")
	}
	r.Status = RefundCancelled
	r.CancelledAt = &now
	return r, nil
}

// RefundTxHash checks that hash is a Stellar transaction hash (64 hex
// digits; the sandbox's fake hashes have the same shape) and returns it
// in lower case, as Horizon writes it.
func RefundTxHash(hash string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(hash))
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", FieldError(CodeInvalidRequest, "transaction_hash", "transaction_hash must be 64 hexadecimal digits")
	}
	return h, nil
}
