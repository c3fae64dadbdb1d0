package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

// EventRenderer writes the body of a webhook event: the event's envelope
// with its subject as the API shows it (the order as GET returns it, and
// the payment of a payment event or the refund of a refund event). The
// store calls it inside the transaction that records the fact, with the
// subject as that transaction sees it, so the body is a snapshot of the
// moment; it must not do I/O.
//
// A refund's claim link is a credential, and is never stored in a body:
// RenderEvent writes models.RefundClaimRef in its place (a body holding
// the token is refused), and each delivery renders the reference to
// ClaimURL of the token while the claim works (WebhookDelivery).
type EventRenderer interface {
	RenderEvent(ev models.Event, subject models.EventSubject) ([]byte, error)
	ClaimURL(token string) string
}

// SetEventRenderer sets how event bodies are written. Call it before the
// store is used. Without one, a fact some endpoint subscribes to cannot be
// recorded: the write fails rather than deliver a body of another shape.
func (s *Store) SetEventRenderer(r EventRenderer) { s.events = r }

// ---- Endpoints ----

type webhookEndpointRow struct {
	ID             string
	AccountID      string
	Mode           string
	URL            string `gorm:"column:url"`
	Description    string
	EnabledEvents  string
	Secret         string
	CreatedAt      time.Time
	DisabledAt     *time.Time
	DisabledReason string
	DeletedAt      *time.Time
	LastSuccessAt  *time.Time
}

func (webhookEndpointRow) TableName() string { return "webhook_endpoints" }

func (r webhookEndpointRow) toModel() models.WebhookEndpoint {
	e := models.WebhookEndpoint{
		ID: r.ID, AccountID: r.AccountID, Mode: models.Mode(r.Mode), URL: r.URL, Description: r.Description,
		CreatedAt: utc(r.CreatedAt), DisabledAt: utcPtr(r.DisabledAt), DisabledReason: r.DisabledReason,
		DeletedAt: utcPtr(r.DeletedAt), LastSuccessAt: utcPtr(r.LastSuccessAt),
	}
	for _, t := range strings.Fields(r.EnabledEvents) {
		e.EnabledEvents = append(e.EnabledEvents, models.EventType(t))
	}
	return e
}

func joinEvents(ts []models.EventType) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = string(t)
	}
	return strings.Join(parts, " ")
}

// CreateWebhookEndpoint stores a new endpoint for e's account and mode
// (e.URL and e.EnabledEvents already validated, e.Secret the plain secret)
// and returns it with its id. An account has at most
// models.MaxWebhookEndpoints endpoints per mode
// (CodeWebhookEndpointLimit beyond).
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e models.WebhookEndpoint) (models.WebhookEndpoint, error) {
	e.ID = newID("we")
	e.CreatedAt = e.CreatedAt.UTC()
	sealed, err := s.sealSecret(e.ID, e.Secret)
	if err != nil {
		return models.WebhookEndpoint{}, fmt.Errorf("sealing webhook secret: %w", err)
	}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The account row's lock orders concurrent creations, so the limit
		// holds.
		var a accountRow
		if err := s.forUpdate(tx).Where("id = ?", e.AccountID).Take(&a).Error; err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&webhookEndpointRow{}).Where("account_id = ? AND mode = ? AND deleted_at IS NULL", e.AccountID, string(e.Mode)).Count(&n).Error; err != nil {
			return err
		}
		if n >= models.MaxWebhookEndpoints {
			return models.Errorf(models.CodeWebhookEndpointLimit, "An account has at most %d webhook endpoints per mode: delete one first", models.MaxWebhookEndpoints)
		}
		return tx.Create(&webhookEndpointRow{
			ID: e.ID, AccountID: e.AccountID, Mode: string(e.Mode), URL: e.URL, Description: e.Description,
			EnabledEvents: joinEvents(e.EnabledEvents), Secret: sealed, CreatedAt: e.CreatedAt,
		}).Error
	})
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) {
			return models.WebhookEndpoint{}, err
		}
		return models.WebhookEndpoint{}, fmt.Errorf("creating webhook endpoint: %w", err)
	}
	return e, nil
}

// WebhookEndpoints lists the account's endpoints in a mode, newest first,
// deleted ones left out, without their secrets.
func (s *Store) WebhookEndpoints(ctx context.Context, accountID string, mode models.Mode) ([]models.WebhookEndpoint, error) {
	var rows []webhookEndpointRow
	err := s.db.WithContext(ctx).Where("account_id = ? AND mode = ? AND deleted_at IS NULL", accountID, string(mode)).
		Order("created_at DESC, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing webhook endpoints: %w", err)
	}
	out := make([]models.WebhookEndpoint, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// WebhookEndpoint returns one of the account's endpoints in a mode, without
// its secret, or models.ErrWebhookEndpointNotFound (also when deleted, or
// another account's or mode's).
func (s *Store) WebhookEndpoint(ctx context.Context, accountID string, mode models.Mode, id string) (models.WebhookEndpoint, error) {
	r, err := s.endpointRow(s.db.WithContext(ctx), id)
	if err != nil {
		return models.WebhookEndpoint{}, err
	}
	if r.AccountID != accountID || r.Mode != string(mode) || r.DeletedAt != nil {
		return models.WebhookEndpoint{}, models.ErrWebhookEndpointNotFound
	}
	return r.toModel(), nil
}

func (s *Store) endpointRow(db *gorm.DB, id string) (webhookEndpointRow, error) {
	var r webhookEndpointRow
	err := db.Where("id = ?", id).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, models.ErrWebhookEndpointNotFound
	}
	if err != nil {
		return r, fmt.Errorf("reading webhook endpoint: %w", err)
	}
	return r, nil
}

// DeleteWebhookEndpoint deletes one of the account's endpoints: nothing is
// delivered to it any more, its attempts stay listed for operators. Its
// id answers models.ErrWebhookEndpointNotFound from then on.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, accountID string, mode models.Mode, id string, at time.Time) (models.WebhookEndpoint, error) {
	e, err := s.WebhookEndpoint(ctx, accountID, mode, id)
	if err != nil {
		return models.WebhookEndpoint{}, err
	}
	if err := s.deleteEndpoint(ctx, id, at); err != nil {
		return models.WebhookEndpoint{}, err
	}
	at = at.UTC()
	e.DeletedAt = &at
	return e, nil
}

func (s *Store) deleteEndpoint(ctx context.Context, id string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&webhookEndpointRow{}).Where("id = ? AND deleted_at IS NULL", id).Update("deleted_at", at.UTC())
	if res.Error != nil {
		return fmt.Errorf("deleting webhook endpoint: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return models.ErrWebhookEndpointNotFound
	}
	return nil
}

// StoredWebhookEndpoint is an endpoint with its account's name, for
// operators.
type StoredWebhookEndpoint struct {
	models.WebhookEndpoint
	AccountName string
}

// AllWebhookEndpoints lists the endpoints of every account, or of the
// named one, deleted ones included, for operators (memocart webhooks
// list). Secrets are left out.
func (s *Store) AllWebhookEndpoints(ctx context.Context, accountName string) ([]StoredWebhookEndpoint, error) {
	db := s.db.WithContext(ctx)
	var accounts []accountRow
	q := db.Order("name")
	if accountName != "" {
		q = q.Where("name = ?", accountName)
	}
	if err := q.Find(&accounts).Error; err != nil {
		return nil, fmt.Errorf("listing accounts: %w", err)
	}
	var out []StoredWebhookEndpoint
	for _, a := range accounts {
		var rows []webhookEndpointRow
		if err := db.Omit("secret").Where("account_id = ?", a.ID).Order("created_at DESC, id").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("listing webhook endpoints: %w", err)
		}
		for _, r := range rows {
			out = append(out, StoredWebhookEndpoint{WebhookEndpoint: r.toModel(), AccountName: a.Name})
		}
	}
	return out, nil
}

// WebhookEndpointByID returns an endpoint of any account, deleted or
// not, without its secret, for operators; models.ErrWebhookEndpointNotFound
// when there is none.
func (s *Store) WebhookEndpointByID(ctx context.Context, id string) (models.WebhookEndpoint, error) {
	r, err := s.endpointRow(s.db.WithContext(ctx), id)
	if err != nil {
		return models.WebhookEndpoint{}, err
	}
	return r.toModel(), nil
}

// ErrAccountNotFound is returned by AccountByName when no account has the
// name.
var ErrAccountNotFound = errors.New("no such account")

// AccountByName returns the account with the given name.
func (s *Store) AccountByName(ctx context.Context, name string) (models.Account, error) {
	var r accountRow
	err := s.db.WithContext(ctx).Where("name = ?", strings.TrimSpace(name)).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Account{}, ErrAccountNotFound
	}
	if err != nil {
		return models.Account{}, fmt.Errorf("reading account: %w", err)
	}
	return models.Account{ID: r.ID, Name: r.Name, CreatedAt: utc(r.CreatedAt)}, nil
}

// DeleteWebhookEndpointByID deletes an endpoint of any account, for
// operators.
func (s *Store) DeleteWebhookEndpointByID(ctx context.Context, id string, at time.Time) error {
	return s.deleteEndpoint(ctx, id, at)
}

// ---- Events: the outbox ----

type webhookEventRow struct {
	ID           string
	AccountID    string
	Mode         string
	Type         string
	OrderID      *string
	PaymentID    string
	CreatedAt    time.Time
	RecordedAt   time.Time
	Payload      string
	DispatchedAt *time.Time
}

func (webhookEventRow) TableName() string { return "webhook_events" }

func (r webhookEventRow) toModel() models.Event {
	ev := models.Event{
		ID: r.ID, Type: models.EventType(r.Type), AccountID: r.AccountID, Mode: models.Mode(r.Mode),
		PaymentID: r.PaymentID, CreatedAt: utc(r.CreatedAt), RecordedAt: utc(r.RecordedAt),
		Payload: []byte(r.Payload), DispatchedAt: utcPtr(r.DispatchedAt),
	}
	if r.OrderID != nil {
		ev.OrderID = *r.OrderID
	}
	return ev
}

// eventSpec is one fact about an order to record as an event.
type eventSpec struct {
	typ     models.EventType
	key     string // names the fact: see models.EventID
	at      time.Time
	payment *models.EventPayment // payment events
	refund  *models.Refund       // refund events
}

// recordEvents writes, inside the transaction tx that records the facts,
// the events of facts about one order: every fact is kept for the events
// API, whether or not an endpoint subscribes. An event that no active
// endpoint of the order's account and mode subscribes to is stored
// already dispatched (there is nothing to deliver: endpoints created
// later do not receive earlier events), so it costs no workflow. Each
// event's id is derived from its fact, and a second write of the same
// fact (a retried activity) changes nothing. It returns how many events
// wait for their dispatch.
func (s *Store) recordEvents(tx *gorm.DB, now time.Time, accountID string, mode models.Mode, orderID string, specs ...eventSpec) (int, error) {
	if len(specs) == 0 {
		return 0, nil
	}
	var subs []string
	err := tx.Model(&webhookEndpointRow{}).
		Where("account_id = ? AND mode = ? AND deleted_at IS NULL AND disabled_at IS NULL", accountID, string(mode)).
		Pluck("enabled_events", &subs).Error
	if err != nil {
		return 0, fmt.Errorf("reading webhook subscriptions: %w", err)
	}
	return s.writeEvents(tx, now, accountID, mode, orderID, subs, specs)
}

// subscribed reports whether one of the endpoints' subscriptions
// (enabled_events) includes t.
func subscribed(subs []string, t models.EventType) bool {
	for _, sub := range subs {
		ts := strings.Fields(sub)
		if slices.Contains(ts, string(models.EventAll)) || slices.Contains(ts, string(t)) {
			return true
		}
	}
	return false
}

// writeEvents renders and stores the events about one order, each with
// the order as tx sees it, recorded at now (the caller's clock); those no
// subscription (subs) wants are stored dispatched. It returns how many
// wait for their dispatch.
func (s *Store) writeEvents(tx *gorm.DB, now time.Time, accountID string, mode models.Mode, orderID string, subs []string, specs []eventSpec) (int, error) {
	if s.events == nil {
		return 0, errors.New("recording events: the store has no event renderer (SetEventRenderer)")
	}
	o, err := s.readClientOrder(tx, "id", orderID)
	if err != nil {
		return 0, fmt.Errorf("reading order %s for its events: %w", orderID, err)
	}
	now = now.UTC()
	pending := 0
	for _, sp := range specs {
		ev := models.Event{
			ID: models.EventID(sp.typ, sp.key), Type: sp.typ, AccountID: accountID, Mode: mode, OrderID: orderID,
			CreatedAt: sp.at.UTC().Truncate(time.Second), RecordedAt: now,
		}
		if sp.payment != nil {
			ev.PaymentID = sp.payment.ID
		}
		body, err := s.events.RenderEvent(ev, models.EventSubject{Order: o, Payment: sp.payment, Refund: sp.refund})
		if err != nil {
			return 0, fmt.Errorf("rendering event %s: %w", sp.typ, err)
		}
		if rf := sp.refund; rf != nil && rf.Claim != nil && bytes.Contains(body, []byte(rf.Claim.Token)) {
			return 0, fmt.Errorf("rendering event %s: the body holds refund %s's claim token, not its reference (models.RefundClaimRef)", sp.typ, rf.ID)
		}
		row := webhookEventRow{
			ID: ev.ID, AccountID: accountID, Mode: string(mode), Type: string(sp.typ), OrderID: &orderID,
			PaymentID: ev.PaymentID, CreatedAt: ev.CreatedAt, RecordedAt: now, Payload: string(body),
		}
		if subscribed(subs, sp.typ) {
			pending++
		} else {
			row.DispatchedAt = &now
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return 0, fmt.Errorf("recording event %s: %w", sp.typ, err)
		}
	}
	return pending, nil
}

// WebhookEvent returns an event with its body as stored (claim links as
// references: see EventRenderer), or models.ErrEventNotFound.
func (s *Store) WebhookEvent(ctx context.Context, id string) (models.Event, error) {
	var r webhookEventRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Event{}, models.ErrEventNotFound
	}
	if err != nil {
		return models.Event{}, fmt.Errorf("reading event: %w", err)
	}
	return r.toModel(), nil
}

// WebhookEventForAccount is WebhookEvent for one account and mode: another
// account's or mode's event is models.ErrEventNotFound.
func (s *Store) WebhookEventForAccount(ctx context.Context, accountID string, mode models.Mode, id string) (models.Event, error) {
	ev, err := s.WebhookEvent(ctx, id)
	if err == nil && (ev.AccountID != accountID || ev.Mode != mode) {
		return models.Event{}, models.ErrEventNotFound
	}
	return ev, err
}

// PendingWebhookEvents returns events not yet dispatched to their delivery
// workflow, recorded before the cutoff (younger ones may be being
// dispatched right now), oldest first, without their bodies.
func (s *Store) PendingWebhookEvents(ctx context.Context, recordedBefore time.Time, limit int) ([]models.Event, error) {
	var rows []webhookEventRow
	err := s.db.WithContext(ctx).Select(eventColumns).Where("dispatched_at IS NULL AND recorded_at < ?", recordedBefore.UTC()).
		Order("recorded_at, id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing events to dispatch: %w", err)
	}
	return eventModels(rows), nil
}

// PendingOrderWebhookEvents returns an order's events not yet dispatched,
// oldest first, without their bodies: what the write that just committed
// recorded, and whatever an earlier dispatch left behind.
func (s *Store) PendingOrderWebhookEvents(ctx context.Context, orderID string) ([]models.Event, error) {
	var rows []webhookEventRow
	err := s.db.WithContext(ctx).Select(eventColumns).
		Where("order_id = ? AND dispatched_at IS NULL", orderID).Order("recorded_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing order events to dispatch: %w", err)
	}
	return eventModels(rows), nil
}

// eventColumns are an event's columns but its body.
var eventColumns = []string{"id", "account_id", "mode", "type", "order_id", "payment_id", "created_at", "recorded_at", "dispatched_at"}

func eventModels(rows []webhookEventRow) []models.Event {
	out := make([]models.Event, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out
}

// MarkWebhookEventDispatched records that an event's delivery workflow
// exists.
func (s *Store) MarkWebhookEventDispatched(ctx context.Context, id string, at time.Time) error {
	err := s.db.WithContext(ctx).Model(&webhookEventRow{}).Where("id = ? AND dispatched_at IS NULL", id).
		Update("dispatched_at", at.UTC()).Error
	if err != nil {
		return fmt.Errorf("marking event dispatched: %w", err)
	}
	return nil
}

// ---- Delivery ----

// WebhookTargets returns the endpoints an event is delivered to: the
// active endpoints of its account and mode that subscribe to its type and
// existed when it was recorded, by id.
func (s *Store) WebhookTargets(ctx context.Context, eventID string) ([]models.WebhookEndpoint, error) {
	ev, err := s.WebhookEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	var rows []webhookEndpointRow
	err = s.db.WithContext(ctx).Omit("secret").
		Where("account_id = ? AND mode = ? AND deleted_at IS NULL AND disabled_at IS NULL AND created_at <= ?", ev.AccountID, string(ev.Mode), ev.RecordedAt).
		Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing webhook targets: %w", err)
	}
	var out []models.WebhookEndpoint
	for _, r := range rows {
		if e := r.toModel(); e.Wants(ev.Type) {
			out = append(out, e)
		}
	}
	return out, nil
}

// WebhookDelivery returns what one delivery attempt at now needs: the
// event with its body as delivered then (deliveredBody) and the endpoint
// with its secret. An endpoint deleted since is
// models.ErrWebhookEndpointNotFound, a disabled one
// CodeWebhookEndpointDisabled: nothing is delivered to either.
func (s *Store) WebhookDelivery(ctx context.Context, eventID, endpointID string, now time.Time) (models.Event, models.WebhookEndpoint, error) {
	ev, err := s.WebhookEvent(ctx, eventID)
	if err != nil {
		return models.Event{}, models.WebhookEndpoint{}, err
	}
	if ev.Payload, err = s.deliveredBody(s.db.WithContext(ctx), ev, now); err != nil {
		return models.Event{}, models.WebhookEndpoint{}, err
	}
	r, err := s.endpointRow(s.db.WithContext(ctx), endpointID)
	if err != nil {
		return models.Event{}, models.WebhookEndpoint{}, err
	}
	if r.DeletedAt != nil || r.AccountID != ev.AccountID || r.Mode != string(ev.Mode) {
		return models.Event{}, models.WebhookEndpoint{}, models.ErrWebhookEndpointNotFound
	}
	if r.DisabledAt != nil {
		return models.Event{}, models.WebhookEndpoint{}, models.Errorf(models.CodeWebhookEndpointDisabled, "webhook endpoint %s is disabled: %s", r.ID, r.DisabledReason)
	}
	e := r.toModel()
	if e.Secret, err = s.openSecret(r.ID, r.Secret); err != nil {
		return models.Event{}, models.WebhookEndpoint{}, err
	}
	return ev, e, nil
}

// deliveredBody is the stored body of ev as delivered at now: each claim
// reference (models.RefundClaimRef) rendered to the claim's link if the
// claim works at now and its refund is ev's account's and mode's, else
// null. The rest is the stored body byte for byte.
func (s *Store) deliveredBody(db *gorm.DB, ev models.Event, now time.Time) ([]byte, error) {
	return models.ResolveRefundClaimRefs(ev.Payload, func(hash string) (string, bool, error) {
		token, ok, err := s.claimLink(db, hash, ev.AccountID, ev.Mode, now)
		if err != nil || !ok {
			return "", false, err
		}
		if s.events == nil {
			return "", false, errors.New("rendering a claim link: the store has no event renderer (SetEventRenderer)")
		}
		return s.events.ClaimURL(token), true, nil
	})
}

type webhookAttemptRow struct {
	DeliveryID     string
	Attempt        int
	EventID        string
	EndpointID     string
	Dispatch       string
	Resend         bool
	AttemptedAt    time.Time
	Succeeded      bool
	ResponseStatus int
	Error          string
	DurationMs     int64 `gorm:"column:duration_ms"`
	NextRetryAt    *time.Time
	// Filled by the join with webhook_events on reads.
	EventType string `gorm:"->;-:migration"`
}

func (webhookAttemptRow) TableName() string { return "webhook_attempts" }

func (r webhookAttemptRow) toModel() models.WebhookAttempt {
	return models.WebhookAttempt{
		DeliveryID: r.DeliveryID, EventID: r.EventID, EventType: models.EventType(r.EventType), EndpointID: r.EndpointID,
		Attempt: r.Attempt, Resend: r.Resend, At: utc(r.AttemptedAt), Succeeded: r.Succeeded,
		ResponseStatus: r.ResponseStatus, Error: r.Error, Duration: time.Duration(r.DurationMs) * time.Millisecond,
		NextRetryAt: utcPtr(r.NextRetryAt),
	}
}

// RecordWebhookAttempt stores one delivery attempt, once per delivery and
// attempt number (a retried write changes nothing). A successful attempt
// also marks the endpoint as answering (LastSuccessAt), which is what
// keeps it from being disabled.
func (s *Store) RecordWebhookAttempt(ctx context.Context, a models.WebhookAttempt, dispatch string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := webhookAttemptRow{
			DeliveryID: a.DeliveryID, Attempt: a.Attempt, EventID: a.EventID, EndpointID: a.EndpointID, Dispatch: dispatch,
			Resend: a.Resend, AttemptedAt: a.At.UTC(), Succeeded: a.Succeeded, ResponseStatus: a.ResponseStatus,
			Error: a.Error, DurationMs: a.Duration.Milliseconds(), NextRetryAt: utcPtr(a.NextRetryAt),
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Omit("event_type").Create(&row).Error; err != nil {
			return err
		}
		if !a.Succeeded {
			return nil
		}
		return tx.Model(&webhookEndpointRow{}).
			Where("id = ? AND (last_success_at IS NULL OR last_success_at < ?)", a.EndpointID, a.At.UTC()).
			Update("last_success_at", a.At.UTC()).Error
	})
	if err != nil {
		return fmt.Errorf("recording webhook attempt: %w", err)
	}
	return nil
}

// DisableWebhookEndpoint disables an endpoint that has not answered any
// delivery successfully since failingSince, with a reason the account
// reads. It reports whether it disabled the endpoint: one that succeeded
// since, or is already disabled or deleted, is left as it is.
func (s *Store) DisableWebhookEndpoint(ctx context.Context, id string, failingSince, at time.Time, reason string) (bool, error) {
	res := s.db.WithContext(ctx).Model(&webhookEndpointRow{}).
		Where("id = ? AND disabled_at IS NULL AND deleted_at IS NULL AND (last_success_at IS NULL OR last_success_at < ?)", id, failingSince.UTC()).
		Updates(map[string]any{"disabled_at": at.UTC(), "disabled_reason": reason})
	if res.Error != nil {
		return false, fmt.Errorf("disabling webhook endpoint: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// MaxAttemptsListed bounds one page of WebhookAttempts.
const MaxAttemptsListed = 100

// WebhookAttempts lists the delivery attempts to one of the account's
// endpoints (deleted ones included: their history stays readable by
// operators, not by the API, which answers not found for them), newest
// first, at most limit, only those of eventID when it is not empty.
func (s *Store) WebhookAttempts(ctx context.Context, endpointID, eventID string, limit int) ([]models.WebhookAttempt, error) {
	limit = min(max(limit, 1), MaxAttemptsListed)
	q := s.db.WithContext(ctx).Table("webhook_attempts AS a").Select("a.*, e.type AS event_type").
		Joins("JOIN webhook_events e ON e.id = a.event_id").Where("a.endpoint_id = ?", endpointID)
	if eventID != "" {
		q = q.Where("a.event_id = ?", eventID)
	}
	var rows []webhookAttemptRow
	if err := q.Order("a.attempted_at DESC, a.delivery_id, a.attempt DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("listing webhook attempts: %w", err)
	}
	out := make([]models.WebhookAttempt, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// transitionEvents are the facts a transition written over an order
// establishes: the order reaching a new status, and its received amount
// growing to partial or overpaid.
func transitionEvents(orderID string, received decimal.Decimal, t models.Transition, eff models.TransitionEffect) []eventSpec {
	var out []eventSpec
	if eff.Payment {
		if typ, key, ok := models.PaymentStatusEvent(orderID, received, t.AmountReceived, t.PaymentStatus); ok {
			out = append(out, eventSpec{typ: typ, key: key, at: t.At})
		}
	}
	if eff.Status != "" {
		out = append(out, eventSpec{typ: models.OrderEventType(eff.Status), key: orderID, at: t.At})
	}
	return out
}

// recordPaymentEvent records the event of a fact about a payment attached
// to order o (read with its id, account and mode), with the payment as
// the transaction sees it.
func (s *Store) recordPaymentEvent(tx *gorm.DB, now time.Time, o orderRow, paymentID string, typ models.EventType) error {
	var p paymentRow
	if err := tx.Where("id = ?", paymentID).Take(&p).Error; err != nil {
		return fmt.Errorf("reading payment %s for its event: %w", paymentID, err)
	}
	sp := eventSpec{typ: typ, key: paymentID, at: p.ReceivedAt,
		payment: &models.EventPayment{Payment: p.toModel(), Outcome: paymentOutcome(p.Status)}}
	if typ == models.EventPaymentLate && p.SignaledAt != nil {
		sp.at = *p.SignaledAt // when it was found late
	}
	_, err := s.recordEvents(tx, now, o.AccountID, models.Mode(o.Mode), o.ID, sp)
	return err
}

// paymentOutcome is what a payment's disposition means to its order.
func paymentOutcome(status string) models.PaymentEventOutcome {
	switch status {
	case PaymentMatched:
		return models.PaymentEventCredited
	case PaymentLate:
		return models.PaymentEventLate
	}
	return models.PaymentEventRefundDue
}

// recordRefundsCreated records the refund.created events of refunds just
// inserted in tx, all of one order. An unmatched payment's refund (no
// order, no account) has no event: no account's endpoint hears of it.
func (s *Store) recordRefundsCreated(tx *gorm.DB, now time.Time, created []models.Refund) error {
	if len(created) == 0 || created[0].OrderID == "" || created[0].AccountID == "" {
		return nil
	}
	first := created[0]
	specs := make([]eventSpec, len(created))
	for i := range created {
		r := created[i]
		specs[i] = eventSpec{typ: models.EventRefundCreated, key: r.ID, at: r.CreatedAt, refund: &r}
	}
	_, err := s.recordEvents(tx, now, first.AccountID, first.Mode, first.OrderID, specs...)
	return err
}

// recordRefundMove records the event of refund r (as written in tx) having
// moved from status from, if the move is one (models.RefundStatusEvent):
// refund.sent, refund.failed. A refund without an order has none.
func (s *Store) recordRefundMove(tx *gorm.DB, now time.Time, from models.RefundStatus, r models.Refund) error {
	if r.OrderID == "" || r.AccountID == "" {
		return nil
	}
	typ, key, at, ok := models.RefundStatusEvent(from, r)
	if !ok {
		return nil
	}
	_, err := s.recordEvents(tx, now, r.AccountID, r.Mode, r.OrderID, eventSpec{typ: typ, key: key, at: at, refund: &r})
	return err
}
