package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"
)

// A refund's claim is the payer's own way to say where a refund goes: a
// secret link (the refund's claim_url) the API client forwards to the
// payer, who opens it and enters an address and memo. Its token is the
// only credential: whoever holds it may set the destination once, so it
// is long, random, single-use and expires.

// RefundClaimTTL is how long a claim works after it is issued.
const RefundClaimTTL = 30 * 24 * time.Hour

// refundClaimTokenBytes is the randomness of a claim token: 256 bits,
// beyond any guessing at any rate.
const refundClaimTokenBytes = 32

// refundClaimTokenLen is a token's length: 32 bytes in unpadded base64url.
var refundClaimTokenLen = base64.RawURLEncoding.EncodedLen(refundClaimTokenBytes)

// RefundClaim is a refund's claim: its token (the secret at the end of the
// claim_url) and when it stops working. A refund has at most one; a new
// one replaces it, and setting the destination through it, or any move
// that makes the refund stop waiting for a destination, ends it.
type RefundClaim struct {
	Token     string
	ExpiresAt time.Time
}

// Live reports whether c (nil: none) works at now.
func (c *RefundClaim) Live(now time.Time) bool { return c != nil && now.Before(c.ExpiresAt) }

// NewRefundClaim returns a claim issued at now, its token drawn from
// random (crypto/rand in production), working for RefundClaimTTL.
func NewRefundClaim(random io.Reader, now time.Time) (RefundClaim, error) {
	b := make([]byte, refundClaimTokenBytes)
	if _, err := io.ReadFull(random, b); err != nil {
		return RefundClaim{}, fmt.Errorf("drawing a claim token: %w", err)
	}
	return RefundClaim{Token: base64.RawURLEncoding.EncodeToString(b), ExpiresAt: now.Add(RefundClaimTTL)}, nil
}

// RefundClaimHash returns the key a claim is found by: the hex SHA-256 of
// its token, so that a copy of the database alone does not hold a usable
// link. ok is false for a string of another shape than a token's (43
// characters of base64url decoding to 32 bytes): it names no claim, and
// can be answered "not found" without asking the database.
func RefundClaimHash(token string) (hash string, ok bool) {
	if len(token) != refundClaimTokenLen {
		return "", false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) != refundClaimTokenBytes {
		return "", false
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:]), true
}

// ErrRefundClaimGone refuses a move asked through a claim link that no
// longer works by the time it is written: used, replaced by a newer one,
// expired, or of a refund that no longer waits for a destination. It is a
// not-found, as every answer about a link that does not work.
var ErrRefundClaimGone = Errorf(CodeRefundNotFound, "This claim link no longer works: it was used, replaced or has expired")

// RefundClaimable reports whether the payer may say where r goes through
// a claim: r waits for a destination (awaiting_destination, or failed:
// its payout was refused and a new destination is wanted), in an asset
// the service pays out. A payer's wrong-asset money is an operator's to
// return, and no destination helps it.
func RefundClaimable(r Refund) bool {
	if r.Status != RefundAwaitingDestination && r.Status != RefundFailed {
		return false
	}
	_, err := LookupAsset(r.Asset)
	return err == nil
}

// A stored webhook event body names a refund's claim link by reference,
// never by its token: where the body delivered carries claim_url, the
// stored one holds RefundClaimRef of the claim, a JSON string naming the
// claim by its hash. Each delivery renders it (ResolveRefundClaimRefs) to
// the link if that claim still works then, else null: the database holds
// no usable link, and a body delivered late (a retry, a resend) never
// carries a link used, replaced or expired meanwhile, nor a newer claim
// than the one the event was about.

// refundClaimRefPrefix starts a claim reference.
const refundClaimRefPrefix = "memocart-refund-claim:"

// refundClaimRefRE matches a claim reference as a whole JSON string: a
// string inside another (a metadata value quoting one) has its quotes
// escaped, and does not match.
var refundClaimRefRE = regexp.MustCompile(`"` + refundClaimRefPrefix + `([0-9a-f]{64})"`)

// RefundClaimRef returns the reference to the claim of token that a
// stored event body holds in place of its claim_url.
func RefundClaimRef(token string) string {
	hash, _ := RefundClaimHash(token)
	return refundClaimRefPrefix + hash
}

// ResolveRefundClaimRefs returns body with each claim reference
// (RefundClaimRef, a JSON string) replaced by the JSON of what link says
// of the claim of that hash: its URL, or null when ok is false (the claim
// no longer works). The rest of body is kept byte for byte.
func ResolveRefundClaimRefs(body []byte, link func(hash string) (url string, ok bool, err error)) ([]byte, error) {
	var failed error
	out := refundClaimRefRE.ReplaceAllFunc(body, func(ref []byte) []byte {
		if failed != nil {
			return ref
		}
		hash := string(refundClaimRefRE.FindSubmatch(ref)[1])
		url, ok, err := link(hash)
		if err != nil {
			failed = err
			return ref
		}
		if !ok {
			return []byte("null")
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the API writes JSON
		if err := enc.Encode(url); err != nil {
			failed = err
			return ref
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	})
	if failed != nil {
		return nil, failed
	}
	return out, nil
}
