package sqlstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// Refund claims (models.RefundClaim): the payer's secret link to say where
// a refund goes. A refund has at most one row in refund_claims, found by
// the SHA-256 of its token; the token itself is sealed like a webhook
// secret (secrets.go), bound to the refund's id, so that the API can show
// the claim_url again and a copy of the database alone opens no link.
//
// The claim's life follows the refund's, in the transactions that write
// the refund: a refund created awaiting its destination gets one
// (CreateOwedRefunds, CreateRefund); one whose payout failed gets a new
// one, which replaces the old (UpdateRefund); any move that makes the
// refund stop waiting for a destination (one is set, through the link or
// by the API client; an operator settles it) deletes it. A destination
// set through the link is written with the claim's check and end in one
// transaction (UpdateRefundByClaim): that, not the lease a submission
// holds (TakeRefundClaim), is what makes a claim single-use.

// refundClaimRow is a stored claim.
type refundClaimRow struct {
	RefundID  string
	TokenHash string
	Token     string // sealed (sealSecret, bound to RefundID)
	IssuedAt  time.Time
	ExpiresAt time.Time
	// TakenUntil: a submission through the link holds it until then
	// (TakeRefundClaim).
	TakenUntil *time.Time
}

func (refundClaimRow) TableName() string { return "refund_claims" }

// issueRefundClaim gives refund r, written in tx, a new claim issued at
// now, replacing the one it had, and returns r with it.
func (s *Store) issueRefundClaim(tx *gorm.DB, r models.Refund, now time.Time) (models.Refund, error) {
	c, err := models.NewRefundClaim(rand.Reader, now.UTC())
	if err != nil {
		return r, err
	}
	hash, _ := models.RefundClaimHash(c.Token)
	sealed, err := s.sealSecret(r.ID, c.Token)
	if err != nil {
		return r, fmt.Errorf("sealing the claim of refund %s: %w", r.ID, err)
	}
	if err := dropRefundClaim(tx, r.ID); err != nil {
		return r, err
	}
	row := refundClaimRow{RefundID: r.ID, TokenHash: hash, Token: sealed, IssuedAt: now.UTC(), ExpiresAt: c.ExpiresAt}
	if err := tx.Create(&row).Error; err != nil {
		return r, fmt.Errorf("storing the claim of refund %s: %w", r.ID, err)
	}
	r.Claim = &c
	return r, nil
}

// dropRefundClaim ends the claim of refund id, if it has one.
func dropRefundClaim(tx *gorm.DB, refundID string) error {
	if err := tx.Where("refund_id = ?", refundID).Delete(&refundClaimRow{}).Error; err != nil {
		return fmt.Errorf("deleting the claim of refund %s: %w", refundID, err)
	}
	return nil
}

// claimAfterMove issues or ends the claim of a refund that moved from
// status from to r (as written in tx) at now, and returns r with its
// claim: a refund that failed gets a new one (it waits for a new
// destination); one that no longer waits for a destination has none; any
// other keeps its own.
func (s *Store) claimAfterMove(tx *gorm.DB, from models.RefundStatus, r models.Refund, now time.Time) (models.Refund, error) {
	r.Claim = nil
	switch {
	case !models.RefundClaimable(r):
		if from == r.Status {
			return r, nil
		}
		return r, dropRefundClaim(tx, r.ID)
	case r.Status == models.RefundFailed && from != r.Status:
		return s.issueRefundClaim(tx, r, now)
	}
	return s.withClaim(tx, r)
}

// useRefundClaim uses up, in tx, the claim of refund cur (locked in tx)
// whose token hashes to hash, for the move that makes next of cur: a
// claim works once, and the write it asks for is the one that ends it.
// The lease of a submission (TakeRefundClaim) only keeps two submissions
// from being checked at once; it lapses, and a submission held up past it
// (a worker's backlog) must not change a destination set since. A claim
// that does not work at now (used, replaced, expired, or its refund no
// longer waits for a destination) is refused (models.ErrRefundClaimGone),
// unless the move changes nothing: a retried write whose first attempt
// used the claim answers the refund as it is.
func (s *Store) useRefundClaim(tx *gorm.DB, cur, next models.Refund, hash string, now time.Time) (refusal, err error) {
	var row refundClaimRow
	if models.RefundClaimable(cur) {
		err = s.forUpdate(tx).Where("refund_id = ? AND token_hash = ?", cur.ID, hash).Take(&row).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, fmt.Errorf("reading the claim of refund %s: %w", cur.ID, err)
		}
	}
	c := models.RefundClaim{ExpiresAt: utc(row.ExpiresAt)}
	if row.RefundID == "" || !c.Live(now) {
		if refundChanged(cur, moved(cur, next)) {
			return models.ErrRefundClaimGone, nil
		}
		return nil, nil
	}
	return nil, dropRefundClaim(tx, cur.ID)
}

// withClaim returns r with its claim (attachClaims).
func (s *Store) withClaim(db *gorm.DB, r models.Refund) (models.Refund, error) {
	rs := []models.Refund{r}
	if err := s.attachClaims(db, rs); err != nil {
		return models.Refund{}, err
	}
	return rs[0], nil
}

// attachClaims sets the Claim of each refund of rs that may be claimed
// (models.RefundClaimable) and has a claim stored, expired or not: the
// reader decides with its own clock. Every read of a refund the store
// answers carries its claim this way.
//
// A claim this process cannot open (sealed under a key it does not have,
// or moved from another refund's row) is left off: the refund reads
// without its claim_url rather than not at all, since every move and
// payout of the refund reads it too. The payer's link itself still works:
// it is found by its hash (RefundByClaim).
func (s *Store) attachClaims(db *gorm.DB, rs []models.Refund) error {
	var ids []string
	at := map[string]int{}
	for i, r := range rs {
		if models.RefundClaimable(r) {
			ids = append(ids, r.ID)
			at[r.ID] = i
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []refundClaimRow
	if err := db.Where("refund_id IN ?", ids).Find(&rows).Error; err != nil {
		return fmt.Errorf("reading refund claims: %w", err)
	}
	for _, row := range rows {
		token, err := s.openSecret(row.RefundID, row.Token)
		if err != nil {
			continue
		}
		rs[at[row.RefundID]].Claim = &models.RefundClaim{Token: token, ExpiresAt: utc(row.ExpiresAt)}
	}
	return nil
}

// liveClaim reads, in db, the claim of token and its refund with the
// claim attached, if the claim works at now: stored (not replaced, not
// used), not expired, and its refund still claimable. Anything else is
// models.ErrRefundNotFound: a link that does not work says nothing of
// why. With lock, the claim's row (only) is locked until db's transaction
// ends: a refund's writes lock its order, then the refund, then delete its
// claim, so a reader holding the claim must not wait for the refund.
func (s *Store) liveClaim(db *gorm.DB, token string, now time.Time, lock bool) (refundClaimRow, models.Refund, error) {
	hash, ok := models.RefundClaimHash(token)
	if !ok {
		return refundClaimRow{}, models.Refund{}, models.ErrRefundNotFound
	}
	row, r, err := s.liveClaimByHash(db, hash, now, lock)
	if err != nil {
		return refundClaimRow{}, models.Refund{}, err
	}
	// The token hashes to the row: it is the claim's, and needs no
	// opening (nor the key).
	r.Claim = &models.RefundClaim{Token: token, ExpiresAt: utc(row.ExpiresAt)}
	return row, r, nil
}

// liveClaimByHash is liveClaim for the claim whose token hashes to hash,
// its refund returned without the claim.
func (s *Store) liveClaimByHash(db *gorm.DB, hash string, now time.Time, lock bool) (refundClaimRow, models.Refund, error) {
	q := db
	if lock {
		q = s.forUpdate(db)
	}
	row, err := take[refundClaimRow](q.Where("token_hash = ?", hash), models.ErrRefundNotFound, "refund claim")
	if err != nil {
		return refundClaimRow{}, models.Refund{}, err
	}
	var rr refundRow
	if err := db.Where("id = ?", row.RefundID).Take(&rr).Error; err != nil {
		return refundClaimRow{}, models.Refund{}, fmt.Errorf("reading the refund of a claim: %w", err)
	}
	r, err := rr.toModel()
	if err != nil {
		return refundClaimRow{}, models.Refund{}, err
	}
	c := models.RefundClaim{ExpiresAt: utc(row.ExpiresAt)}
	if !c.Live(now) || !models.RefundClaimable(r) {
		return refundClaimRow{}, models.Refund{}, models.ErrRefundNotFound
	}
	return row, r, nil
}

// claimLink returns the token of the claim whose token hashes to hash, if
// the claim works at now (liveClaim) and its refund is of the account and
// mode given: what a delivery of an event of theirs renders a claim
// reference to (models.ResolveRefundClaimRefs). ok is false otherwise: a
// claim used, replaced or expired, or another account's, renders null.
func (s *Store) claimLink(db *gorm.DB, hash, accountID string, mode models.Mode, now time.Time) (token string, ok bool, err error) {
	row, r, err := s.liveClaimByHash(db, hash, now, false)
	if errors.Is(err, models.ErrRefundNotFound) || err == nil && (r.AccountID != accountID || r.Mode != mode) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if token, err = s.openSecret(row.RefundID, row.Token); err != nil {
		return "", false, fmt.Errorf("opening the claim of refund %s: %w", row.RefundID, err)
	}
	return token, true, nil
}

// RefundByClaim returns the refund whose claim token is token, with its
// claim, if the claim works at now: not replaced by a newer one, not
// used, not expired, and the refund still waiting for a destination.
// Otherwise models.ErrRefundNotFound, whatever the reason.
func (s *Store) RefundByClaim(ctx context.Context, token string, now time.Time) (models.Refund, error) {
	_, r, err := s.liveClaim(s.db.WithContext(ctx), token, now, false)
	return r, err
}

// TakeRefundClaim holds the claim of token until until, for a submission
// through the link to set the refund's destination without another one
// doing so at the same time, and returns the refund with its claim. taken
// is false when another submission holds it (until its own until passes).
// A claim that does not work at now is models.ErrRefundNotFound.
//
// Setting the destination ends the claim (the move's write deletes it);
// a submission that is refused gives it back (ReleaseRefundClaim), and
// one that died holding it lets it go when until passes.
func (s *Store) TakeRefundClaim(ctx context.Context, token string, now, until time.Time) (r models.Refund, taken bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		taken = false
		row, got, err := s.liveClaim(tx, token, now, true)
		if err != nil {
			return err
		}
		r = got
		if row.TakenUntil != nil && now.Before(*row.TakenUntil) {
			return nil
		}
		res := tx.Model(&refundClaimRow{}).Where("refund_id = ? AND token_hash = ?", row.RefundID, row.TokenHash).
			Update("taken_until", until.UTC())
		if res.Error != nil {
			return fmt.Errorf("taking refund claim: %w", res.Error)
		}
		taken = res.RowsAffected == 1
		return nil
	})
	if err != nil {
		return models.Refund{}, false, err
	}
	return r, taken, nil
}

// ReleaseRefundClaim lets go of the claim of token a submission took
// (TakeRefundClaim) and did not use: the link works again. A claim used
// or replaced meanwhile is left as it is.
func (s *Store) ReleaseRefundClaim(ctx context.Context, token string) error {
	hash, ok := models.RefundClaimHash(token)
	if !ok {
		return nil
	}
	err := s.db.WithContext(ctx).Model(&refundClaimRow{}).Where("token_hash = ?", hash).Update("taken_until", nil).Error
	if err != nil {
		return fmt.Errorf("releasing refund claim: %w", err)
	}
	return nil
}
