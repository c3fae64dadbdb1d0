package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// TestMigration0013DropsStoredClaimLinks: refund events stored with the
// payer's claim link in their body lose it (claim_url null); the rest of
// every body, a metadata entry named claim_url included, stays as it was.
func TestMigration0013DropsStoredClaimLinks(t *testing.T) {
	const token = "1QXGwLXy3543cfpanE-Xyrl33L-MzjpL6AwUz97gf1s"
	order := `{"order":{"id":"ord_1","metadata":{"claim_url":"keep \"x\""},"refund_destination":null},`
	tail := `,"created_at":"2026-03-14T15:09:26Z","approved_at":null,"sent_at":null,"failed_at":null,"cancelled_at":null}}}`
	refund := func(claim string) string {
		return `"refund":{"id":"rfd_1","status":"awaiting_destination","failure_reason":"no \"claim_url\":\"x\"","claim_url":` + claim + tail
	}
	events := []struct{ id, typ, before, after string }{
		{"evt_created", "refund.created",
			`{"id":"evt_created","data":` + order + refund(`"https://pay.example/claim/`+token+`"`),
			`{"id":"evt_created","data":` + order + refund(`null`)},
		{"evt_failed", "refund.failed",
			`{"id":"evt_failed","data":` + order + refund(`"https://pay.example/claim/`+token+`"`),
			`{"id":"evt_failed","data":` + order + refund(`null`)},
		{"evt_sent", "refund.sent",
			`{"id":"evt_sent","data":` + order + refund(`null`),
			`{"id":"evt_sent","data":` + order + refund(`null`)},
		{"evt_paid", "order.paid",
			`{"id":"evt_paid","data":{"order":{"id":"ord_1","metadata":{"claim_url":"keep"}}}}`,
			`{"id":"evt_paid","data":{"order":{"id":"ord_1","metadata":{"claim_url":"keep"}}}}`},
	}
	eachDialectAt(t, 12, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		require.NoError(t, st.Exec(ctx, `INSERT INTO accounts (id, name, created_at) VALUES ('acct_old', 'old', ?)`, t0))
		for _, ev := range events {
			require.NoError(t, st.Exec(ctx, `INSERT INTO webhook_events (id, account_id, mode, type, created_at, recorded_at, payload)
				VALUES (?, 'acct_old', 'test', ?, ?, ?, ?)`, ev.id, ev.typ, t0, t0, ev.before))
		}

		_, err := st.Migrate(ctx)
		require.NoError(t, err)
		for _, ev := range events {
			got, err := st.WebhookEvent(ctx, ev.id)
			require.NoError(t, err)
			assert.Equal(t, ev.after, string(got.Payload), ev.id)
			assert.NotContains(t, string(got.Payload), token)
			assert.Equal(t, models.EventType(ev.typ), got.Type)
		}
	})
}
