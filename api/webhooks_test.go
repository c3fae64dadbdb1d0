package api_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

// signedHook accepts deliveries whose X-Test-Signature is "good" and whose
// body is "<event id> <ref> <order id> [nonews]".
type signedHook struct{}

func (signedHook) Read(h http.Header, body []byte) (models.FulfilmentEvent, error) {
	if h.Get("X-Test-Signature") != "good" {
		return models.FulfilmentEvent{}, models.NewError(models.CodeInvalidSignature)
	}
	f := strings.Fields(string(body))
	for len(f) < 3 {
		f = append(f, "")
	}
	return models.FulfilmentEvent{EventID: f[0], Ref: f[1], OrderID: f[2], NoNews: len(f) > 3 && f[3] == "nonews"}, nil
}

func withWebhooks() ordersOption {
	return func(s *ordersSetup) {
		d := &s.deps
		d.Webhooks = map[string]api.FulfilmentWebhook{"zinc": signedHook{}}
	}
}

func postWebhook(t *testing.T, e *ordersEnv, provider, sig, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.ts.URL+"/webhooks/"+provider, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("X-Test-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestProviderWebhook(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect, withWebhooks())
		ctx := context.Background()
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		o := e.newOrder(t, key)
		require.NoError(t, e.st.RecordFulfilment(ctx, o.ID, models.Fulfilment{Ref: "zn_abc"}, time.Now()))

		// Our order id from the metadata.
		status, body := postWebhook(t, e, "zinc", "good", "evt_1 zn_abc "+o.ID)
		assert.Equal(t, http.StatusNoContent, status, body)
		// Only the provider's order id: found by the stored reference.
		status, _ = postWebhook(t, e, "zinc", "good", "evt_2 zn_abc")
		assert.Equal(t, http.StatusNoContent, status)
		assert.Equal(t, []string{o.ID + "/evt_1", o.ID + "/evt_2"}, e.wf.hints)
		// No news for the workflow (Zinc's order.started): accepted, not
		// handed over.
		status, _ = postWebhook(t, e, "zinc", "good", "evt_2b zn_abc "+o.ID+" nonews")
		assert.Equal(t, http.StatusNoContent, status)
		assert.Len(t, e.wf.hints, 2)

		// Forged: refused in the error envelope, nothing signalled.
		status, body = postWebhook(t, e, "zinc", "forged", "evt_3 zn_abc "+o.ID)
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Contains(t, body, `"code":"invalid_signature"`)
		// About an order we never placed: accepted and dropped after a
		// short wait, so the provider does not retry it forever.
		status, _ = postWebhook(t, e, "zinc", "good", "evt_4 zn_unknown")
		assert.Equal(t, http.StatusNoContent, status)
		assert.Len(t, e.wf.hints, 2)

		// A report that overtakes the storing of its reference (the
		// provider accepted the order; PlaceOrder has not written the
		// reference yet) waits for it instead of being dropped.
		cart2, _ := e.newCart(t, key)
		o2 := decodeCreated(t, e.postOrder(t, key, orderBody(cart2), nil))
		stored := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			stored <- e.st.RecordFulfilment(context.Background(), o2.ID, models.Fulfilment{Ref: "zn_late"}, time.Now())
		}()
		status, _ = postWebhook(t, e, "zinc", "good", "evt_9 zn_late")
		require.NoError(t, <-stored)
		assert.Equal(t, http.StatusNoContent, status)
		require.Len(t, e.wf.hints, 3)
		assert.Equal(t, o2.ID+"/evt_9", e.wf.hints[2])
		e.wf.hints = e.wf.hints[:2]

		// A finished workflow: nothing to do. Temporal down: 503, retry.
		e.wf.hintErr = models.ErrOrderClosed
		status, _ = postWebhook(t, e, "zinc", "good", "evt_5 zn_abc "+o.ID)
		assert.Equal(t, http.StatusNoContent, status)
		e.wf.hintErr = errors.New("temporal: connection refused")
		status, body = postWebhook(t, e, "zinc", "good", "evt_6 zn_abc "+o.ID)
		assert.Equal(t, http.StatusServiceUnavailable, status)
		assert.Contains(t, body, `"code":"service_unavailable"`)
		assert.NotContains(t, body, "connection refused")

		// A signed body whose reference holds a NUL never reaches the
		// database (Postgres would refuse it with a 500).
		e.wf.hintErr = nil
		status, body = postWebhook(t, e, "zinc", "good", "evt_8 zn_\x00abc")
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, body, `"code":"invalid_request"`)
		assert.Len(t, e.wf.hints, 4)

		// No such provider.
		status, _ = postWebhook(t, e, "acme", "good", "evt_7")
		assert.Equal(t, http.StatusNotFound, status)
	})
}
