package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// EventStore reads the account's events for the events API, their bodies
// as a delivery at now would send them.
type EventStore interface {
	// ListEvents returns a page and whether more follow in its direction;
	// an unknown cursor is models.ErrEventNotFound.
	ListEvents(ctx context.Context, q models.EventListQuery, now time.Time) ([]models.Event, bool, error)
	EventForAccount(ctx context.Context, accountID string, mode models.Mode, id string, now time.Time) (models.Event, error)
}

// eventListJSON is GET /v1/events' answer: each event is its webhook
// body, byte for byte.
type eventListJSON = listJSON[json.RawMessage]

// listEvents is GET /v1/events: the key's account's events in the key's
// mode, newest first in the order they were recorded, a page at a time
// (docs/webhooks.md, "The events API").
func (s *Server) listEvents(c *gin.Context) {
	ctx := c.Request.Context()
	key := mustKey(c)
	q, order, err := parseEventList(c.Request.URL.Query())
	if err != nil {
		abort(c, err)
		return
	}
	q.AccountID, q.Mode = key.AccountID, key.Mode
	if order != "" {
		o, err := s.deps.Store.OrderForAccount(ctx, key.AccountID, key.Mode, order)
		if errors.Is(err, models.ErrOrderNotFound) {
			abort(c, invalid("order", "order must be the id or number of one of your orders (in this mode)"))
			return
		}
		if err != nil {
			abort(c, err)
			return
		}
		q.OrderID = o.ID
	}
	evs, more, err := s.deps.Store.ListEvents(ctx, q, s.deps.Now())
	if err != nil {
		cursor := "starting_after"
		if q.EndingBefore != "" {
			cursor = "ending_before"
		}
		abort(c, listError(err, models.ErrEventNotFound, cursor, "events"))
		return
	}
	payload := func(ev models.Event) json.RawMessage { return ev.Payload }
	render(c, http.StatusOK, eventListJSON{Data: each(evs, payload), HasMore: more})
}

// getEvent is GET /v1/events/{id}: the event's body exactly as a webhook
// delivery now would send it, so its signature checks the same way.
func (s *Server) getEvent(c *gin.Context) {
	key := mustKey(c)
	id := c.Param("id")
	if !models.ValidID("evt", id) {
		abort(c, models.ErrEventNotFound)
		return
	}
	ev, err := s.deps.Store.EventForAccount(c.Request.Context(), key.AccountID, key.Mode, id, s.deps.Now())
	if err != nil {
		abort(c, err)
		return
	}
	// The body and a newline, as every JSON answer ends.
	c.Data(http.StatusOK, jsonContentType, append(ev.Payload, '\n'))
}

// parseEventList reads and checks the events list's query parameters and
// returns the order filter as given (an id or number, checked by the
// caller against the account's orders); errors name the parameter.
func parseEventList(values map[string][]string) (models.EventListQuery, string, error) {
	page, err := parseListPage(values, []string{"type", "order", "ending_before"}, "evt", "an event")
	q := models.EventListQuery{Limit: page.limit, CreatedGTE: page.createdGTE, CreatedLTE: page.createdLTE, StartingAfter: page.startingAfter}
	if err != nil {
		return q, "", err
	}
	if v, ok := page.get("type"); ok {
		for _, name := range strings.Split(v, ",") {
			t := models.EventType(strings.TrimSpace(name))
			if !t.Valid() {
				return q, "", invalid("type", "type must be one or more event types separated by commas (%s)", strings.Join(models.EventTypeNames(), ", "))
			}
			q.Types = append(q.Types, t)
		}
	}
	var order string
	if v, ok := page.get("order"); ok {
		ref, ok := orderRef(v)
		if !ok {
			return q, "", invalid("order", "order must be an order id (ord_…) or number")
		}
		order = ref
	}
	if v, ok := page.get("ending_before"); ok {
		if q.StartingAfter != "" {
			return q, "", invalid("ending_before", "give starting_after or ending_before, not both")
		}
		if !models.ValidID("evt", v) {
			return q, "", invalid("ending_before", "ending_before must be an event id (evt_…)")
		}
		q.EndingBefore = v
	}
	return q, order, nil
}
