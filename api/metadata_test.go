package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// cartWithMetadata is a valid US cart request carrying metadata (any JSON
// value, so tests can send wrong types too).
func cartWithMetadata(metadata any) string {
	b, _ := json.Marshal(map[string]any{
		"items": []cartItemReq{{ProductURL: amazonURL, Quantity: 1}}, "ship_to_country": "US", "metadata": metadata,
	})
	return string(b)
}

func withMetadata(metadata any) func(body, addr map[string]any) {
	return func(body, _ map[string]any) { body["metadata"] = metadata }
}

// manyKeys returns n metadata keys k00..k<n-1> with value v.
func manyKeys(n int, v string) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%02d", i)] = v
	}
	return m
}

// TestCartMetadata: metadata given at cart creation is stored and returned
// by POST and GET; without it carts show {}; the limits are enforced with
// the culprit named, at exactly the limit everything is accepted.
func TestCartMetadata(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		c, r := createCart(t, e.env, key, cartWithMetadata(map[string]string{"customer_ref": "C-1042", "note": "gift ✓", "dropped": ""}))
		assert.Equal(t, map[string]string{"customer_ref": "C-1042", "note": "gift ✓"}, c.Metadata, "an empty value is not stored")
		got := e.get(t, "/v1/carts/"+c.ID, key)
		require.Equalf(t, http.StatusOK, got.status, "body %s", got.body)
		var read cartResponse
		decodeStrict(t, got.body, &read)
		assert.Equal(t, c.Metadata, read.Cart.Metadata, "GET returns what POST stored")
		_ = r

		plain, r := createCart(t, e.env, key, cartJSON("US", cartItemReq{ProductURL: amazonURL, Quantity: 1}))
		assert.Contains(t, string(r.body), `"metadata":{}`, "no metadata reads as an empty object, never null")
		assert.Empty(t, plain.Metadata)
		nullMD, _ := createCart(t, e.env, key, cartWithMetadata(nil))
		assert.Empty(t, nullMD.Metadata, "metadata: null is none")

		// Exactly at every limit: 20 keys, a 40-character key, a
		// 500-character value of multi-byte characters (characters, not
		// bytes, are counted).
		atLimit := manyKeys(19, "v")
		atLimit[strings.Repeat("é", 40)] = strings.Repeat("ü", 500)
		c, _ = createCart(t, e.env, key, cartWithMetadata(atLimit))
		assert.Equal(t, atLimit, c.Metadata)

		long := strings.Repeat("k", 41)
		for _, tt := range []struct {
			name     string
			metadata any
			field    string
		}{
			{"21 keys", manyKeys(21, "v"), "metadata"},
			{"a 41-character key", map[string]string{long: "v"}, "metadata." + long},
			{"a 501-character value", map[string]string{"note": strings.Repeat("ü", 501)}, "metadata.note"},
			{"an empty key", map[string]string{"": "v"}, "metadata"},
			{"a control character in a key", map[string]string{"a\tb": "v"}, "metadata.a\tb"},
			{"a number as a value", map[string]any{"n": 12}, "metadata.n"},
			{"an object as a value", map[string]any{"o": map[string]string{"x": "y"}}, "metadata.o"},
			{"an array", []string{"a"}, "metadata"},
			{"a string", "a=b", "metadata"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				requireError(t, e.post(t, "/v1/carts", key, cartWithMetadata(tt.metadata)), http.StatusBadRequest, models.CodeInvalidRequest, tt.field)
			})
		}
		t.Run("a key given twice", func(t *testing.T) {
			body := `{"items":[{"product_url":"` + amazonURL + `","quantity":1}],"ship_to_country":"US","metadata":{"a":"1","a":"2"}}`
			requireError(t, e.post(t, "/v1/carts", key, body), http.StatusBadRequest, models.CodeInvalidRequest, "metadata.a")
		})
	})
}

// TestOrderMetadata: an order's metadata is its cart's with the request's
// merged over it (a key given replaces the cart's, an empty value removes
// it), returned by creation, retrieval and a replay; the merged result
// must fit the limits; metadata is part of what makes the same request.
func TestOrderMetadata(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		c, _ := createCart(t, e.env, key, cartWithMetadata(map[string]string{"customer_ref": "C-1042", "channel": "web", "campaign": "spring"}))
		body := orderBody(c.ID, withMetadata(map[string]string{"channel": "app", "campaign": "", "order_ref": "SO-77"}))
		r := e.postOrder(t, key, body, nil)
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		want := map[string]string{"customer_ref": "C-1042", "channel": "app", "order_ref": "SO-77"}
		o := decodeCreated(t, r)
		assert.Equal(t, want, o.Metadata, "cart's keys, the request's over them, an empty value removes one")
		assert.Equal(t, want, e.getOrder(t, key, o.Number).Metadata)

		// The same request again (no Idempotency-Key) replays the order;
		// other metadata for the same cart is another request.
		replay := e.postOrder(t, key, body, nil)
		require.Equalf(t, http.StatusOK, replay.status, "body %s", replay.body)
		assert.Equal(t, want, decodeCreated(t, replay).Metadata)
		requireError(t, e.postOrder(t, key, orderBody(c.ID, withMetadata(map[string]string{"channel": "phone"})), nil),
			http.StatusConflict, models.CodeCartAlreadyOrdered, "")
		requireError(t, e.postOrder(t, key, orderBody(c.ID), nil), http.StatusConflict, models.CodeCartAlreadyOrdered, "")

		// With an Idempotency-Key: other metadata is a mismatch.
		c2, _ := createCart(t, e.env, key, cartWithMetadata(nil))
		idem := map[string]string{"Idempotency-Key": "md-1"}
		first := e.postOrder(t, key, orderBody(c2.ID, withMetadata(map[string]string{"a": "1"})), idem)
		require.Equalf(t, http.StatusCreated, first.status, "body %s", first.body)
		assert.Equal(t, map[string]string{"a": "1"}, decodeCreated(t, first).Metadata)
		requireError(t, e.postOrder(t, key, orderBody(c2.ID, withMetadata(map[string]string{"a": "2"})), idem),
			http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")

		// No metadata anywhere: {} on creation and retrieval.
		c3, _ := createCart(t, e.env, key, cartJSON("US", cartItemReq{ProductURL: amazonURL, Quantity: 1}))
		r = e.postOrder(t, key, orderBody(c3.ID), nil)
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		assert.Contains(t, string(r.body), `"metadata":{}`)
		assert.Contains(t, string(e.get(t, "/v1/orders/"+decodeCreated(t, r).ID, key).body), `"metadata":{}`)

		// The merged result must fit: 15 cart keys and 6 new ones is 21;
		// removing one of the cart's makes it fit.
		c4, _ := createCart(t, e.env, key, cartWithMetadata(manyKeys(15, "cart")))
		extra := map[string]string{"n1": "1", "n2": "2", "n3": "3", "n4": "4", "n5": "5", "n6": "6"}
		requireError(t, e.postOrder(t, key, orderBody(c4.ID, withMetadata(extra)), nil), http.StatusBadRequest, models.CodeInvalidRequest, "metadata")
		extra["k00"] = ""
		r = e.postOrder(t, key, orderBody(c4.ID, withMetadata(extra)), nil)
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		md := decodeCreated(t, r).Metadata
		assert.Len(t, md, 20)
		assert.NotContains(t, md, "k00")
		assert.Equal(t, "cart", md["k01"])

		// The order request's own metadata is checked like a cart's.
		c5, _ := createCart(t, e.env, key, cartWithMetadata(nil))
		requireError(t, e.postOrder(t, key, orderBody(c5.ID, withMetadata(map[string]string{"note": strings.Repeat("x", 501)})), nil),
			http.StatusBadRequest, models.CodeInvalidRequest, "metadata.note")
		requireError(t, e.postOrder(t, key, orderBody(c5.ID, withMetadata(manyKeys(21, "v"))), nil),
			http.StatusBadRequest, models.CodeInvalidRequest, "metadata")
	})
}
