package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

const testStaleAfter = 40 * time.Second

func idemRequest(accountID string, mode models.Mode, key, hash string) models.IdempotentRequest {
	return models.IdempotentRequest{
		IdempotencyScope: models.IdempotencyScope{AccountID: accountID, Mode: mode, Key: key},
		Method:           "POST", Path: "/v1/carts", Hash: hash,
	}
}

func TestIdempotencyKeyLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		req := idemRequest(a.ID, models.ModeTest, "key-1", "h1")

		first, err := st.ReserveIdempotencyKey(ctx, req, t0, testStaleAfter)
		require.NoError(t, err)
		require.Equal(t, models.IdempotencyRun, first.Action, "a new key is reserved")
		require.NotEmpty(t, first.Token)

		busy, err := st.ReserveIdempotencyKey(ctx, req, t0.Add(time.Second), testStaleAfter)
		require.NoError(t, err)
		assert.Equal(t, models.IdempotencyBusy, busy.Action, "the same request while the first is in flight")
		assert.Empty(t, busy.Token)

		other := req
		other.Hash = "h2"
		mm, err := st.ReserveIdempotencyKey(ctx, other, t0.Add(time.Second), testStaleAfter)
		require.NoError(t, err)
		assert.Equal(t, models.IdempotencyMismatch, mm.Action)
		assert.Equal(t, "/v1/carts", mm.Record.Path, "the record says what the key was used for")

		resp := models.StoredResponse{Status: 201, Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, Body: []byte(`{"cart":{"id":"crt_1"}}`)}
		held, err := st.CompleteIdempotencyKey(ctx, req.IdempotencyScope, first.Token, resp, t0.Add(2*time.Second))
		require.NoError(t, err)
		require.True(t, held)
		held, err = st.CompleteIdempotencyKey(ctx, req.IdempotencyScope, first.Token, models.StoredResponse{Status: 500}, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.False(t, held, "a completed key is not completed again")

		rep, err := st.ReserveIdempotencyKey(ctx, req, t0.Add(time.Hour), testStaleAfter)
		require.NoError(t, err)
		require.Equal(t, models.IdempotencyReplay, rep.Action)
		require.NotNil(t, rep.Record.Response)
		assert.Equal(t, resp, *rep.Record.Response, "status, headers and body come back exactly")

		mm, err = st.ReserveIdempotencyKey(ctx, other, t0.Add(time.Hour), testStaleAfter)
		require.NoError(t, err)
		assert.Equal(t, models.IdempotencyMismatch, mm.Action, "a completed key still refuses another request")

		// Scoped per account and mode.
		b := newAccount(t, st, "b")
		for _, sc := range []models.IdempotentRequest{
			idemRequest(b.ID, models.ModeTest, "key-1", "h1"),
			idemRequest(a.ID, models.ModeLive, "key-1", "h1"),
			idemRequest(a.ID, models.ModeTest, "key-2", "h1"),
		} {
			c, err := st.ReserveIdempotencyKey(ctx, sc, t0.Add(time.Hour), testStaleAfter)
			require.NoError(t, err)
			assert.Equalf(t, models.IdempotencyRun, c.Action, "%+v is its own key", sc.IdempotencyScope)
		}

		// Expiry: the last instant before it replays; from it on, runs anew.
		rep, err = st.ReserveIdempotencyKey(ctx, req, t0.Add(models.IdempotencyTTL-time.Second), testStaleAfter)
		require.NoError(t, err)
		assert.Equal(t, models.IdempotencyReplay, rep.Action)
		fresh, err := st.ReserveIdempotencyKey(ctx, other, t0.Add(models.IdempotencyTTL), testStaleAfter)
		require.NoError(t, err)
		require.Equal(t, models.IdempotencyRun, fresh.Action, "an expired key is free, for any request")
		held, err = st.CompleteIdempotencyKey(ctx, req.IdempotencyScope, first.Token, resp, t0.Add(models.IdempotencyTTL))
		require.NoError(t, err)
		assert.False(t, held, "the old reservation's token no longer holds the key")
		mm, err = st.ReserveIdempotencyKey(ctx, req, t0.Add(models.IdempotencyTTL+time.Second), testStaleAfter)
		require.NoError(t, err)
		assert.Equal(t, models.IdempotencyMismatch, mm.Action, "the key now belongs to the request that took it")
	})
}

func TestIdempotencyKeyReleaseAndStaleTakeover(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		req := idemRequest(a.ID, models.ModeTest, "k", "h1")
		other := req
		other.Hash = "h2"

		t.Run("released after a 5xx", func(t *testing.T) {
			c, err := st.ReserveIdempotencyKey(ctx, req, t0, testStaleAfter)
			require.NoError(t, err)
			require.Equal(t, models.IdempotencyRun, c.Action)
			held, err := st.ReleaseIdempotencyKey(ctx, req.IdempotencyScope, c.Token)
			require.NoError(t, err)
			require.True(t, held)

			mm, err := st.ReserveIdempotencyKey(ctx, other, t0.Add(time.Second), testStaleAfter)
			require.NoError(t, err)
			assert.Equal(t, models.IdempotencyMismatch, mm.Action, "a released key stays bound to its request")

			again, err := st.ReserveIdempotencyKey(ctx, req, t0.Add(time.Second), testStaleAfter)
			require.NoError(t, err)
			require.Equal(t, models.IdempotencyRun, again.Action, "the same request runs again at once")
			assert.NotEqual(t, c.Token, again.Token)
			held, err = st.ReleaseIdempotencyKey(ctx, req.IdempotencyScope, c.Token)
			require.NoError(t, err)
			assert.False(t, held, "the first reservation cannot release the second")
			held, err = st.ReleaseIdempotencyKey(ctx, req.IdempotencyScope, again.Token)
			require.NoError(t, err)
			assert.True(t, held)
		})

		t.Run("stale in-flight reservation", func(t *testing.T) {
			sc := idemRequest(a.ID, models.ModeTest, "crashed", "h1")
			dead, err := st.ReserveIdempotencyKey(ctx, sc, t0, testStaleAfter)
			require.NoError(t, err)
			require.Equal(t, models.IdempotencyRun, dead.Action)

			busy, err := st.ReserveIdempotencyKey(ctx, sc, t0.Add(testStaleAfter-time.Second), testStaleAfter)
			require.NoError(t, err)
			assert.Equal(t, models.IdempotencyBusy, busy.Action, "within staleAfter it is presumed alive")
			diff := sc
			diff.Hash = "h2"
			mm, err := st.ReserveIdempotencyKey(ctx, diff, t0.Add(time.Hour), testStaleAfter)
			require.NoError(t, err)
			assert.Equal(t, models.IdempotencyMismatch, mm.Action, "a dead request's key is not handed to another request")

			// Several retries at once after staleAfter: exactly one takes it over.
			const n = 8
			claims := make([]models.IdempotencyClaim, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { claims[i], errs[i] = st.ReserveIdempotencyKey(ctx, sc, t0.Add(testStaleAfter), testStaleAfter) })
			}
			wg.Wait()
			var winner string
			for i := range n {
				require.NoError(t, errs[i])
				if claims[i].Action == models.IdempotencyRun {
					require.Empty(t, winner, "a second request took over the same key")
					winner = claims[i].Token
					continue
				}
				assert.Equal(t, models.IdempotencyBusy, claims[i].Action, "the losers see the winner in flight")
			}
			require.NotEmpty(t, winner, "one request takes the key over")

			// The dead request comes back to life: it no longer holds the key.
			held, err := st.CompleteIdempotencyKey(ctx, sc.IdempotencyScope, dead.Token, models.StoredResponse{Status: 201, Body: []byte("late")}, t0.Add(time.Hour))
			require.NoError(t, err)
			assert.False(t, held)
			held, err = st.CompleteIdempotencyKey(ctx, sc.IdempotencyScope, winner, models.StoredResponse{Status: 201, Body: []byte("winner")}, t0.Add(time.Hour))
			require.NoError(t, err)
			require.True(t, held)
			rep, err := st.ReserveIdempotencyKey(ctx, sc, t0.Add(time.Hour), testStaleAfter)
			require.NoError(t, err)
			require.Equal(t, models.IdempotencyReplay, rep.Action)
			assert.Equal(t, "winner", string(rep.Record.Response.Body))
			assert.Empty(t, rep.Record.Response.Header, "no headers kept, none returned")
		})
	})
}

func TestIdempotencyKeyConcurrentReservation(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		req := idemRequest(a.ID, models.ModeTest, "race", "h")
		const n = 10
		claims := make([]models.IdempotencyClaim, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { claims[i], errs[i] = st.ReserveIdempotencyKey(ctx, req, t0, testStaleAfter) })
		}
		wg.Wait()
		runs := 0
		for i := range n {
			require.NoError(t, errs[i])
			switch claims[i].Action {
			case models.IdempotencyRun:
				runs++
			case models.IdempotencyBusy:
			default:
				t.Errorf("claim %d: action %v", i, claims[i].Action)
			}
		}
		assert.Equal(t, 1, runs, "exactly one of the concurrent requests holds the key")
	})
}

func TestPurgeIdempotencyKeys(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		// Five keys an hour apart; the second is completed, the third released.
		var reqs []models.IdempotentRequest
		for i := range 5 {
			req := idemRequest(a.ID, models.ModeTest, string(rune('a'+i)), "h")
			c, err := st.ReserveIdempotencyKey(ctx, req, t0.Add(time.Duration(i)*time.Hour), testStaleAfter)
			require.NoError(t, err)
			require.Equal(t, models.IdempotencyRun, c.Action)
			switch i {
			case 1:
				_, err = st.CompleteIdempotencyKey(ctx, req.IdempotencyScope, c.Token, models.StoredResponse{Status: 200, Body: []byte("{}")}, t0)
			case 2:
				_, err = st.ReleaseIdempotencyKey(ctx, req.IdempotencyScope, c.Token)
			}
			require.NoError(t, err)
			reqs = append(reqs, req)
		}
		// At TTL + 2h the first three have expired; a limit of 2 takes two.
		at := t0.Add(models.IdempotencyTTL + 2*time.Hour)
		n, err := st.PurgeIdempotencyKeys(ctx, at, 2)
		require.NoError(t, err)
		assert.Equal(t, 2, n, "bounded by the limit")
		n, err = st.PurgeIdempotencyKeys(ctx, at, 100)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the third expired key")
		n, err = st.PurgeIdempotencyKeys(ctx, at, 100)
		require.NoError(t, err)
		assert.Equal(t, 0, n)

		// The two younger keys are still there: another request under
		// them is refused (a purged key would be free and reserved).
		for _, req := range reqs[3:] {
			diff := req
			diff.Hash = "other"
			mm, err := st.ReserveIdempotencyKey(ctx, diff, at.Add(-time.Hour), testStaleAfter)
			require.NoError(t, err)
			assert.Equalf(t, models.IdempotencyMismatch, mm.Action, "key %s survived the purge", req.Key)
		}
		// And the purged ones are free.
		for _, req := range reqs[:3] {
			diff := req
			diff.Hash = "other"
			c, err := st.ReserveIdempotencyKey(ctx, diff, at, testStaleAfter)
			require.NoError(t, err)
			assert.Equalf(t, models.IdempotencyRun, c.Action, "key %s", req.Key)
		}
	})
}
