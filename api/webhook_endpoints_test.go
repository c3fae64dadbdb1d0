package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

// recordingEvents is the dispatcher: it records what it was asked to do.
type recordingEvents struct {
	mu         sync.Mutex
	dispatched []string // order ids
	resends    []string // "<event id> <endpoint id>"
	err        error
}

// eventView is a webhook event's body with its data of type D.
type eventView[D any] struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Mode      string `json:"mode"`
	Data      D      `json:"data"`
}

func (r *recordingEvents) DispatchOrderEvents(_ context.Context, orderID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dispatched = append(r.dispatched, orderID)
	return r.err
}

func (r *recordingEvents) Resend(_ context.Context, ev models.Event, endpointID string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.resends = append(r.resends, ev.ID+" "+endpointID)
	return models.DeliveryID("resend-test-"+fmt.Sprint(len(r.resends)), endpointID), nil
}

func (r *recordingEvents) calls() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dispatched...), append([]string(nil), r.resends...)
}

// fakeResolver answers from a table; a name not in it does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func withWebhookEvents(ev *recordingEvents, loopback bool, res api.Resolver) ordersOption {
	return func(s *ordersSetup) {
		cfg, d := &s.cfg, &s.deps
		d.Events = ev
		d.Resolver = res
		cfg.WebhookTestLoopback = loopback
	}
}

// newWebhookEnv is an orders server with webhooks wired: a recording
// dispatcher, a resolver, test keys allowed on loopback, and the store
// writing event bodies with the server's renderer.
func newWebhookEnv(t *testing.T, dialect string) (*ordersEnv, *recordingEvents) {
	t.Helper()
	ev := &recordingEvents{}
	e := newOrdersEnv(t, dialect, withWebhookEvents(ev, true, fakeResolver{
		"hooks.example.com":   {"93.184.216.34"},
		"rebind.example.com":  {"93.184.216.34", "10.0.0.7"},
		"metadata.example.io": {"169.254.169.254"},
	}))
	e.st.SetEventRenderer(e.srv.EventRenderer())
	return e, ev
}

type endpointBody struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	EnabledEvents  []string `json:"enabled_events"`
	Mode           string   `json:"mode"`
	Status         string   `json:"status"`
	DisabledAt     *string  `json:"disabled_at"`
	DisabledReason *string  `json:"disabled_reason"`
	LastSuccessAt  *string  `json:"last_success_at"`
	CreatedAt      string   `json:"created_at"`
	Secret         *string  `json:"secret"`
}

func createEndpoint(t *testing.T, e *ordersEnv, key string, body any) (endpointBody, response) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	r := e.post(t, "/v1/webhook_endpoints", key, string(b))
	if r.status != http.StatusCreated {
		return endpointBody{}, r
	}
	var out struct {
		Endpoint endpointBody `json:"webhook_endpoint"`
	}
	decodeStrict(t, r.body, &out)
	return out.Endpoint, r
}

func endpointReq(url string, events ...string) map[string]any {
	return map[string]any{"url": url, "enabled_events": events}
}

func TestWebhookEndpointsNeedProOrEnterprise(t *testing.T) {
	e, _ := newWebhookEnv(t, "sqlite")
	free, _ := e.accountKey(t, "small", models.ModeTest, models.TierFree)
	for _, r := range []request{
		{method: http.MethodPost, path: "/v1/webhook_endpoints", body: `{"url":"https://hooks.example.com/x","enabled_events":["*"]}`},
		{method: http.MethodGet, path: "/v1/webhook_endpoints"},
		{method: http.MethodGet, path: "/v1/webhook_endpoints/we_000000000000000000000000"},
		{method: http.MethodDelete, path: "/v1/webhook_endpoints/we_000000000000000000000000"},
		{method: http.MethodGet, path: "/v1/webhook_endpoints/we_000000000000000000000000/deliveries"},
		{method: http.MethodPost, path: "/v1/webhook_endpoints/we_000000000000000000000000/deliveries/evt_000000000000000000000000/resend"},
	} {
		r.auth = "Bearer " + free
		requireError(t, e.send(t, r), http.StatusForbidden, models.CodePlanRequired, "")
	}
	ent := e.enterpriseKey(t, "big", 1000)
	_, r := createEndpoint(t, e, ent, endpointReq("https://hooks.example.com/x", "*"))
	assert.Equal(t, http.StatusCreated, r.status, "Enterprise may: %s", r.body)
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, _ := newWebhookEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)

		ep, r := createEndpoint(t, e, key, map[string]any{
			"url": "https://Hooks.Example.com/memocart?src=1", "enabled_events": []string{"order.paid", "order.created", "order.paid"},
			"description": "  orders to the ERP ",
		})
		require.Equalf(t, http.StatusCreated, r.status, "%s", r.body)
		assert.True(t, models.ValidID("we", ep.ID), ep.ID)
		assert.Equal(t, "https://hooks.example.com/memocart?src=1", ep.URL)
		assert.Equal(t, []string{"order.created", "order.paid"}, ep.EnabledEvents, "deduplicated, in documentation order")
		assert.Equal(t, "orders to the ERP", ep.Description)
		assert.Equal(t, "test", ep.Mode)
		assert.Equal(t, "enabled", ep.Status)
		assert.Nil(t, ep.DisabledReason)
		assert.Equal(t, e.clock.Now().UTC().Format(time.RFC3339), ep.CreatedAt)
		require.NotNil(t, ep.Secret, "the secret is shown at creation")
		assert.Regexp(t, `^whsec_[0-9A-Za-z]{32}$`, *ep.Secret)

		// Never again.
		r = e.get(t, "/v1/webhook_endpoints/"+ep.ID, key)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.NotContains(t, string(r.body), *ep.Secret)
		assert.NotContains(t, string(r.body), `"secret"`)
		var got struct {
			Endpoint endpointBody `json:"webhook_endpoint"`
		}
		decodeStrict(t, r.body, &got)
		assert.Equal(t, ep.ID, got.Endpoint.ID)
		assert.Equal(t, ep.URL, got.Endpoint.URL)

		second, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/all", "*"))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		assert.Equal(t, []string{"*"}, second.EnabledEvents)
		assert.NotEqual(t, *ep.Secret, *second.Secret, "each endpoint its own secret")
		r = e.get(t, "/v1/webhook_endpoints", key)
		require.Equal(t, http.StatusOK, r.status)
		assert.NotContains(t, string(r.body), `"secret"`)
		var list struct {
			Endpoints []endpointBody `json:"webhook_endpoints"`
		}
		decodeStrict(t, r.body, &list)
		require.Len(t, list.Endpoints, 2)

		// Another account, or the other mode, sees none of them.
		for name, k := range map[string]string{"other account": other, "other mode": live} {
			r := e.get(t, "/v1/webhook_endpoints", k)
			require.Equal(t, http.StatusOK, r.status)
			assert.JSONEq(t, `{"webhook_endpoints":[]}`, string(r.body), name)
			requireError(t, e.get(t, "/v1/webhook_endpoints/"+ep.ID, k), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")
			requireError(t, e.send(t, request{method: http.MethodDelete, path: "/v1/webhook_endpoints/" + ep.ID, auth: "Bearer " + k}), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")
			requireError(t, e.get(t, "/v1/webhook_endpoints/"+ep.ID+"/deliveries", k), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")
		}
		requireError(t, e.get(t, "/v1/webhook_endpoints/not-an-id", key), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")

		r = e.send(t, request{method: http.MethodDelete, path: "/v1/webhook_endpoints/" + ep.ID, auth: "Bearer " + key})
		require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
		assert.Empty(t, r.body)
		requireError(t, e.get(t, "/v1/webhook_endpoints/"+ep.ID, key), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")
		requireError(t, e.send(t, request{method: http.MethodDelete, path: "/v1/webhook_endpoints/" + ep.ID, auth: "Bearer " + key}), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "")
		r = e.get(t, "/v1/webhook_endpoints", key)
		decodeStrict(t, r.body, &list)
		require.Len(t, list.Endpoints, 1)
		assert.Equal(t, second.ID, list.Endpoints[0].ID)
	})
}

func TestWebhookEndpointValidation(t *testing.T) {
	e, _ := newWebhookEnv(t, "sqlite")
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
	cases := []struct {
		name   string
		key    string
		body   string
		status int
		code   models.Code
		field  string
	}{
		{"no url", key, `{"enabled_events":["*"]}`, 400, models.CodeInvalidRequest, "url"},
		{"empty url", key, `{"url":"","enabled_events":["*"]}`, 400, models.CodeInvalidRequest, "url"},
		{"url not a string", key, `{"url":5,"enabled_events":["*"]}`, 400, models.CodeInvalidRequest, "url"},
		{"no events", key, `{"url":"https://hooks.example.com/x"}`, 400, models.CodeInvalidRequest, "enabled_events"},
		{"empty events", key, `{"url":"https://hooks.example.com/x","enabled_events":[]}`, 400, models.CodeInvalidRequest, "enabled_events"},
		{"unknown event", key, `{"url":"https://hooks.example.com/x","enabled_events":["order.lost"]}`, 400, models.CodeInvalidRequest, "enabled_events"},
		{"events not strings", key, `{"url":"https://hooks.example.com/x","enabled_events":[1]}`, 400, models.CodeInvalidRequest, anyField},
		{"unknown field", key, `{"url":"https://hooks.example.com/x","enabled_events":["*"],"secret":"mine"}`, 400, models.CodeInvalidRequest, "secret"},
		{"long description", key, `{"url":"https://hooks.example.com/x","enabled_events":["*"],"description":"` + strings.Repeat("d", 201) + `"}`, 400, models.CodeInvalidRequest, "description"},
		{"control in description", key, `{"url":"https://hooks.example.com/x","enabled_events":["*"],"description":"a\u0007b"}`, 400, models.CodeInvalidRequest, "description"},
		{"live: http", live, `{"url":"http://hooks.example.com/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"live: 127.0.0.1", live, `{"url":"https://127.0.0.1/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"live: localhost", live, `{"url":"https://localhost:8443/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"live: decimal loopback", live, `{"url":"https://2130706433/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"live: mapped loopback", live, `{"url":"https://[::ffff:127.0.0.1]/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"test: private", key, `{"url":"http://192.168.1.10/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"test: metadata", key, `{"url":"http://169.254.169.254/latest","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"userinfo", key, `{"url":"https://hooks.example.com@10.0.0.1/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"resolves to a private address", key, `{"url":"https://rebind.example.com/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
		{"resolves to metadata", live, `{"url":"https://metadata.example.io/x","enabled_events":["*"]}`, 400, models.CodeInvalidWebhookURL, "url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, "/v1/webhook_endpoints", tc.key, tc.body)
			d := requireError(t, r, tc.status, tc.code, tc.field)
			assert.NotContains(t, d.Message, "\n")
		})
	}
	t.Run("accepted", func(t *testing.T) {
		for _, tc := range []struct{ key, url string }{
			{key, "http://127.0.0.1:9999/hook"},        // a test key on a developer's machine
			{key, "http://localhost:9999/hook"},        // by name
			{key, "https://not-resolving.example.net"}, // resolution failing is no reason to refuse
			{live, "https://hooks.example.com/x"},
		} {
			_, r := createEndpoint(t, e, tc.key, endpointReq(tc.url, "*"))
			assert.Equalf(t, http.StatusCreated, r.status, "%s: %s", tc.url, r.body)
		}
	})
	t.Run("loopback off for test keys", func(t *testing.T) {
		strict := newOrdersEnv(t, "sqlite", withWebhookEvents(&recordingEvents{}, false, nil))
		k, _ := strict.accountKey(t, "acme", models.ModeTest, models.TierPro)
		requireError(t, strict.post(t, "/v1/webhook_endpoints", k, `{"url":"http://127.0.0.1:9999/hook","enabled_events":["*"]}`), 400, models.CodeInvalidWebhookURL, "url")
	})
	t.Run("limit", func(t *testing.T) {
		k, _ := e.accountKey(t, "busy", models.ModeTest, models.TierPro)
		for i := range models.MaxWebhookEndpoints {
			_, r := createEndpoint(t, e, k, endpointReq(fmt.Sprintf("https://hooks.example.com/%d", i), "*"))
			require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		}
		requireError(t, e.post(t, "/v1/webhook_endpoints", k, `{"url":"https://hooks.example.com/17","enabled_events":["*"]}`), http.StatusConflict, models.CodeWebhookEndpointLimit, "")
	})
}

// TestWebhookEventBodyIsTheOrderAsGETReturnsIt creates an order through the
// API with an endpoint listening: the event recorded with the order holds
// exactly what GET /v1/orders/{id} answers, and is a WebhookEvent as the
// OpenAPI document describes it.
// An order whose creation recorded no event (no endpoint, or none
// subscribed to order.created) is not looked up for events to dispatch.
func TestOrderWithoutEventsIsNotDispatched(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, ev := newWebhookEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		decodeCreated(t, e.postOrder(t, key, orderBody(cartID), nil))
		_, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/x", "order.paid"))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		cartID, _ = e.newCart(t, key)
		decodeCreated(t, e.postOrder(t, key, orderBody(cartID), nil))
		dispatched, _ := ev.calls()
		assert.Empty(t, dispatched, "neither order recorded an event")

		_, r = createEndpoint(t, e, key, endpointReq("https://hooks.example.com/y", "order.created"))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		cartID, _ = e.newCart(t, key)
		o := decodeCreated(t, e.postOrder(t, key, orderBody(cartID), nil))
		dispatched, _ = ev.calls()
		assert.Equal(t, []string{o.ID}, dispatched, "an order.created subscriber: the event is dispatched")
	})
}

func TestWebhookEventBodyIsTheOrderAsGETReturnsIt(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, ev := newWebhookEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		_, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/x", "order.created"))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		o := e.newOrder(t, key)
		dispatched, _ := ev.calls()
		assert.Equal(t, []string{o.ID}, dispatched, "the new order's events are handed to their workflows")

		evID := models.EventID(models.EventOrderCreated, o.ID)
		stored, err := e.st.WebhookEventForAccount(t.Context(), accountID, models.ModeTest, evID)
		require.NoError(t, err)
		var body eventView[struct {
			Order json.RawMessage `json:"order"`
		}]
		decodeStrict(t, stored.Payload, &body)
		assert.Equal(t, evID, body.ID)
		assert.Equal(t, "order.created", body.Type)
		assert.Equal(t, o.CreatedAt, body.CreatedAt)
		assert.Equal(t, "test", body.Mode)
		g := e.get(t, "/v1/orders/"+o.ID, key)
		require.Equal(t, http.StatusOK, g.status)
		var get struct {
			Order map[string]json.RawMessage `json:"order"`
		}
		decodeStrict(t, g.body, &get)
		assert.JSONEq(t, "[]", string(get.Order["refunds"]), "GET of one order has its refunds, none here")
		delete(get.Order, "refunds") // events leave them out, as lists do
		getOrder, err := json.Marshal(get.Order)
		require.NoError(t, err)
		assert.JSONEq(t, string(getOrder), string(body.Data.Order), "the event's order is GET's order, without its refunds")

		v, err := openAPI()
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(stored.Payload, &doc))
		schema := v.doc.Components.Schemas["WebhookEvent"].Value
		require.NoError(t, schema.VisitJSON(doc, openapi3.EnableJSONSchema2020()), "the body is a WebhookEvent")
		var broken map[string]any
		require.NoError(t, json.Unmarshal(stored.Payload, &broken))
		broken["data"].(map[string]any)["order"].(map[string]any)["surprise"] = 1
		assert.Error(t, schema.VisitJSON(broken, openapi3.EnableJSONSchema2020()), "control: the schema has teeth")

		// A failing dispatcher does not fail the order: the sweep retries.
		ev.mu.Lock()
		ev.err = errors.New("temporal down")
		ev.mu.Unlock()
		cart2, _ := e.newCart(t, key)
		assert.Equal(t, http.StatusCreated, e.postOrder(t, key, orderBody(cart2), nil).status)
	})
}

func TestWebhookDeliveriesAndResend(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, ev := newWebhookEnv(t, dialect)
		ctx := t.Context()
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		ep, _ := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/x", "*"))
		otherEp, _ := createEndpoint(t, e, other, endpointReq("https://hooks.example.com/y", "*"))
		o := e.newOrder(t, key)
		evID := models.EventID(models.EventOrderCreated, o.ID)

		r := e.get(t, "/v1/webhook_endpoints/"+ep.ID+"/deliveries", key)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.JSONEq(t, `{"deliveries":[]}`, string(r.body))

		dlv := models.DeliveryID("webhook-event-"+evID, ep.ID)
		at := e.clock.Now().UTC().Truncate(time.Second)
		next := at.Add(30 * time.Second)
		require.NoError(t, e.st.RecordWebhookAttempt(ctx, models.WebhookAttempt{DeliveryID: dlv, EventID: evID, EndpointID: ep.ID, Attempt: 1, At: at, ResponseStatus: 503, Error: "endpoint answered HTTP 503", Duration: 1500 * time.Millisecond, NextRetryAt: &next}, "webhook-event-"+evID))
		require.NoError(t, e.st.RecordWebhookAttempt(ctx, models.WebhookAttempt{DeliveryID: dlv, EventID: evID, EndpointID: ep.ID, Attempt: 2, At: next, Succeeded: true, ResponseStatus: 200, Duration: 40 * time.Millisecond}, "webhook-event-"+evID))

		r = e.get(t, "/v1/webhook_endpoints/"+ep.ID+"/deliveries?event_id="+evID+"&limit=10", key)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		want := fmt.Sprintf(`{"deliveries":[
			{"delivery_id":%q,"event_id":%q,"event_type":"order.created","attempt":2,"resend":false,"attempted_at":%q,"status":"succeeded","response_status":200,"error":null,"duration_ms":40,"next_retry_at":null},
			{"delivery_id":%q,"event_id":%q,"event_type":"order.created","attempt":1,"resend":false,"attempted_at":%q,"status":"failed","response_status":503,"error":"endpoint answered HTTP 503","duration_ms":1500,"next_retry_at":%q}]}`,
			dlv, evID, next.Format(time.RFC3339), dlv, evID, at.Format(time.RFC3339), next.Format(time.RFC3339))
		assert.JSONEq(t, want, string(r.body))
		r = e.get(t, "/v1/webhook_endpoints/"+ep.ID+"/deliveries?limit=1", key)
		require.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, 1, strings.Count(string(r.body), `"delivery_id"`))
		r = e.get(t, "/v1/webhook_endpoints/"+ep.ID, key)
		assert.Contains(t, string(r.body), `"last_success_at":"`+next.Format(time.RFC3339)+`"`)
		for _, q := range []string{"limit=0", "limit=101", "limit=x", "event_id=nope"} {
			requireError(t, e.get(t, "/v1/webhook_endpoints/"+ep.ID+"/deliveries?"+q, key), http.StatusBadRequest, models.CodeInvalidRequest, anyField)
		}

		resend := func(k, endpointID, eventID string) response {
			return e.send(t, request{method: http.MethodPost, path: "/v1/webhook_endpoints/" + endpointID + "/deliveries/" + eventID + "/resend", auth: "Bearer " + k})
		}
		r = resend(key, ep.ID, evID)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		var started struct {
			Delivery struct {
				ID         string `json:"id"`
				EventID    string `json:"event_id"`
				EndpointID string `json:"endpoint_id"`
				Resend     bool   `json:"resend"`
			} `json:"delivery"`
		}
		decodeStrict(t, r.body, &started)
		assert.True(t, models.ValidID("dlv", started.Delivery.ID))
		assert.Equal(t, evID, started.Delivery.EventID)
		assert.Equal(t, ep.ID, started.Delivery.EndpointID)
		assert.True(t, started.Delivery.Resend)
		_, resends := ev.calls()
		assert.Equal(t, []string{evID + " " + ep.ID}, resends)

		requireError(t, resend(key, ep.ID, "evt_000000000000000000000000"), http.StatusNotFound, models.CodeEventNotFound, "")
		requireError(t, resend(key, ep.ID, "nope"), http.StatusNotFound, models.CodeEventNotFound, "")
		requireError(t, resend(other, otherEp.ID, evID), http.StatusNotFound, models.CodeEventNotFound, "")      // another account's event
		requireError(t, resend(other, ep.ID, evID), http.StatusNotFound, models.CodeWebhookEndpointNotFound, "") // another account's endpoint
		ok, err := e.st.DisableWebhookEndpoint(ctx, ep.ID, next.Add(time.Hour), next.Add(73*time.Hour), "Deliveries failed for 3 days")
		require.NoError(t, err)
		require.True(t, ok)
		requireError(t, resend(key, ep.ID, evID), http.StatusConflict, models.CodeWebhookEndpointDisabled, "")
		r = e.get(t, "/v1/webhook_endpoints/"+ep.ID, key)
		var got struct {
			Endpoint endpointBody `json:"webhook_endpoint"`
		}
		decodeStrict(t, r.body, &got)
		assert.Equal(t, "disabled", got.Endpoint.Status)
		require.NotNil(t, got.Endpoint.DisabledReason)
		assert.Equal(t, "Deliveries failed for 3 days", *got.Endpoint.DisabledReason)
		require.NotNil(t, got.Endpoint.DisabledAt)

		// The dispatcher failing is a 503 the client may retry.
		ep2, _ := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/z", "*"))
		ev.mu.Lock()
		ev.err = errors.New("temporal down")
		ev.mu.Unlock()
		requireError(t, resend(key, ep2.ID, evID), http.StatusServiceUnavailable, models.CodeUnavailable, "")
	})
}

// TestWebhookEndpointsRequestExamples validates the README's requests
// against the document's request schemas.
func TestWebhookEndpointsRequestExamples(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	schema := v.doc.Components.Schemas["WebhookEndpointRequest"].Value
	for body, valid := range map[string]bool{
		`{"url":"https://example.com/memocart/webhooks","enabled_events":["order.paid","order.delivered","payment.late"],"description":"ERP"}`: true,
		`{"url":"http://localhost:4242/hook","enabled_events":["*"]}`:                                                                          true,
		`{"url":"https://example.com/x","enabled_events":[]}`:                                                                                  false,
		`{"url":"https://example.com/x","enabled_events":["order.lost"]}`:                                                                      false,
		`{"url":"https://example.com/x","enabled_events":["*"],"secret":"x"}`:                                                                  false,
	} {
		var doc any
		require.NoError(t, json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&doc))
		err := schema.VisitJSON(doc, openapi3.EnableJSONSchema2020())
		assert.Equalf(t, valid, err == nil, "%s: %v", body, err)
	}
}

// TestWebhookEventTypesAreTheDocuments: the document's WebhookEventType
// enumerates exactly the types an endpoint may subscribe to, in their
// documentation order.
func TestWebhookEventTypesAreTheDocuments(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	var enum []string
	for _, e := range v.doc.Components.Schemas["WebhookEventType"].Value.Enum {
		enum = append(enum, e.(string))
	}
	var types []string
	for _, typ := range models.EventTypes {
		types = append(types, string(typ))
	}
	assert.Equal(t, types, enum)
}

// TestRefundEventBodies follows a failed order's refund through its facts
// with a "*" endpoint listening: refund.created, refund.failed twice (a
// new destination in between), refund.sent. Each body holds the order as
// GET /v1/orders/{id} answers it then, without its refunds, and the
// refund exactly as GET /v1/refunds/{id} answers it then (destination
// included; the transaction hash once sent), and is a WebhookEvent as the
// OpenAPI document describes it, as delivered.
func TestRefundEventBodies(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, _ := newWebhookEnv(t, dialect)
		ctx := t.Context()
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		ep, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/x", "*"))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		orderID := e.newFailedOrder(t, key)
		refunds, err := e.st.RefundsForOrder(ctx, orderID)
		require.NoError(t, err)
		require.Len(t, refunds, 1)
		refundID := refunds[0].ID

		v, err := openAPI()
		require.NoError(t, err)
		schema := v.doc.Components.Schemas["WebhookEvent"].Value
		seen := map[string]bool{}
		// latest checks the one refund event of type typ not seen yet
		// against what GET answers now, and returns its body.
		latest := func(typ models.EventType) map[string]any {
			t.Helper()
			pending, err := e.st.PendingOrderWebhookEvents(ctx, orderID)
			require.NoError(t, err)
			var ev models.Event
			for _, p := range pending {
				if p.Type == typ && !seen[p.ID] {
					require.Emptyf(t, ev.ID, "two new %s events", typ)
					ev = p
				}
			}
			require.NotEmptyf(t, ev.ID, "no new %s event", typ)
			seen[ev.ID] = true
			// As delivered now: the claim link is written in at delivery.
			stored, _, err := e.st.WebhookDelivery(ctx, ev.ID, ep.ID, e.clock.Now())
			require.NoError(t, err)
			var body eventView[struct {
				Order  json.RawMessage `json:"order"`
				Refund json.RawMessage `json:"refund"`
			}]
			decodeStrict(t, stored.Payload, &body)
			assert.Equal(t, ev.ID, body.ID)
			assert.Equal(t, string(typ), body.Type)
			assert.Equal(t, "test", body.Mode)

			g := e.get(t, "/v1/refunds/"+refundID, key)
			require.Equal(t, http.StatusOK, g.status, "%s", g.body)
			var refund struct {
				Refund json.RawMessage `json:"refund"`
			}
			decodeStrict(t, g.body, &refund)
			assert.JSONEq(t, string(refund.Refund), string(body.Data.Refund), "the event's refund is GET's refund")
			g = e.get(t, "/v1/orders/"+orderID, key)
			require.Equal(t, http.StatusOK, g.status, "%s", g.body)
			var order struct {
				Order map[string]json.RawMessage `json:"order"`
			}
			decodeStrict(t, g.body, &order)
			delete(order.Order, "refunds")
			getOrder, err := json.Marshal(order.Order)
			require.NoError(t, err)
			assert.JSONEq(t, string(getOrder), string(body.Data.Order), "the event's order is GET's order, without its refunds")

			var doc map[string]any
			require.NoError(t, json.Unmarshal(stored.Payload, &doc))
			require.NoError(t, schema.VisitJSON(doc, openapi3.EnableJSONSchema2020()), "the body is a WebhookEvent: %s", stored.Payload)
			doc["data"].(map[string]any)["refund"].(map[string]any)["surprise"] = 1
			assert.Error(t, schema.VisitJSON(doc, openapi3.EnableJSONSchema2020()), "control: the refund is checked against the schema")
			return doc["data"].(map[string]any)["refund"].(map[string]any)
		}
		move := func(mv func(models.Refund, time.Time) (models.Refund, error)) {
			t.Helper()
			e.clock.Advance(time.Minute)
			now := e.clock.Now()
			_, err := e.st.UpdateRefund(ctx, refundID, now, func(r models.Refund) (models.Refund, error) { return mv(r, now) })
			require.NoError(t, err)
		}
		destination := func(d models.RefundDestination) func(models.Refund, time.Time) (models.Refund, error) {
			return func(r models.Refund, _ time.Time) (models.Refund, error) { return models.SetRefundDestination(r, d) }
		}
		approve := func(r models.Refund, now time.Time) (models.Refund, error) { return models.ApproveRefund(r, now) }
		hash := strings.Repeat("ab", 32)
		fail := func(reason string) func(models.Refund, time.Time) (models.Refund, error) {
			return func(r models.Refund, now time.Time) (models.Refund, error) {
				r, err := models.RecordRefundTransaction(r, hash, "")
				if err != nil {
					return r, err
				}
				return models.FailRefund(r, reason, now)
			}
		}

		created := latest(models.EventRefundCreated)
		assert.Equal(t, "awaiting_destination", created["status"])
		assert.Nil(t, created["destination"])

		move(destination(models.RefundDestination{Address: refundAccount, MemoType: "id", Memo: "42"}))
		move(approve)
		move(fail("The account does not trust USDC: add a trustline"))
		failed := latest(models.EventRefundFailed)
		assert.Equal(t, "failed", failed["status"])
		assert.Equal(t, "The account does not trust USDC: add a trustline", failed["failure_reason"])
		assert.Equal(t, refundAccount, failed["destination"].(map[string]any)["address"], "the destination is the client's to see")

		move(destination(models.RefundDestination{Address: refundAccount2}))
		move(approve)
		move(fail("No such account on the network"))
		failed = latest(models.EventRefundFailed)
		assert.Equal(t, "No such account on the network", failed["failure_reason"])

		move(destination(models.RefundDestination{ToSender: true}))
		move(approve)
		move(func(r models.Refund, now time.Time) (models.Refund, error) {
			return models.MarkRefundSent(r, hash, now)
		})
		sent := latest(models.EventRefundSent)
		assert.Equal(t, "sent", sent["status"])
		assert.Equal(t, hash, sent["transaction_hash"], "refund.sent carries the payout's hash")
		assert.Equal(t, true, sent["destination"].(map[string]any)["to_sender"])
	})
}
