package models

import (
	"testing"
	"time"
)

func TestIdempotencyRecordDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const stale = 40 * time.Second
	req := IdempotentRequest{IdempotencyScope: IdempotencyScope{AccountID: "acct_1", Mode: ModeTest, Key: "k"}, Method: "POST", Path: "/v1/carts", Hash: "h1"}
	other := req
	other.Hash = "h2"
	rec := func(state IdempotencyState, resp *StoredResponse) IdempotencyRecord {
		return IdempotencyRecord{IdempotentRequest: req, State: state, Token: "t", ReservedAt: t0, ExpiresAt: t0.Add(IdempotencyTTL), Response: resp}
	}
	done := &StoredResponse{Status: 201, Body: []byte("{}")}
	tests := []struct {
		name string
		rec  IdempotencyRecord
		req  IdempotentRequest
		at   time.Time
		want IdempotencyAction
	}{
		{"done, same request: replay", rec(IdempotencyDone, done), req, t0.Add(time.Hour), IdempotencyReplay},
		{"done, another request: mismatch", rec(IdempotencyDone, done), other, t0.Add(time.Hour), IdempotencyMismatch},
		{"done without its response: run", rec(IdempotencyDone, nil), req, t0.Add(time.Hour), IdempotencyRun},
		{"in flight: busy", rec(IdempotencyInFlight, nil), req, t0.Add(stale - time.Nanosecond), IdempotencyBusy},
		{"in flight, another request: mismatch", rec(IdempotencyInFlight, nil), other, t0, IdempotencyMismatch},
		{"in flight past staleAfter: take over", rec(IdempotencyInFlight, nil), req, t0.Add(stale), IdempotencyRun},
		{"stale, another request: mismatch", rec(IdempotencyInFlight, nil), other, t0.Add(time.Hour), IdempotencyMismatch},
		{"released: run again", rec(IdempotencyReleased, nil), req, t0.Add(time.Second), IdempotencyRun},
		{"released, another request: mismatch", rec(IdempotencyReleased, nil), other, t0.Add(time.Second), IdempotencyMismatch},
		{"a nanosecond before expiry: replay", rec(IdempotencyDone, done), req, t0.Add(IdempotencyTTL - time.Nanosecond), IdempotencyReplay},
		{"expired: run", rec(IdempotencyDone, done), req, t0.Add(IdempotencyTTL), IdempotencyRun},
		{"expired, another request: run", rec(IdempotencyDone, done), other, t0.Add(IdempotencyTTL), IdempotencyRun},
		{"expired in flight: run", rec(IdempotencyInFlight, nil), other, t0.Add(IdempotencyTTL), IdempotencyRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.Decide(tt.req, tt.at, stale); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKeepResponse(t *testing.T) {
	for status, want := range map[int]bool{
		200: true, 201: true, 204: true, 400: true, 404: true, 409: true, 422: true, 499: true,
		500: false, 502: false, 503: false, 0: false,
	} {
		if got := KeepResponse(status); got != want {
			t.Errorf("KeepResponse(%d) = %v, want %v", status, got, want)
		}
	}
}
