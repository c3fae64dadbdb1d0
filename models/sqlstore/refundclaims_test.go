package sqlstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// claimedRefund is a new failed order of the account for cartID, its
// refund owed at now, awaiting a destination, and that refund's claim
// token.
func claimedRefund(t *testing.T, st *sqlstore.Store, accountID, cartID string, now time.Time) (models.Order, models.Refund, string) {
	t.Helper()
	o := failedOrder(t, st, accountID, cartID, nil)
	r := owedRefund(t, st, o.ID, now)
	return o, r, claimOf(t, r, now)
}

// claimOf asserts r has a claim of a token's shape that expires at
// issued+30 days, and returns its token.
func claimOf(t *testing.T, r models.Refund, issued time.Time) string {
	t.Helper()
	require.NotNilf(t, r.Claim, "refund %s (%s) has a claim", r.ID, r.Status)
	_, ok := models.RefundClaimHash(r.Claim.Token)
	require.Truef(t, ok, "a token's shape: %q", r.Claim.Token)
	assert.True(t, issued.Add(30*24*time.Hour).Equal(r.Claim.ExpiresAt), "expires 30 days after %v: %v", issued, r.Claim.ExpiresAt)
	return r.Claim.Token
}

// A refund created awaiting its destination gets a claim, found by its
// token until it expires; every read carries it; setting the destination
// ends it; a failed payout issues a new one and the old one dies.
func TestRefundClaimLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		created := t0.Add(time.Hour)
		o, r, token := claimedRefund(t, st, a.ID, "crt_claim", created)
		require.Equal(t, models.RefundAwaitingDestination, r.Status)

		// Stored as its hash, and the token itself (plain: this store has
		// no key).
		hash, stored, err := st.StoredRefundClaim(ctx, r.ID)
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(token))
		assert.Equal(t, hex.EncodeToString(sum[:]), hash)
		assert.Equal(t, "plain:"+token, stored)

		// Every read of the refund carries the same claim; asking again
		// issues none.
		again, err := st.CreateOwedRefunds(ctx, o.ID, created.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, token, claimOf(t, again[0], created), "a second call issues no new claim")
		byID, err := st.Refund(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, r, byID)
		forAccount, err := st.RefundForAccount(ctx, a.ID, models.ModeTest, r.ID)
		require.NoError(t, err)
		assert.Equal(t, r, forAccount)
		ofOrder, err := st.RefundsForOrder(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, []models.Refund{r}, ofOrder)
		page, _, err := st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest})
		require.NoError(t, err)
		assert.Equal(t, []models.Refund{r}, page)

		// Found by its token until it expires, by nothing else.
		found, err := st.RefundByClaim(ctx, token, created)
		require.NoError(t, err)
		assert.Equal(t, r, found)
		lastSecond := created.Add(models.RefundClaimTTL - time.Second)
		_, err = st.RefundByClaim(ctx, token, lastSecond)
		assert.NoError(t, err, "alive in its last second")
		_, err = st.RefundByClaim(ctx, token, created.Add(models.RefundClaimTTL))
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "expired")
		_, _, err = st.TakeRefundClaim(ctx, token, created.Add(models.RefundClaimTTL), created.Add(models.RefundClaimTTL+time.Minute))
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "an expired claim cannot be taken")
		for name, other := range map[string]string{
			"another token":    strings.Repeat("A", 43),
			"the hash":         hash,
			"not a token":      "x",
			"the refund's id":  r.ID,
			"the token padded": token + "=",
		} {
			_, err = st.RefundByClaim(ctx, other, created)
			assert.ErrorIsf(t, err, models.ErrRefundNotFound, "%s finds nothing", name)
		}

		// One submission at a time holds it; a refused one gives it back.
		now := created.Add(time.Minute)
		got, taken, err := st.TakeRefundClaim(ctx, token, now, now.Add(time.Minute))
		require.NoError(t, err)
		assert.True(t, taken)
		assert.Equal(t, r.ID, got.ID)
		_, taken, err = st.TakeRefundClaim(ctx, token, now.Add(59*time.Second), now.Add(2*time.Minute))
		require.NoError(t, err)
		assert.False(t, taken, "held by the first")
		_, err = st.RefundByClaim(ctx, token, now)
		assert.NoError(t, err, "a held claim still shows its page")
		_, taken, err = st.TakeRefundClaim(ctx, token, now.Add(time.Minute), now.Add(2*time.Minute))
		require.NoError(t, err)
		assert.True(t, taken, "a hold that ran out lets go")
		require.NoError(t, st.ReleaseRefundClaim(ctx, token))
		_, taken, err = st.TakeRefundClaim(ctx, token, now.Add(time.Minute), now.Add(2*time.Minute))
		require.NoError(t, err)
		assert.True(t, taken, "released")

		// Setting the destination (the claim's use) ends it, in the same
		// write.
		moved, err := st.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) {
			return models.SetRefundDestination(r, toAccount)
		})
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingApproval, moved.Status)
		assert.Nil(t, moved.Claim)
		_, err = st.RefundByClaim(ctx, token, now)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "used")
		_, _, err = st.StoredRefundClaim(ctx, r.ID)
		assert.Error(t, err, "nothing of it is kept")
		require.NoError(t, st.ReleaseRefundClaim(ctx, token), "releasing a used claim does nothing")
		_, err = st.RefundByClaim(ctx, token, now)
		assert.ErrorIs(t, err, models.ErrRefundNotFound)

		// Approved, sent, refused: failed, it waits for a new destination
		// and gets a new claim; the old token stays dead.
		failedAt := now.Add(time.Hour)
		_, err = st.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
		require.NoError(t, err)
		failed, err := st.UpdateRefund(ctx, r.ID, failedAt, func(r models.Refund) (models.Refund, error) {
			return models.FailRefund(r, "The account does not trust USDC", failedAt)
		})
		require.NoError(t, err)
		require.Equal(t, models.RefundFailed, failed.Status)
		second := claimOf(t, failed, failedAt)
		assert.NotEqual(t, token, second)
		_, err = st.RefundByClaim(ctx, token, failedAt)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "the first claim stays dead")
		found, err = st.RefundByClaim(ctx, second, failedAt)
		require.NoError(t, err)
		assert.Equal(t, models.RefundFailed, found.Status)
		byID, err = st.Refund(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, failed, byID, "read back with the new claim")

		// A failed refund that fails again (after a retry) gets another,
		// and the one before dies.
		_, err = st.UpdateRefund(ctx, r.ID, failedAt, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, failedAt) })
		require.NoError(t, err)
		_, err = st.RefundByClaim(ctx, second, failedAt)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "a refund being sent takes no destination")
		refailedAt := failedAt.Add(time.Hour)
		refailed, err := st.UpdateRefund(ctx, r.ID, refailedAt, func(r models.Refund) (models.Refund, error) {
			return models.FailRefund(r, "No such account", refailedAt)
		})
		require.NoError(t, err)
		third := claimOf(t, refailed, refailedAt)
		assert.NotEqual(t, second, third)
		_, err = st.RefundByClaim(ctx, second, refailedAt)
		assert.ErrorIs(t, err, models.ErrRefundNotFound)

		// An operator's settlement ends it too.
		cancelled, err := st.UpdateRefund(ctx, r.ID, refailedAt, func(r models.Refund) (models.Refund, error) { return models.CancelRefund(r, refailedAt) })
		require.NoError(t, err)
		assert.Nil(t, cancelled.Claim)
		_, err = st.RefundByClaim(ctx, third, refailedAt)
		assert.ErrorIs(t, err, models.ErrRefundNotFound)
		n, err := st.RefundClaimCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// Only a refund that waits for its destination, in an asset the service
// pays out, gets a claim: not one that starts with the order's
// destination, nor a payer's wrong-asset money. An unmatched payment's
// refund, created by an operator, gets one at its creation time.
func TestRefundClaimsOnlyForRefundsAwaitingADestination(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(time.Hour)

		withDest := owedRefund(t, st, failedOrder(t, st, a.ID, "crt_dest", &toAccount).ID, now)
		assert.Equal(t, models.RefundAwaitingApproval, withDest.Status)
		assert.Nil(t, withDest.Claim, "it has its destination")

		wrong := newOrder(t, st, a.ID, "crt_wrong", nil)
		eurc := livePayment("p-eurc", wrong.Number, "EURC:GDHU6WRG4IEQXM5NZ4BMPKOXHW76MZM4Y2IEMFDVXBSDP6SJY4ITNPP2", "5")
		require.NoError(t, st.RecordPayment(ctx, wrong.ID, eurc, time.Now()))
		wrongAsset := owedRefund(t, st, wrong.ID, now)
		assert.Equal(t, models.RefundAwaitingDestination, wrongAsset.Status)
		assert.Nil(t, wrongAsset.Claim, "an asset the service does not pay out")

		require.NoError(t, st.SaveMatch(ctx, livePayment("p-unmatched", "nothing", "XLM", "3"), "", time.Now()))
		unmatched, created, err := st.CreateRefund(ctx, models.Refund{
			Key: "payment:p-unmatched", Mode: models.ModeTest, PaymentIDs: []string{"p-unmatched"},
			Reason: models.RefundUnmatchedPayment, Amount: decimal.RequireFromString("3"), Asset: "XLM",
			Status: models.RefundAwaitingDestination, CreatedAt: now,
		})
		require.NoError(t, err)
		require.True(t, created)
		token := claimOf(t, unmatched, now)
		again, created, err := st.CreateRefund(ctx, models.Refund{Key: "payment:p-unmatched", Mode: models.ModeTest})
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, token, claimOf(t, again, now), "created once, its claim once")

		// A claim works only while its refund waits, whatever wrote the
		// refund.
		moved := owedRefund(t, st, failedOrder(t, st, a.ID, "crt_moved", nil).ID, now)
		movedToken := claimOf(t, moved, now)
		require.NoError(t, st.Exec(ctx, "UPDATE refunds SET status = 'awaiting_approval' WHERE id = ?", moved.ID))
		_, err = st.RefundByClaim(ctx, movedToken, now)
		assert.ErrorIs(t, err, models.ErrRefundNotFound)
		got, err := st.Refund(ctx, moved.ID)
		require.NoError(t, err)
		assert.Nil(t, got.Claim, "not shown either")

		n, err := st.RefundClaimCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
	})
}

// Submissions through one link at once: exactly one holds it.
func TestTakeRefundClaimConcurrently(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(time.Hour)
		_, _, token := claimedRefund(t, st, a.ID, "crt_race", now)

		const n = 8
		taken := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, taken[i], errs[i] = st.TakeRefundClaim(ctx, token, now, now.Add(time.Minute))
			})
		}
		close(start)
		wg.Wait()
		holders := 0
		for i := range n {
			require.NoError(t, errs[i])
			if taken[i] {
				holders++
			}
		}
		assert.Equal(t, 1, holders)
	})
}

// claimRenderer records the claim token each refund event was rendered
// with.
type claimRenderer struct {
	mu     sync.Mutex
	tokens map[models.EventType][]string
}

func (r *claimRenderer) ClaimURL(token string) string { return "https://pay.example/claim/" + token }

func (r *claimRenderer) RenderEvent(ev models.Event, s models.EventSubject) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Refund != nil {
		token := ""
		if s.Refund.Claim != nil {
			token = s.Refund.Claim.Token
		}
		r.tokens[ev.Type] = append(r.tokens[ev.Type], token)
	}
	return json.Marshal(map[string]any{"id": ev.ID})
}

// refund.created and refund.failed are rendered with the claim the same
// transaction issued, so their bodies can carry the claim_url.
func TestRefundEventsCarryTheClaim(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		rr := &claimRenderer{tokens: map[models.EventType][]string{}}
		st.SetEventRenderer(rr)
		a := newAccount(t, st, "a")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		now := t0.Add(time.Hour)
		_, r, first := claimedRefund(t, st, a.ID, "crt_ev", now)
		id := r.ID
		for _, mv := range []func(models.Refund) (models.Refund, error){
			func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, toAccount) },
			func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) },
			func(r models.Refund) (models.Refund, error) { return models.FailRefund(r, "No such account", now) },
		} {
			_, err := st.UpdateRefund(ctx, id, now, mv)
			require.NoError(t, err)
		}
		failed, err := st.Refund(ctx, id)
		require.NoError(t, err)
		second := claimOf(t, failed, now)
		assert.Equal(t, []string{first}, rr.tokens[models.EventRefundCreated])
		assert.Equal(t, []string{second}, rr.tokens[models.EventRefundFailed])
	})
}

// With MEMOCART_WEBHOOK_SECRETS_KEY a claim's token is sealed like a
// webhook secret: the database holds its hash and ciphertext only, a
// process without the key cannot show it (and still reads the refund),
// and a sealed token moved to another refund's row opens nowhere. A token
// stored before the key was set still shows; every link works by its
// hash.
func TestRefundClaimsAreSealed(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			dsn := sqlstoretest.DSN(t, d)
			keyed, plain := openMigrated(t, dsn, bytes.Repeat([]byte{7}, 32)), openMigrated(t, dsn, nil)
			a := newAccount(t, keyed, "a")
			now := t0.Add(time.Hour)
			newRefund := func(st *sqlstore.Store, cart string) models.Refund {
				t.Helper()
				o := failedOrder(t, st, a.ID, cart, nil)
				return owedRefund(t, st, o.ID, now)
			}
			sealed, other, unsealed := newRefund(keyed, "crt_s1"), newRefund(keyed, "crt_s2"), newRefund(plain, "crt_p")
			token := claimOf(t, sealed, now)

			_, stored, err := keyed.StoredRefundClaim(ctx, sealed.ID)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(stored, "v1:"), stored)
			assert.NotContains(t, stored, token)
			found, err := keyed.RefundByClaim(ctx, token, now)
			require.NoError(t, err)
			assert.Equal(t, token, found.Claim.Token)
			got, err := keyed.Refund(ctx, sealed.ID)
			require.NoError(t, err)
			assert.Equal(t, token, got.Claim.Token, "the API can show it again")

			_, err = keyed.RefundByClaim(ctx, claimOf(t, unsealed, now), now)
			assert.NoError(t, err, "a token stored before the key was set still works")

			got, err = keyed.Refund(ctx, unsealed.ID)
			require.NoError(t, err)
			assert.Equal(t, unsealed.Claim, got.Claim, "a token stored before the key was set still shows")

			// Without the key: the refund reads (its moves and payout
			// need it), without its claim; the link still works.
			got, err = plain.Refund(ctx, sealed.ID)
			require.NoError(t, err, "without the key")
			assert.Nil(t, got.Claim, "without the key")
			_, err = plain.RefundByClaim(ctx, token, now)
			assert.NoError(t, err, "found by its hash, without the key")
			wrong := openMigrated(t, dsn, bytes.Repeat([]byte{8}, 32))
			got, err = wrong.Refund(ctx, sealed.ID)
			require.NoError(t, err)
			assert.Nil(t, got.Claim, "with another key")

			// The sealed token moved to the other refund's row opens
			// nowhere: the claim is bound to its refund.
			otherToken := claimOf(t, other, now)
			require.NoError(t, keyed.SetStoredRefundClaimToken(ctx, other.ID, stored))
			got, err = keyed.Refund(ctx, other.ID)
			require.NoError(t, err)
			assert.Nil(t, got.Claim, "another refund's sealed token does not open here")
			found, err = keyed.RefundByClaim(ctx, otherToken, now)
			require.NoError(t, err, "the other refund's own link still works")
			assert.Equal(t, other.ID, found.ID)
		})
	}
}

// Two submissions through one link both pass its lease (the first held
// up past it, as a worker's backlog would): the writes they ask for race,
// and only one sets the destination; the other is refused, the link
// being used. The winner's retried write answers the refund as it is; an
// expired link sets nothing.
func TestRefundClaimWriteUsesTheClaim(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(time.Hour)
		_, r, token := claimedRefund(t, st, a.ID, "crt_use", now)
		id := r.ID
		hash, ok := models.RefundClaimHash(token)
		require.True(t, ok)

		_, taken, err := st.TakeRefundClaim(ctx, token, now, now.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, taken)
		later := now.Add(2 * time.Minute)
		_, taken, err = st.TakeRefundClaim(ctx, token, later, later.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, taken, "the first submission's lease lapsed")

		other := models.RefundDestination{Address: payoutAccount, MemoType: "text", Memo: "someone else"}
		dests := []models.RefundDestination{toAccount, other}
		got := make([]models.Refund, len(dests))
		errs := make([]error, len(dests))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, d := range dests {
			wg.Go(func() {
				<-start
				got[i], errs[i] = st.UpdateRefundByClaim(ctx, id, hash, later, func(r models.Refund) (models.Refund, error) {
					return models.SetRefundDestination(r, d)
				})
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i := range dests {
			if errs[i] == nil {
				require.Equal(t, -1, won, "only one write through the link sets a destination")
				won = i
				continue
			}
			assert.ErrorIs(t, errs[i], models.ErrRefundNotFound)
			assert.Equal(t, models.ErrRefundClaimGone.Message, errs[i].(*models.Error).Message)
		}
		require.NotEqual(t, -1, won, "one write sets it: %v", errs)
		stored, err := st.Refund(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingApproval, stored.Status)
		assert.Equal(t, dests[won], *stored.Destination, "the winner's destination stands")
		assert.Equal(t, got[won], stored)
		_, err = st.RefundByClaim(ctx, token, later)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "used")

		again, err := st.UpdateRefundByClaim(ctx, id, hash, later, func(r models.Refund) (models.Refund, error) {
			return models.SetRefundDestination(r, dests[won])
		})
		require.NoError(t, err, "a retried write that changes nothing answers the refund")
		assert.Equal(t, stored, again)

		// An expired link sets nothing.
		o2 := failedOrder(t, st, a.ID, "crt_use2", nil)
		r2 := owedRefund(t, st, o2.ID, now)
		hash2, _ := models.RefundClaimHash(claimOf(t, r2, now))
		_, err = st.UpdateRefundByClaim(ctx, r2.ID, hash2, now.Add(models.RefundClaimTTL), func(r models.Refund) (models.Refund, error) {
			return models.SetRefundDestination(r, toAccount)
		})
		assert.ErrorIs(t, err, models.ErrRefundClaimGone)
		stored, err = st.Refund(ctx, r2.ID)
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingDestination, stored.Status)
		assert.Nil(t, stored.Destination)
	})
}

// refRenderer renders a refund event's claim as the API's renderer does:
// claim_url holds the claim's reference (models.RefundClaimRef) while the
// claim works at the event's time, null otherwise; leak renders the
// token itself instead.
type refRenderer struct{ leak bool }

func (r refRenderer) ClaimURL(token string) string { return "https://pay.example/claim/" + token }

func (r refRenderer) RenderEvent(ev models.Event, s models.EventSubject) ([]byte, error) {
	var claim any
	if rf := s.Refund; rf != nil && rf.Claim.Live(ev.CreatedAt) {
		claim = models.RefundClaimRef(rf.Claim.Token)
		if r.leak {
			claim = r.ClaimURL(rf.Claim.Token)
		}
	}
	return json.Marshal(map[string]any{"id": ev.ID, "type": ev.Type, "claim_url": claim})
}

// A refund event's stored body names its claim, never the token; each
// delivery renders the link while that claim works: null once it is
// used, replaced or expired, never the refund's newer claim. A body that
// holds a token is not recorded.
func TestRefundEventsStoreClaimReferences(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(refRenderer{})
		a := newAccount(t, st, "a")
		ep := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		now := t0.Add(time.Hour)
		o, owed, first := claimedRefund(t, st, a.ID, "crt_ref", now)
		id := owed.ID
		eventOf := func(typ models.EventType) string {
			t.Helper()
			pending, err := st.PendingOrderWebhookEvents(ctx, o.ID)
			require.NoError(t, err)
			for _, p := range pending {
				if p.Type == typ {
					return p.ID
				}
			}
			require.Failf(t, "no event", "%s", typ)
			return ""
		}
		delivered := func(evID string, at time.Time) any {
			t.Helper()
			ev, _, err := st.WebhookDelivery(ctx, evID, ep.ID, at)
			require.NoError(t, err)
			return payload(t, ev)["claim_url"]
		}
		created := eventOf(models.EventRefundCreated)
		stored, err := st.WebhookEvent(ctx, created)
		require.NoError(t, err)
		assert.NotContains(t, string(stored.Payload), first, "the stored body holds no token")
		assert.Contains(t, string(stored.Payload), models.RefundClaimRef(first))
		assert.Equal(t, "https://pay.example/claim/"+first, delivered(created, now), "delivered with the working link")

		// Used: the link is gone from every delivery.
		hash, _ := models.RefundClaimHash(first)
		_, err = st.UpdateRefundByClaim(ctx, id, hash, now, func(r models.Refund) (models.Refund, error) {
			return models.SetRefundDestination(r, toAccount)
		})
		require.NoError(t, err)
		assert.Nil(t, delivered(created, now), "used")

		// Failed: refund.failed carries the new link; refund.created does
		// not take it up.
		_, err = st.UpdateRefund(ctx, id, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
		require.NoError(t, err)
		_, err = st.UpdateRefund(ctx, id, now, func(r models.Refund) (models.Refund, error) {
			return models.FailRefund(r, "No such account", now)
		})
		require.NoError(t, err)
		r, err := st.Refund(ctx, id)
		require.NoError(t, err)
		second := claimOf(t, r, now)
		failed := eventOf(models.EventRefundFailed)
		assert.Equal(t, "https://pay.example/claim/"+second, delivered(failed, now))
		assert.Nil(t, delivered(created, now), "the older event's claim was replaced")
		assert.Equal(t, "https://pay.example/claim/"+second, delivered(failed, now.Add(models.RefundClaimTTL-time.Second)))
		assert.Nil(t, delivered(failed, now.Add(models.RefundClaimTTL)), "expired")

		// Another account's event naming this claim renders nothing.
		b := newAccount(t, st, "b")
		other := newEndpoint(t, st, b.ID, models.ModeTest, models.EventAll)
		ob := failedOrder(t, st, b.ID, "crt_ref_b", &toAccount)
		_, err = st.CreateOwedRefunds(ctx, ob.ID, now)
		require.NoError(t, err)
		pending, err := st.PendingOrderWebhookEvents(ctx, ob.ID)
		require.NoError(t, err)
		require.NotEmpty(t, pending)
		require.NoError(t, st.SetStoredWebhookEventPayload(ctx, pending[0].ID, `{"claim_url":"`+models.RefundClaimRef(second)+`"}`))
		ev, _, err := st.WebhookDelivery(ctx, pending[0].ID, other.ID, now)
		require.NoError(t, err)
		assert.JSONEq(t, `{"claim_url":null}`, string(ev.Payload), "another account's claim")

		// A renderer that writes the token is refused: nothing recorded.
		st.SetEventRenderer(refRenderer{leak: true})
		leaky := failedOrder(t, st, a.ID, "crt_leak", nil)
		_, err = st.CreateOwedRefunds(ctx, leaky.ID, now)
		require.ErrorContains(t, err, "claim token")
		got, err := st.RefundsForOrder(ctx, leaky.ID)
		require.NoError(t, err)
		assert.Empty(t, got, "the refunds' transaction was rolled back")
	})
}
