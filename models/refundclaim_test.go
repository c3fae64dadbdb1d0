package models

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim's token is 32 random bytes in base64url, found by its SHA-256,
// and works for 30 days from its issue.
func TestNewRefundClaim(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	c, err := NewRefundClaim(rand.Reader, now)
	require.NoError(t, err)
	assert.Len(t, c.Token, 43, "32 bytes, unpadded base64url")
	assert.Regexp(t, `^[A-Za-z0-9_-]{43}$`, c.Token, "safe in a URL path as it is")
	assert.Equal(t, now.Add(30*24*time.Hour), c.ExpiresAt)

	other, err := NewRefundClaim(rand.Reader, now)
	require.NoError(t, err)
	assert.NotEqual(t, c.Token, other.Token, "drawn, not derived")

	// The token is the reader's bytes, all of them.
	fixed, err := NewRefundClaim(bytes.NewReader(bytes.Repeat([]byte{0xfb}, 32)), now)
	require.NoError(t, err)
	raw, err := base64.RawURLEncoding.DecodeString(fixed.Token)
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{0xfb}, 32), raw)
	_, err = NewRefundClaim(bytes.NewReader(make([]byte, 31)), now)
	assert.Error(t, err, "a short read is no token")

	hash, ok := RefundClaimHash(c.Token)
	require.True(t, ok)
	sum := sha256.Sum256([]byte(c.Token))
	assert.Equal(t, hex.EncodeToString(sum[:]), hash)
	assert.NotContains(t, hash, c.Token)
}

// Only a string of a token's shape has a hash: anything else names no
// claim and needs no lookup.
func TestRefundClaimHashShape(t *testing.T) {
	c, err := NewRefundClaim(rand.Reader, time.Time{})
	require.NoError(t, err)
	for name, token := range map[string]string{
		"empty":               "",
		"one short":           c.Token[:42],
		"one long":            c.Token + "A",
		"padded":              c.Token[:42] + "=",
		"standard base64":     strings.Repeat("+", 43),
		"a space":             " " + c.Token[1:],
		"non-zero spare bits": c.Token[:42] + "B", // 43 characters carry 258 bits: the last 2 must be 0
		"a refund id":         "rfd_7QmX2pLk9VtR4sHcW1nJ8bZe",
	} {
		t.Run(name, func(t *testing.T) {
			_, ok := RefundClaimHash(token)
			assert.False(t, ok)
		})
	}
}

func TestRefundClaimLive(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	var none *RefundClaim
	assert.False(t, none.Live(now), "no claim")
	c := &RefundClaim{Token: "t", ExpiresAt: now.Add(time.Second)}
	assert.True(t, c.Live(now))
	assert.False(t, c.Live(now.Add(time.Second)), "expired at its expiry")
	assert.False(t, c.Live(now.Add(time.Hour)))
}

// The payer may claim a refund that waits for a destination, in an asset
// the service pays out.
func TestRefundClaimable(t *testing.T) {
	for _, tc := range []struct {
		status RefundStatus
		asset  string
		want   bool
	}{
		{RefundAwaitingDestination, "USDC", true},
		{RefundAwaitingDestination, "XLM", true},
		{RefundFailed, "USDC", true},
		{RefundAwaitingApproval, "USDC", false},
		{RefundSending, "USDC", false},
		{RefundSent, "USDC", false},
		{RefundCancelled, "USDC", false},
		// A wrong-asset payment goes back by an operator's hand.
		{RefundAwaitingDestination, "EURC:GDHU6WRG4IEQXM5NZ4BMPKOXHW76MZM4Y2IEMFDVXBSDP6SJY4ITNPP2", false},
	} {
		t.Run(string(tc.status)+"/"+tc.asset, func(t *testing.T) {
			assert.Equal(t, tc.want, RefundClaimable(Refund{Status: tc.status, Asset: tc.asset}))
		})
	}
}

// The claim never travels in a refund's JSON: a Temporal payload (the
// Refund workflow's input, its activities' answers) would keep the token
// in the workflow's history.
func TestRefundClaimNotInJSON(t *testing.T) {
	r := Refund{ID: "rfd_x", Claim: &RefundClaim{Token: "the-secret-token", ExpiresAt: time.Now()}}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "the-secret-token")
	assert.NotContains(t, string(b), "Claim")
}

// A stored body's claim references render to the link or null; the rest
// is kept byte for byte, and a reference quoted inside another string (a
// metadata value) is not one.
func TestResolveRefundClaimRefs(t *testing.T) {
	token := strings.Repeat("A", 43)
	ref := RefundClaimRef(token)
	hash, _ := RefundClaimHash(token)
	body := []byte(`{"a":"x\"` + ref + `\"","b": "<&>","claim_url":"` + ref + `","n":1.50}`)
	out, err := ResolveRefundClaimRefs(body, func(h string) (string, bool, error) {
		require.Equal(t, hash, h)
		return "https://pay.example/claim/" + token + "?a=<&>", true, nil
	})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x\"`+ref+`\"","b": "<&>","claim_url":"https://pay.example/claim/`+token+`?a=<&>","n":1.50}`, string(out))
	out, err = ResolveRefundClaimRefs(body, func(string) (string, bool, error) { return "", false, nil })
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x\"`+ref+`\"","b": "<&>","claim_url":null,"n":1.50}`, string(out))
	_, err = ResolveRefundClaimRefs(body, func(string) (string, bool, error) { return "", false, errors.New("db down") })
	assert.EqualError(t, err, "db down")
}
