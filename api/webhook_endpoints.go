package api

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// WebhookStore is the persistence of webhook endpoints and their
// deliveries. NewServer takes it from Deps.Store when Deps.Endpoints is
// nil and the store has it (sqlstore.Store does).
type WebhookStore interface {
	CreateWebhookEndpoint(ctx context.Context, e models.WebhookEndpoint) (models.WebhookEndpoint, error)
	WebhookEndpoints(ctx context.Context, accountID string, mode models.Mode) ([]models.WebhookEndpoint, error)
	WebhookEndpoint(ctx context.Context, accountID string, mode models.Mode, id string) (models.WebhookEndpoint, error)
	DeleteWebhookEndpoint(ctx context.Context, accountID string, mode models.Mode, id string, at time.Time) (models.WebhookEndpoint, error)
	WebhookAttempts(ctx context.Context, endpointID, eventID string, limit int) ([]models.WebhookAttempt, error)
	WebhookEventForAccount(ctx context.Context, accountID string, mode models.Mode, id string) (models.Event, error)
}

// WebhookEvents hands recorded events to their delivery workflows.
type WebhookEvents interface {
	// DispatchOrderEvents starts the delivery of the order's events not
	// dispatched yet (the outbox sweep is the safety net).
	DispatchOrderEvents(ctx context.Context, orderID string) error
	// Resend starts a new delivery of ev to one endpoint and returns the
	// delivery's id.
	Resend(ctx context.Context, ev models.Event, endpointID string) (string, error)
}

// Resolver resolves host names, for the check of an endpoint's URL at
// registration (net.DefaultResolver has this method).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// maxDescription bounds an endpoint's description, in characters.
const maxDescription = 200

// registrationLookupTimeout bounds the DNS lookup of a new endpoint's host.
const registrationLookupTimeout = 2 * time.Second

type webhookEndpointRequest struct {
	URL           *string  `json:"url"`
	EnabledEvents []string `json:"enabled_events"`
	Description   *string  `json:"description"`
}

type webhookEndpointJSON struct {
	ID             string             `json:"id"`
	URL            string             `json:"url"`
	Description    string             `json:"description"`
	EnabledEvents  []models.EventType `json:"enabled_events"`
	Mode           models.Mode        `json:"mode"`
	Status         string             `json:"status"`
	DisabledAt     *string            `json:"disabled_at"`
	DisabledReason *string            `json:"disabled_reason"`
	LastSuccessAt  *string            `json:"last_success_at"`
	CreatedAt      string             `json:"created_at"`
	// Secret is shown once, in the answer to the creation.
	Secret string `json:"secret,omitempty"`
}

func optionalTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

func newWebhookEndpointJSON(e models.WebhookEndpoint) webhookEndpointJSON {
	out := webhookEndpointJSON{
		ID: e.ID, URL: e.URL, Description: e.Description, EnabledEvents: e.EnabledEvents, Mode: e.Mode,
		Status: "enabled", DisabledAt: optionalTime(e.DisabledAt), LastSuccessAt: optionalTime(e.LastSuccessAt),
		CreatedAt: timestamp(e.CreatedAt),
	}
	if e.DisabledAt != nil {
		out.Status = "disabled"
		out.DisabledReason = &e.DisabledReason
	}
	if out.EnabledEvents == nil {
		out.EnabledEvents = []models.EventType{}
	}
	return out
}

// urlPolicy is the URL policy of a key's mode on this deployment.
func (s *Server) urlPolicy(mode models.Mode) models.WebhookURLPolicy {
	return models.WebhookPolicyFor(mode, s.cfg.WebhookTestLoopback)
}

func (r webhookEndpointRequest) validate(policy models.WebhookURLPolicy) (models.WebhookEndpoint, error) {
	if r.URL == nil || *r.URL == "" {
		return models.WebhookEndpoint{}, required("url")
	}
	u, err := policy.CheckURL(strings.TrimSpace(*r.URL))
	if err != nil {
		return models.WebhookEndpoint{}, err
	}
	if r.EnabledEvents == nil {
		return models.WebhookEndpoint{}, required("enabled_events")
	}
	events, err := models.NormalizeEnabledEvents(r.EnabledEvents)
	if err != nil {
		return models.WebhookEndpoint{}, err
	}
	e := models.WebhookEndpoint{URL: u, EnabledEvents: events}
	if r.Description != nil {
		d := strings.TrimSpace(*r.Description)
		if utf8.RuneCountInString(d) > maxDescription {
			return models.WebhookEndpoint{}, invalid("description", "description must be at most %d characters", maxDescription)
		}
		if strings.IndexFunc(d, unicode.IsControl) >= 0 {
			return models.WebhookEndpoint{}, invalid("description", "description must not contain control characters")
		}
		e.Description = d
	}
	return e, nil
}

// checkResolved refuses a host name that resolves, right now, to an
// address the policy refuses: the address check at delivery is the one
// that protects (a name may resolve elsewhere later), this one tells the
// client at once. A name that does not resolve yet is accepted.
func (s *Server) checkResolved(ctx context.Context, policy models.WebhookURLPolicy, rawURL string) error {
	if s.deps.Resolver == nil {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return nil // an address: CheckURL judged it
	}
	ctx, cancel := context.WithTimeout(ctx, registrationLookupTimeout)
	defer cancel()
	addrs, err := s.deps.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := policy.CheckAddr(a); err != nil {
			var me *models.Error
			if errors.As(err, &me) {
				return models.FieldError(models.CodeInvalidWebhookURL, "url", "url's host resolves to an address webhooks are not delivered to: %s", strings.TrimPrefix(me.Message, "url must not point at "))
			}
			return err
		}
	}
	return nil
}

// createWebhookEndpoint is POST /v1/webhook_endpoints.
func (s *Server) createWebhookEndpoint(c *gin.Context) {
	ctx := c.Request.Context()
	key := mustKey(c)
	var req webhookEndpointRequest
	if err := decodeJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	policy := s.urlPolicy(key.Mode)
	e, err := req.validate(policy)
	if err != nil {
		abort(c, err)
		return
	}
	if err := s.checkResolved(ctx, policy, e.URL); err != nil {
		abort(c, err)
		return
	}
	e.AccountID, e.Mode, e.CreatedAt = key.AccountID, key.Mode, s.deps.Now().UTC().Truncate(time.Second)
	if e.Secret, err = models.NewWebhookSecret(rand.Reader); err != nil {
		abort(c, err)
		return
	}
	created, err := s.deps.Store.CreateWebhookEndpoint(ctx, e)
	if err != nil {
		abort(c, err)
		return
	}
	loggerFrom(c).InfoContext(ctx, "webhook endpoint created", slog.String("endpoint_id", created.ID), slog.String("account_id", key.AccountID))
	out := newWebhookEndpointJSON(created)
	out.Secret = created.Secret
	render(c, http.StatusCreated, gin.H{"webhook_endpoint": out})
}

// listWebhookEndpoints is GET /v1/webhook_endpoints.
func (s *Server) listWebhookEndpoints(c *gin.Context) {
	key := mustKey(c)
	es, err := s.deps.Store.WebhookEndpoints(c.Request.Context(), key.AccountID, key.Mode)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"webhook_endpoints": each(es, newWebhookEndpointJSON)})
}

// endpointParam reads and looks up the {id} of a path: one of the key's
// endpoints, or webhook_endpoint_not_found (an id of another shape is
// answered without a query).
func (s *Server) endpointParam(c *gin.Context) (models.WebhookEndpoint, bool) {
	key := mustKey(c)
	id := c.Param("id")
	if !models.ValidID("we", id) {
		abort(c, models.ErrWebhookEndpointNotFound)
		return models.WebhookEndpoint{}, false
	}
	e, err := s.deps.Store.WebhookEndpoint(c.Request.Context(), key.AccountID, key.Mode, id)
	if err != nil {
		abort(c, err)
		return models.WebhookEndpoint{}, false
	}
	return e, true
}

// getWebhookEndpoint is GET /v1/webhook_endpoints/{id}.
func (s *Server) getWebhookEndpoint(c *gin.Context) {
	e, ok := s.endpointParam(c)
	if !ok {
		return
	}
	render(c, http.StatusOK, gin.H{"webhook_endpoint": newWebhookEndpointJSON(e)})
}

// deleteWebhookEndpoint is DELETE /v1/webhook_endpoints/{id}: 204, and
// nothing is delivered to the endpoint any more (deliveries in progress
// stop at their next attempt).
func (s *Server) deleteWebhookEndpoint(c *gin.Context) {
	key := mustKey(c)
	e, ok := s.endpointParam(c)
	if !ok {
		return
	}
	if _, err := s.deps.Store.DeleteWebhookEndpoint(c.Request.Context(), key.AccountID, key.Mode, e.ID, s.deps.Now()); err != nil {
		abort(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type webhookAttemptJSON struct {
	DeliveryID     string           `json:"delivery_id"`
	EventID        string           `json:"event_id"`
	EventType      models.EventType `json:"event_type"`
	Attempt        int              `json:"attempt"`
	Resend         bool             `json:"resend"`
	AttemptedAt    string           `json:"attempted_at"`
	Status         string           `json:"status"`
	ResponseStatus *int             `json:"response_status"`
	Error          *string          `json:"error"`
	DurationMS     int64            `json:"duration_ms"`
	NextRetryAt    *string          `json:"next_retry_at"`
}

func newWebhookAttemptJSON(a models.WebhookAttempt) webhookAttemptJSON {
	out := webhookAttemptJSON{
		DeliveryID: a.DeliveryID, EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, Resend: a.Resend,
		AttemptedAt: timestamp(a.At), Status: "failed", Error: optional(a.Error),
		DurationMS: a.Duration.Milliseconds(), NextRetryAt: optionalTime(a.NextRetryAt),
	}
	if a.Succeeded {
		out.Status = "succeeded"
	}
	if a.ResponseStatus != 0 {
		st := a.ResponseStatus
		out.ResponseStatus = &st
	}
	return out
}

// Bounds of limit on GET /v1/webhook_endpoints/{id}/deliveries.
const (
	defaultAttemptsListed = 20
	maxAttemptsListed     = 100
)

// listWebhookDeliveries is GET /v1/webhook_endpoints/{id}/deliveries: the
// endpoint's delivery attempts, newest first (limit, 1 to 100, default
// 20), those of one event with event_id.
func (s *Server) listWebhookDeliveries(c *gin.Context) {
	limit := defaultAttemptsListed
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAttemptsListed {
			abort(c, invalid("limit", "limit must be an integer from 1 to %d", maxAttemptsListed))
			return
		}
		limit = n
	}
	eventID, filtered := c.GetQuery("event_id")
	if filtered && !models.ValidID("evt", eventID) {
		abort(c, invalid("event_id", "event_id must be an event id (evt_...)"))
		return
	}
	e, ok := s.endpointParam(c)
	if !ok {
		return
	}
	as, err := s.deps.Store.WebhookAttempts(c.Request.Context(), e.ID, eventID, limit)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"deliveries": each(as, newWebhookAttemptJSON)})
}

// resendWebhookEvent is
// POST /v1/webhook_endpoints/{id}/deliveries/{event_id}/resend: a new
// delivery of one of the account's events to the endpoint, with its own
// attempts and retries (202, its delivery id). A disabled endpoint is
// refused (webhook_endpoint_disabled).
func (s *Server) resendWebhookEvent(c *gin.Context) {
	ctx := c.Request.Context()
	key := mustKey(c)
	e, ok := s.endpointParam(c)
	if !ok {
		return
	}
	if e.DisabledAt != nil {
		abort(c, models.Errorf(models.CodeWebhookEndpointDisabled, "The webhook endpoint is disabled (%s); create a new one", e.DisabledReason))
		return
	}
	eventID := c.Param("event_id")
	if !models.ValidID("evt", eventID) {
		abort(c, models.ErrEventNotFound)
		return
	}
	ev, err := s.deps.Store.WebhookEventForAccount(ctx, key.AccountID, key.Mode, eventID)
	if err != nil {
		abort(c, err)
		return
	}
	if s.deps.Events == nil {
		abort(c, models.NewError(models.CodeUnavailable))
		return
	}
	id, err := s.deps.Events.Resend(ctx, ev, e.ID)
	if err != nil {
		loggerFrom(c).ErrorContext(ctx, "starting a webhook resend", slog.String("event_id", ev.ID), slog.String("endpoint_id", e.ID), slog.Any("error", err))
		abort(c, models.NewError(models.CodeUnavailable))
		return
	}
	render(c, http.StatusAccepted, gin.H{"delivery": gin.H{"id": id, "event_id": ev.ID, "endpoint_id": e.ID, "resend": true}})
}
