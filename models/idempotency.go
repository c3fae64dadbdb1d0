package models

import "time"

// IdempotencyTTL is how long an Idempotency-Key is remembered after the
// request that reserved it: a request with the same key after that runs
// anew, as if the key had never been used.
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKey bounds the Idempotency-Key header, in bytes.
const MaxIdempotencyKey = 255

// IdempotencyScope names one Idempotency-Key: keys are per account and
// mode, so two accounts (or one account's test and live keys) never share
// one.
type IdempotencyScope struct {
	AccountID string
	Mode      Mode
	Key       string
}

// IdempotentRequest is a request made under an Idempotency-Key. Hash is
// the request's fingerprint (method, path and body): two requests are "the
// same request" exactly when their fingerprints are equal. Method and Path
// are kept to tell a client what the key was first used for.
type IdempotentRequest struct {
	IdempotencyScope
	Method string
	Path   string
	Hash   string
}

// IdempotencyState is where the request that holds a key is.
type IdempotencyState string

const (
	// IdempotencyInFlight: a request holds the key and has not answered.
	IdempotencyInFlight IdempotencyState = "in_flight"
	// IdempotencyReleased: the request answered with a server error (5xx),
	// which is not kept: the same request may run again. The key stays
	// bound to that request.
	IdempotencyReleased IdempotencyState = "released"
	// IdempotencyDone: the request answered; its response is kept for
	// replay.
	IdempotencyDone IdempotencyState = "done"
)

// StoredResponse is a response kept for replay: status, the headers that
// describe the body, and the body.
type StoredResponse struct {
	Status int
	Header map[string]string
	Body   []byte
}

// IdempotencyRecord is what is known about one key: the request that holds
// it, where that request is, and its response once it has answered.
type IdempotencyRecord struct {
	IdempotentRequest
	State IdempotencyState
	// Token identifies one reservation of the key: only the request that
	// holds it may complete or release the key, so a request that was
	// taken over (it ran far too long) cannot overwrite its successor.
	Token      string
	ReservedAt time.Time
	ExpiresAt  time.Time
	Response   *StoredResponse // set when State is IdempotencyDone
}

// IdempotencyAction is what to do with a request whose key is known.
type IdempotencyAction int

const (
	// IdempotencyRun: run the request, under a (new) reservation of the key.
	IdempotencyRun IdempotencyAction = iota
	// IdempotencyReplay: answer the kept response.
	IdempotencyReplay
	// IdempotencyBusy: the same request is still in flight.
	IdempotencyBusy
	// IdempotencyMismatch: the key belongs to a different request.
	IdempotencyMismatch
)

// Decide says what a request does with this record of its key at now.
// staleAfter is how long a request may hold a key without answering
// before it is presumed dead (its process crashed) and the key may be
// taken over; it must exceed the longest a request can run.
//
// In order: an expired key is forgotten (run); a different request is a
// mismatch, whatever the state, because the key is bound to its first
// request for its whole life, 5xx answers included; then the state decides.
func (r IdempotencyRecord) Decide(req IdempotentRequest, now time.Time, staleAfter time.Duration) IdempotencyAction {
	if !now.Before(r.ExpiresAt) {
		return IdempotencyRun
	}
	if r.Hash != req.Hash {
		return IdempotencyMismatch
	}
	switch r.State {
	case IdempotencyDone:
		if r.Response == nil {
			return IdempotencyRun // a record without its response cannot be replayed
		}
		return IdempotencyReplay
	case IdempotencyReleased:
		return IdempotencyRun
	default:
		if now.Sub(r.ReservedAt) >= staleAfter {
			return IdempotencyRun
		}
		return IdempotencyBusy
	}
}

// IdempotencyClaim is the outcome of presenting a request's key: either
// the request now holds the key (Action IdempotencyRun, with Token), or
// Record says why it does not.
type IdempotencyClaim struct {
	Action IdempotencyAction
	Token  string
	Record IdempotencyRecord
}

// KeepResponse reports whether a response to a request made under an
// Idempotency-Key is kept for replay. Every answer below 500 is: a success,
// and a refusal of this exact request (validation, not found, conflict),
// which the same request would meet again. A server error (5xx, 503
// included) is not: it says nothing about the request, and a retry must
// run again.
func KeepResponse(status int) bool {
	return status >= 100 && status < 500
}
