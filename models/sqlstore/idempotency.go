package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

type idempotencyRow struct {
	AccountID      string `gorm:"primaryKey"`
	Mode           string `gorm:"primaryKey"`
	IdempotencyKey string `gorm:"primaryKey"`
	RequestMethod  string
	RequestPath    string
	RequestHash    string
	State          string
	Token          string
	ReservedAt     time.Time
	ExpiresAt      time.Time
	ResponseStatus *int
	ResponseHeader string // JSON object of the kept headers
	ResponseBody   []byte
	CompletedAt    *time.Time
}

func (idempotencyRow) TableName() string { return "idempotency_keys" }

func (r idempotencyRow) toModel() (models.IdempotencyRecord, error) {
	rec := models.IdempotencyRecord{
		IdempotentRequest: models.IdempotentRequest{
			IdempotencyScope: models.IdempotencyScope{AccountID: r.AccountID, Mode: models.Mode(r.Mode), Key: r.IdempotencyKey},
			Method:           r.RequestMethod, Path: r.RequestPath, Hash: r.RequestHash,
		},
		State: models.IdempotencyState(r.State), Token: r.Token,
		ReservedAt: utc(r.ReservedAt), ExpiresAt: utc(r.ExpiresAt),
	}
	if r.State == string(models.IdempotencyDone) && r.ResponseStatus != nil {
		resp := &models.StoredResponse{Status: *r.ResponseStatus, Body: r.ResponseBody}
		if r.ResponseHeader != "" {
			if err := json.Unmarshal([]byte(r.ResponseHeader), &resp.Header); err != nil {
				return rec, fmt.Errorf("idempotency key record: response headers: %w", err)
			}
		}
		if resp.Body == nil {
			resp.Body = []byte{}
		}
		rec.Response = resp
	}
	return rec, nil
}

// whereScope selects one key's row.
func whereScope(db *gorm.DB, sc models.IdempotencyScope) *gorm.DB {
	return db.Where("account_id = ? AND mode = ? AND idempotency_key = ?", sc.AccountID, string(sc.Mode), sc.Key)
}

// reserveAttempts bounds ReserveIdempotencyKey's retries when other
// requests keep changing the key's row between its read and its write.
const reserveAttempts = 4

// ReserveIdempotencyKey presents a request's Idempotency-Key. The first
// request with a key reserves it with an INSERT that the primary key makes
// atomic across every API replica; a later one reads the row and lets
// models.IdempotencyRecord.Decide say what to do. When that is to run again
// (the key expired, its request answered 5xx, or its request is presumed
// dead after staleAfter), the key is taken over with a compare-and-set on
// the reservation's token, so of several requests taking it over at once
// exactly one wins; the others see the winner's reservation, in flight.
//
// The claim holds a token when the caller now holds the key: it must then
// CompleteIdempotencyKey or ReleaseIdempotencyKey with it.
func (s *Store) ReserveIdempotencyKey(ctx context.Context, req models.IdempotentRequest, now time.Time, staleAfter time.Duration) (models.IdempotencyClaim, error) {
	db := s.db.WithContext(ctx)
	now = now.UTC()
	for range reserveAttempts {
		token := newID("idem")
		row := idempotencyRow{
			AccountID: req.AccountID, Mode: string(req.Mode), IdempotencyKey: req.Key,
			RequestMethod: req.Method, RequestPath: req.Path, RequestHash: req.Hash,
			State: string(models.IdempotencyInFlight), Token: token,
			ReservedAt: now, ExpiresAt: now.Add(models.IdempotencyTTL),
		}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
		if res.Error != nil {
			return models.IdempotencyClaim{}, fmt.Errorf("reserving idempotency key: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return models.IdempotencyClaim{Action: models.IdempotencyRun, Token: token}, nil
		}
		var cur idempotencyRow
		err := whereScope(db, req.IdempotencyScope).Take(&cur).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue // purged between the insert and the read: insert again
		}
		if err != nil {
			return models.IdempotencyClaim{}, fmt.Errorf("reading idempotency key: %w", err)
		}
		rec, err := cur.toModel()
		if err != nil {
			return models.IdempotencyClaim{}, err
		}
		if act := rec.Decide(req, now, staleAfter); act != models.IdempotencyRun {
			return models.IdempotencyClaim{Action: act, Record: rec}, nil
		}
		res = whereScope(db.Model(&idempotencyRow{}), req.IdempotencyScope).Where("token = ?", cur.Token).Updates(map[string]any{
			"request_method": req.Method, "request_path": req.Path, "request_hash": req.Hash,
			"state": string(models.IdempotencyInFlight), "token": token,
			"reserved_at": now, "expires_at": now.Add(models.IdempotencyTTL),
			"response_status": nil, "response_header": "", "response_body": nil, "completed_at": nil,
		})
		if res.Error != nil {
			return models.IdempotencyClaim{}, fmt.Errorf("taking over idempotency key: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return models.IdempotencyClaim{Action: models.IdempotencyRun, Token: token}, nil
		}
		// Another request took it over first: look again.
	}
	// The row changed under every attempt: requests with this key are
	// racing right now, which is what "in flight" tells the client.
	return models.IdempotencyClaim{Action: models.IdempotencyBusy}, nil
}

// CompleteIdempotencyKey keeps the response of the request holding the key
// (token) for replay. It reports false, writing nothing, when the request
// no longer holds the key (it was taken over as presumed dead).
func (s *Store) CompleteIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string, resp models.StoredResponse, now time.Time) (bool, error) {
	hdr := ""
	if len(resp.Header) > 0 {
		b, err := json.Marshal(resp.Header)
		if err != nil {
			return false, fmt.Errorf("encoding response headers: %w", err)
		}
		hdr = string(b)
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	res := whereScope(s.db.WithContext(ctx).Model(&idempotencyRow{}), sc).
		Where("token = ? AND state = ?", token, string(models.IdempotencyInFlight)).
		Updates(map[string]any{
			"state": string(models.IdempotencyDone), "response_status": resp.Status,
			"response_header": hdr, "response_body": body, "completed_at": now.UTC(),
		})
	if res.Error != nil {
		return false, fmt.Errorf("completing idempotency key: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ReleaseIdempotencyKey records that the request holding the key (token)
// answered without a response worth keeping (a 5xx): the same request may
// run again at once, while the key stays bound to it. It reports false when
// the request no longer holds the key.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string) (bool, error) {
	res := whereScope(s.db.WithContext(ctx).Model(&idempotencyRow{}), sc).
		Where("token = ? AND state = ?", token, string(models.IdempotencyInFlight)).
		Update("state", string(models.IdempotencyReleased))
	if res.Error != nil {
		return false, fmt.Errorf("releasing idempotency key: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// PurgeIdempotencyKeys deletes up to limit keys that expired at or before
// now, and returns how many it deleted: bounded work for a periodic job.
// Expired keys are already ignored by ReserveIdempotencyKey; this only
// reclaims their space.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys
		WHERE (account_id, mode, idempotency_key) IN (
			SELECT account_id, mode, idempotency_key FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`,
		now.UTC(), limit)
	if res.Error != nil {
		return 0, fmt.Errorf("purging expired idempotency keys: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}
