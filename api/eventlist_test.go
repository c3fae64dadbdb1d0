package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

type eventListView = listView[json.RawMessage]

func (e *ordersEnv) events(t *testing.T, key string, params url.Values) eventListView {
	t.Helper()
	return getList[json.RawMessage](t, e, key, "/v1/events", params)
}

// eventIDs reads the ids of a page's events.
func eventIDs(t *testing.T, v eventListView) []string {
	t.Helper()
	out := make([]string, len(v.Data))
	for i, raw := range v.Data {
		var ev struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(raw, &ev))
		out[i] = ev.ID
	}
	return out
}

// GET /v1/events lists every fact about the account's orders, subscribed
// to or not, newest first in recording order, each the body its webhook
// delivery sends byte for byte; GET /v1/events/{id} returns that body.
func TestEventsAPI(t *testing.T) {
	e, _ := newWebhookEnv(t, "sqlite")
	ctx := t.Context()
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	other, _ := e.accountKey(t, "rival", models.ModeTest, models.TierFree)
	ep, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/acme", "order.cancelled"))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	var orders []createdOrder
	for range 3 {
		orders = append(orders, e.newOrder(t, key))
	}
	require.Equal(t, http.StatusOK, e.cancel(t, key, orders[1].ID, "").status)
	theirs := e.newOrder(t, other)
	written := []string{ // newest first
		models.EventID(models.EventOrderCancelled, orders[1].ID),
		models.EventID(models.EventOrderCreated, orders[2].ID),
		models.EventID(models.EventOrderCreated, orders[1].ID),
		models.EventID(models.EventOrderCreated, orders[0].ID),
	}

	all := e.events(t, key, url.Values{})
	assert.Equal(t, written, eventIDs(t, all), "every fact, subscribed to or not")
	assert.False(t, all.HasMore)
	for i, id := range written {
		one := e.get(t, "/v1/events/"+id, key)
		require.Equal(t, http.StatusOK, one.status, string(one.body))
		assert.Equal(t, string(all.Data[i])+"\n", string(one.body), "the listed body is the retrieved one")
	}
	// The subscribed event's body is the delivery's, byte for byte.
	delivered, _, err := e.st.WebhookDelivery(ctx, written[0], ep.ID, e.clock.Now())
	require.NoError(t, err)
	assert.Equal(t, string(delivered.Payload), string(all.Data[0]))
	var body struct {
		Type string `json:"type"`
		Mode string `json:"mode"`
		Data struct {
			Order struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"order"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(all.Data[0], &body))
	assert.Equal(t, "order.cancelled", body.Type)
	assert.Equal(t, "test", body.Mode)
	assert.Equal(t, orders[1].ID, body.Data.Order.ID)
	assert.Equal(t, "cancelled", body.Data.Order.Status)

	// Pages, both ways.
	page := e.events(t, key, url.Values{"limit": {"3"}})
	assert.Equal(t, written[:3], eventIDs(t, page))
	assert.True(t, page.HasMore)
	page = e.events(t, key, url.Values{"limit": {"3"}, "starting_after": {written[2]}})
	assert.Equal(t, written[3:], eventIDs(t, page))
	assert.False(t, page.HasMore)
	page = e.events(t, key, url.Values{"limit": {"2"}, "ending_before": {written[3]}})
	assert.Equal(t, written[1:3], eventIDs(t, page), "the two recorded just after it")
	assert.True(t, page.HasMore)
	page = e.events(t, key, url.Values{"ending_before": {written[0]}})
	assert.Empty(t, page.Data, "caught up")
	assert.False(t, page.HasMore)

	// Filters.
	page = e.events(t, key, url.Values{"type": {"order.cancelled"}})
	assert.Equal(t, written[:1], eventIDs(t, page))
	page = e.events(t, key, url.Values{"type": {"order.cancelled,order.created"}, "order": {orders[1].Number}})
	assert.Equal(t, []string{written[0], written[2]}, eventIDs(t, page), "by type and order number")
	page = e.events(t, key, url.Values{"order": {orders[0].ID}})
	assert.Equal(t, written[3:], eventIDs(t, page), "by order id")
	page = e.events(t, key, url.Values{"created[gte]": {"2099-01-01T00:00:00Z"}})
	assert.Empty(t, page.Data)

	// Another account's and mode's events are not there.
	assert.Equal(t, []string{models.EventID(models.EventOrderCreated, theirs.ID)}, eventIDs(t, e.events(t, other, url.Values{})))
	live, _ := e.accountKey(t, "acme-live", models.ModeLive, models.TierPro)
	assert.Empty(t, e.events(t, live, url.Values{}).Data)
	requireError(t, e.get(t, "/v1/events/"+written[0], other), http.StatusNotFound, models.CodeEventNotFound, "")
	requireError(t, e.get(t, "/v1/events/evt_000000000000000000000000", key), http.StatusNotFound, models.CodeEventNotFound, "")
	requireError(t, e.get(t, "/v1/events/nope", key), http.StatusNotFound, models.CodeEventNotFound, "")
}

// Each bad query is a 400 naming its parameter.
func TestEventsAPIRefusesBadQueries(t *testing.T) {
	e, _ := newWebhookEnv(t, "sqlite")
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	other, _ := e.accountKey(t, "rival", models.ModeTest, models.TierFree)
	theirs := e.newOrder(t, other)
	theirEvent := models.EventID(models.EventOrderCreated, theirs.ID)
	mine := e.newOrder(t, key)
	mineEvent := models.EventID(models.EventOrderCreated, mine.ID)
	for _, c := range []struct {
		query url.Values
		field string
	}{
		{url.Values{"type": {"order.lost"}}, "type"},
		{url.Values{"type": {"order.paid,"}}, "type"},
		{url.Values{"type": {"*"}}, "type"},
		{url.Values{"order": {"nope"}}, "order"},
		{url.Values{"order": {theirs.ID}}, "order"},
		{url.Values{"order": {theirs.Number}}, "order"},
		{url.Values{"starting_after": {"ord_1"}}, "starting_after"},
		{url.Values{"starting_after": {theirEvent}}, "starting_after"},
		{url.Values{"ending_before": {theirEvent}}, "ending_before"},
		{url.Values{"ending_before": {"evt_x"}}, "ending_before"},
		{url.Values{"starting_after": {mineEvent}, "ending_before": {mineEvent}}, "ending_before"},
		{url.Values{"limit": {"101"}}, "limit"},
		{url.Values{"created[gte]": {"yesterday"}}, "created[gte]"},
		{url.Values{"status": {"paid"}}, "status"},
	} {
		t.Run(c.query.Encode(), func(t *testing.T) {
			requireError(t, e.get(t, "/v1/events?"+c.query.Encode(), key), http.StatusBadRequest, models.CodeInvalidRequest, c.field)
		})
	}
}
