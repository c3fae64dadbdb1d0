package stellar

// Tests of the watcher against Horizon bodies written by hand to the
// shapes ../shared/reference/marketplaces.md documents ("Stellar Horizon:
// details real bodies show"), served by an inline httptest server rather
// than horizontest, so that what the client reads is checked against the
// documentation and not against another test double. Each case names the
// reference line its shape comes from.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// docCreatedAt is the ledger close time of every hand-written record.
const docCreatedAt = "2025-06-07T08:09:10Z"

// docRecord is one hand-written operation record. A streamOnly record is
// left out of pages, so only the SSE stream can deliver it.
type docRecord struct {
	token      string
	body       string
	streamOnly bool
}

// docAnswer is a hand-written error answer to the next page request, or
// the next stream request if stream is set.
type docAnswer struct {
	stream bool
	status int
	header map[string]string
	body   string
}

type docRequest struct {
	at     time.Time
	cursor string
	stream bool
}

// docHorizon answers GET /accounts/{account}/payments as Horizon does:
// ascending pages of the records after cursor, or an event stream of
// them, and the queued error answers first.
type docHorizon struct {
	srv *httptest.Server

	mu       sync.Mutex
	records  []docRecord // in ascending paging-token order
	answers  []docAnswer
	requests []docRequest
}

func newDocHorizon(t *testing.T, records []docRecord, answers ...docAnswer) *docHorizon {
	t.Helper()
	for _, r := range records {
		require.True(t, json.Valid([]byte(r.body)), "hand-written record %s is not JSON:\n%s", r.token, r.body)
	}
	for _, a := range answers {
		require.True(t, json.Valid([]byte(a.body)), "hand-written error body is not JSON:\n%s", a.body)
	}
	h := &docHorizon{records: records, answers: answers}
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *docHorizon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/effects") {
		// An operation whose effects credit nothing this test knows.
		w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
		_, _ = io.WriteString(w, `{"_embedded": {"records": []}}`)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/payments") {
		// Claimable balances: this server holds none.
		w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type": "https://stellar.org/horizon-errors/not_found", "title": "Resource Missing", "status": 404}`)
		return
	}
	stream := r.Header.Get("Accept") == "text/event-stream"
	cursor := r.URL.Query().Get("cursor")
	h.mu.Lock()
	h.requests = append(h.requests, docRequest{at: time.Now(), cursor: cursor, stream: stream})
	var answer *docAnswer
	if len(h.answers) > 0 && h.answers[0].stream == stream {
		a := h.answers[0]
		answer, h.answers = &a, h.answers[1:]
	}
	var after []docRecord
	for _, rec := range h.records {
		if tokenNumber(rec.token) > tokenNumber(cursor) && (stream || !rec.streamOnly) {
			after = append(after, rec)
		}
	}
	h.mu.Unlock()

	if answer != nil {
		for k, v := range answer.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
		w.WriteHeader(answer.status)
		_, _ = io.WriteString(w, answer.body)
		return
	}
	if r.URL.Path != "/accounts/"+account+"/payments" {
		http.NotFound(w, r)
		return
	}
	if stream {
		h.stream(w, r, after)
		return
	}
	// Every test starts from a saved cursor, so pages are ascending.
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 {
		limit = 10
	}
	after = after[:min(len(after), limit)]
	bodies := make([]string, len(after))
	for i, rec := range after {
		bodies[i] = rec.body
	}
	prev, next := cursor, cursor
	if len(after) > 0 {
		prev, next = after[0].token, after[len(after)-1].token
	}
	link := func(cursor, order string) string {
		return fmt.Sprintf("http://%s%s?cursor=%s&limit=%d&order=%s", r.Host, r.URL.Path, cursor, limit, order)
	}
	w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
	_, _ = fmt.Fprintf(w, `{
  "_links": {"self": {"href": %q}, "next": {"href": %q}, "prev": {"href": %q}},
  "_embedded": {"records": [%s]}
}`, link(cursor, "asc"), link(next, "asc"), link(prev, "desc"), strings.Join(bodies, ",\n"))
}

// stream writes Horizon's opening event, then one event per record (id:
// the paging token, data: the record on one line), and holds the stream
// open until the client leaves.
func (h *docHorizon) stream(w http.ResponseWriter, r *http.Request, recs []docRecord) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "retry: 1000\nevent: open\ndata: \"hello\"\n\n")
	for _, rec := range recs {
		var line bytes.Buffer
		if err := json.Compact(&line, []byte(rec.body)); err != nil {
			panic(err) // checked valid in newDocHorizon
		}
		_, _ = fmt.Fprintf(w, "id: %s\ndata: %s\n\n", rec.token, line.Bytes())
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func (h *docHorizon) Requests() []docRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// tokenNumber orders paging tokens as Horizon does, as int64 ids.
func tokenNumber(tok string) int64 {
	n, _ := strconv.ParseInt(tok, 10, 64)
	return n
}

type alertLog struct {
	mu     sync.Mutex
	raised [][2]string // kind, detail
}

func (a *alertLog) Alert(_ context.Context, kind, detail string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.raised = append(a.raised, [2]string{kind, detail})
}

func (a *alertLog) Kinds() []string { return a.column(0) }

func (a *alertLog) Details() []string { return a.column(1) }

// column returns part i (0 the kind, 1 the detail) of every alert raised,
// in order.
func (a *alertLog) column(i int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.raised {
		out = append(out, r[i])
	}
	return out
}

// docConfig has short backoffs, and a stream idle limit longer than any
// test, so every reconnection is the one the test provokes.
func docConfig(horizonURL string) Config {
	return Config{
		HorizonURL: horizonURL, Network: "testnet", Account: account, USDCIssuer: usdcIssuer,
		PageLimit: 20, SweepEvery: time.Minute, StreamIdle: 30 * time.Second,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ProgressEvery: time.Second,
	}
}

// runWatcher runs a watcher on h from store's cursor until the test ends;
// the channel yields what Run returned.
func runWatcher(t *testing.T, h *docHorizon, store *memStore, alerts Alerter) <-chan error {
	t.Helper()
	w, err := NewWatcher(docConfig(h.srv.URL), nil, store, (&recorder{}).handle, alerts, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		result <- w.Run(ctx, nil)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(2 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return result
}

// docToken is the paging token (the operation id) of the first operation
// of the first transaction in ledger.
func docToken(ledger int64) string { return strconv.FormatInt(ledger<<32|1<<12|1, 10) }

// docTxHash is the hand-written records' transaction hash for token.
func docTxHash(token string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(token))) }

// docOperation writes an operation record as GET /accounts/{id}/payments
// with join=transactions serves it: the fields every operation has, then
// fields (the operation type's own, written per case), then the joined
// transaction carrying memo (its memo fields, written per case).
// $ACCOUNT, $SENDER, $OTHER and $USDC_ISSUER are replaced by addresses.
func docOperation(token, opType string, typeI int, successful bool, fields, memo string) string {
	hash := docTxHash(token)
	tx := `{
      "_links": {"self": {"href": "https://horizon-testnet.stellar.org/transactions/` + hash + `"}},
      "id": "` + hash + `",
      "paging_token": "` + strconv.FormatInt(tokenNumber(token)&^0xfff, 10) + `",
      "successful": ` + strconv.FormatBool(successful) + `,
      "hash": "` + hash + `",
      "ledger": ` + strconv.FormatInt(tokenNumber(token)>>32, 10) + `,
      "created_at": "` + docCreatedAt + `",
      "source_account": "$SENDER",
      "source_account_sequence": "223338299461632001",
      "fee_account": "$SENDER",
      "fee_charged": "100",
      "max_fee": "1000",
      "operation_count": 1,
      "envelope_xdr": "AAAAAgAAAAA=",
      "result_xdr": "AAAAAAAAAGQ=",
      "fee_meta_xdr": "AAAAAA==",
      ` + memo + `,
      "signatures": ["c2lnbmF0dXJl"],
      "valid_after": "1970-01-01T00:00:00Z",
      "preconditions": {"timebounds": {"min_time": "0"}}
    }`
	op := `{
    "_links": {
      "self": {"href": "https://horizon-testnet.stellar.org/operations/` + token + `"},
      "transaction": {"href": "https://horizon-testnet.stellar.org/transactions/` + hash + `"}
    },
    "id": "` + token + `",
    "paging_token": "` + token + `",
    "transaction_successful": ` + strconv.FormatBool(successful) + `,
    "source_account": "$SENDER",
    "type": "` + opType + `",
    "type_i": ` + strconv.Itoa(typeI) + `,
    "created_at": "` + docCreatedAt + `",
    "transaction_hash": "` + hash + `",
    ` + fields + `,
    "transaction": ` + tx + `
  }`
	return strings.NewReplacer(
		"$ACCOUNT", account, "$SENDER", sender, "$OTHER", docOther, "$USDC_ISSUER", usdcIssuer,
	).Replace(op)
}

var docOther = models.StellarAccountID(sha256.Sum256([]byte("documented_test other account")))

// muxedAddress is the muxed account (M..., SEP-23) of the G... account g
// with id: the same key, the id big-endian, and a CRC16-XModem checksum.
func muxedAddress(t *testing.T, g string, id uint64) string {
	t.Helper()
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	raw, err := enc.DecodeString(g)
	require.NoError(t, err)
	b := append([]byte{12 << 3}, raw[1:33]...)
	b = binary.BigEndian.AppendUint64(b, id)
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	m := enc.EncodeToString(binary.LittleEndian.AppendUint16(b, crc))
	require.NoError(t, models.ValidateRefundAddress(m), "a well-formed muxed address")
	return m
}

// docPayment is what a credited record must become, less what every
// record fixes (id, mode, hash, time).
type docPayment struct {
	asset, amount, memo, memoType, sender string
}

// TestDocumentedPaymentRecords serves hand-written records of every shape
// the reference lists, in a page and then as stream events, and checks the
// payment each becomes, or that it credits nothing while the cursor still
// moves past it.
func TestDocumentedPaymentRecords(t *testing.T) {
	accountMuxed := muxedAddress(t, account, 42)
	senderMuxed := muxedAddress(t, sender, 9007199254740993)
	otherMuxed := muxedAddress(t, docOther, 7)
	xlmTo := func(to string) string {
		return `"asset_type": "native", "from": "$SENDER", "to": "` + to + `", "amount": "25.5000000"`
	}
	textMemo := `"memo_type": "text", "memo": "12345678901", "memo_bytes": "MTIzNDU2Nzg5MDE="`
	tests := []struct {
		name, line string // line: where marketplaces.md documents the shape
		opType     string
		typeI      int
		successful bool
		fields     string
		memo       string
		want       *docPayment // nil: credits nothing
	}{
		{"text memo, with memo_bytes", "marketplaces.md:145-146", "payment", 1, true, xlmTo("$ACCOUNT"), textMemo,
			&docPayment{"XLM", "25.5", "12345678901", "text", sender}},
		{"id memo is a JSON string, kept digit for digit", "marketplaces.md:145-146", "payment", 1, true,
			`"asset_type": "credit_alphanum4", "asset_code": "USDC", "asset_issuer": "$USDC_ISSUER",
    "from": "$SENDER", "to": "$ACCOUNT", "amount": "117.7300000"`,
			`"memo_type": "id", "memo": "18446744073709551615"`,
			&docPayment{"USDC", "117.73", "18446744073709551615", "id", sender}},
		{"memo absent when memo_type is none", "marketplaces.md:145", "payment", 1, true, xlmTo("$ACCOUNT"),
			`"memo_type": "none"`,
			&docPayment{"XLM", "25.5", "", "none", sender}},
		{"hash memo stays base64", "marketplaces.md:145-146", "payment", 1, true, xlmTo("$ACCOUNT"),
			`"memo_type": "hash", "memo": "HSTP8uZum+b61ABOcUDn/z06wx0I/7qFHE4cjOlE4ik="`,
			&docPayment{"XLM", "25.5", "HSTP8uZum+b61ABOcUDn/z06wx0I/7qFHE4cjOlE4ik=", "hash", sender}},
		{"return memo stays base64", "marketplaces.md:145-146", "payment", 1, true, xlmTo("$ACCOUNT"),
			`"memo_type": "return", "memo": "TLlUNINor6se9Fi7fcOFXAiCUEPQj+hQL5ZhB0aF8Yc="`,
			&docPayment{"XLM", "25.5", "TLlUNINor6se9Fi7fcOFXAiCUEPQj+hQL5ZhB0aF8Yc=", "return", sender}},
		{"paid to the account's muxed address, from a muxed sender", "marketplaces.md:147-148", "payment", 1, true,
			`"asset_type": "native",
    "from": "$SENDER", "from_muxed": "` + senderMuxed + `", "from_muxed_id": "9007199254740993",
    "to": "$ACCOUNT", "to_muxed": "` + accountMuxed + `", "to_muxed_id": "42",
    "amount": "3.0000001"`,
			textMemo,
			&docPayment{"XLM", "3.0000001", "12345678901", "text", senderMuxed}},
		{"outgoing refund to a muxed address", "marketplaces.md:147-148", "payment", 1, true,
			`"asset_type": "native", "from": "$ACCOUNT", "to": "$OTHER", "to_muxed": "` + otherMuxed + `", "to_muxed_id": "7",
    "amount": "3.0000000"`,
			textMemo, nil},
		{"strict receive credits amount, not source_amount", "marketplaces.md:149", "path_payment_strict_receive", 2, true,
			`"asset_type": "credit_alphanum4", "asset_code": "USDC", "asset_issuer": "$USDC_ISSUER",
    "from": "$SENDER", "to": "$ACCOUNT", "amount": "10.0000000",
    "path": [{"asset_type": "credit_alphanum4", "asset_code": "EURC", "asset_issuer": "$OTHER"}],
    "source_amount": "37.1234567", "source_max": "40.0000000", "source_asset_type": "native"`,
			textMemo,
			&docPayment{"USDC", "10", "12345678901", "text", sender}},
		{"strict send credits amount, not source_amount", "marketplaces.md:149", "path_payment_strict_send", 13, true,
			`"asset_type": "native", "from": "$SENDER", "to": "$ACCOUNT", "amount": "9.9800000",
    "path": [],
    "source_amount": "100.0000000", "destination_min": "9.5000000",
    "source_asset_type": "credit_alphanum4", "source_asset_code": "USDC", "source_asset_issuer": "$USDC_ISSUER"`,
			`"memo_type": "id", "memo": "12345678901"`,
			&docPayment{"XLM", "9.98", "12345678901", "id", sender}},
		{"failed path payment credits nothing", "marketplaces.md:149-150", "path_payment_strict_receive", 2, false,
			`"asset_type": "native", "from": "$SENDER", "to": "$ACCOUNT", "amount": "50.0000000",
    "path": [], "source_amount": "0.0000000", "source_max": "60.0000000",
    "source_asset_type": "credit_alphanum4", "source_asset_code": "USDC", "source_asset_issuer": "$USDC_ISSUER"`,
			textMemo, nil},
		{"failed payment credits nothing", "marketplaces.md:149-150", "payment", 1, false, xlmTo("$ACCOUNT"), textMemo, nil},
		// create_account and account_merge are in every account's payments
		// feed; the reference lists no shape for them, so these use
		// Horizon's field names (funder/account, account/into) and check
		// only that they credit nothing and do not stop the watcher (a
		// merge's amount is in its effects, which credit nothing here:
		// TestAccountMergeIsRecorded).
		{"create_account funding the account", "not in marketplaces.md", "create_account", 0, true,
			`"starting_balance": "5.0000000", "funder": "$SENDER", "account": "$ACCOUNT"`,
			`"memo_type": "none"`, nil},
		{"account_merge into the account", "not in marketplaces.md", "account_merge", 8, true,
			`"account": "$SENDER", "into": "$ACCOUNT"`,
			`"memo_type": "none"`, nil},
	}
	records := make([]docRecord, len(tests))
	for i, tc := range tests {
		token := docToken(52000000 + int64(i))
		records[i] = docRecord{token: token, body: docOperation(token, tc.opType, tc.typeI, tc.successful, tc.fields, tc.memo)}
	}
	last := records[len(records)-1].token

	for _, delivery := range []string{"page", "stream"} {
		t.Run(delivery, func(t *testing.T) {
			recs := slices.Clone(records)
			for i := range recs {
				recs[i].streamOnly = delivery == "stream"
			}
			h := newDocHorizon(t, recs)
			store := newStore("0")
			alerts := &alertLog{}
			runWatcher(t, h, store, alerts)
			waitFor(t, "cursor past every record", func() bool { return store.Cursor() == last })
			assert.Equal(t, []string{AlertAccountMerge}, alerts.Kinds(),
				"no record stopped the watcher; the merge, whose effects here credit nothing, is raised")

			credited := 0
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					got, ok := store.Payment(paymentID(recs[i].token))
					if tc.want == nil {
						assert.False(t, ok, "credits nothing (%s)", tc.line)
						return
					}
					credited++
					require.True(t, ok, "credited (%s)", tc.line)
					want := models.Payment{
						ID: paymentID(recs[i].token), Mode: models.ModeLive, Asset: tc.want.asset,
						Memo: tc.want.memo, MemoType: tc.want.memoType, Sender: tc.want.sender,
						TxHash: docTxHash(recs[i].token), ReceivedAt: time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC),
					}
					amount := decimal.RequireFromString(tc.want.amount)
					assert.True(t, amount.Equal(got.Amount), "amount %s, want %s (%s)", got.Amount, amount, tc.line)
					got.Amount = decimal.Decimal{}
					assert.Equal(t, want, got, tc.line)
				})
			}
			assert.Equal(t, credited, store.Count(), "nothing else stored")
		})
	}
}

// errorCase is a hand-written Horizon error answer, what the client must
// read from it, and what the watcher must then do.
type errorCase struct {
	name, line string
	answer     docAnswer
	parsed     httpError
	// fatal: Run returns the error. Otherwise the watcher retries the same
	// cursor no sooner than minWait, raising alert ("" for none).
	fatal   bool
	alert   string
	minWait time.Duration
}

func documentedErrors() []errorCase {
	rateLimitHeaders := func(retryAfter string) map[string]string {
		h := map[string]string{"X-Ratelimit-Limit": "3600", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "1"}
		if retryAfter != "" {
			h["Retry-After"] = retryAfter
		}
		return h
	}
	const (
		badRequest  = "https://stellar.org/horizon-errors/bad_request"
		rateLimited = "https://stellar.org/horizon-errors/rate_limit_exceeded"
		slowDown    = "Too many requests from this address; see the X-RateLimit headers."
	)
	// rateLimitedBody is Horizon's 429 problem with its message under key:
	// the reference spells it detail, the docs' sample details.
	rateLimitedBody := func(key string) string {
		return `{"type": "` + rateLimited + `", "title": "Rate Limit Exceeded", "status": 429, "` + key + `": "` + slowDown + `"}`
	}
	rateLimitedError := httpError{Status: 429, Type: rateLimited, Title: "Rate Limit Exceeded", Detail: slowDown, RetryAfter: time.Second}
	return []errorCase{
		{
			name: "400 bad_request naming the invalid account_id", line: "marketplaces.md:151-152",
			answer: docAnswer{status: 400, body: `{
  "type": "` + badRequest + `",
  "title": "Bad Request",
  "status": 400,
  "detail": "A parameter of the request is malformed.",
  "extras": {"invalid_field": "account_id", "reason": "not a valid account id"}
}`},
			parsed: httpError{Status: 400, Type: badRequest, Title: "Bad Request", Detail: "A parameter of the request is malformed.",
				InvalidField: "account_id", Reason: "not a valid account id"},
			fatal: true, alert: AlertRequestRejected,
		},
		{
			name: "429 with detail and Retry-After", line: "marketplaces.md:151",
			answer:  docAnswer{status: 429, header: rateLimitHeaders("1"), body: rateLimitedBody("detail")},
			parsed:  rateLimitedError,
			minWait: time.Second,
		},
		{
			name: "429 as the docs' sample spells it: details", line: "marketplaces.md:151",
			answer:  docAnswer{status: 429, header: rateLimitHeaders("1"), body: rateLimitedBody("details")},
			parsed:  rateLimitedError,
			minWait: time.Second,
		},
		{
			// The reference does not say Horizon sends Retry-After; without
			// it a 429 is still retried, after the watcher's own backoff.
			name: "429 without Retry-After", line: "marketplaces.md:151",
			answer: docAnswer{status: 429, header: rateLimitHeaders(""), body: rateLimitedBody("detail")},
			parsed: httpError{Status: 429, Type: rateLimited, Title: "Rate Limit Exceeded", Detail: slowDown},
		},
		{
			// Horizon counts stream updates against the limit too, so the
			// stream request can be the one refused.
			name: "429 answering the stream request", line: "marketplaces.md:151",
			answer:  docAnswer{stream: true, status: 429, header: rateLimitHeaders("1"), body: rateLimitedBody("detail")},
			parsed:  rateLimitedError,
			minWait: time.Second,
		},
		{
			name: "404 not_found", line: "not in marketplaces.md (brief: 404 not_found)",
			answer: docAnswer{status: 404, body: `{
  "type": "https://stellar.org/horizon-errors/not_found",
  "title": "Resource Missing",
  "status": 404,
  "detail": "Nothing was found at the requested URL.",
  "instance": "horizon-testnet-002/AbCdEf-1234"
}`},
			parsed: httpError{Status: 404, Type: "https://stellar.org/horizon-errors/not_found", Title: "Resource Missing",
				Detail: "Nothing was found at the requested URL."},
			alert: AlertAccountNotFound,
		},
		{
			name: "410 before_history", line: "not in marketplaces.md (brief: 410 before history)",
			answer: docAnswer{status: 410, body: `{
  "type": "https://stellar.org/horizon-errors/before_history",
  "title": "Data Requested Is Before Recorded History",
  "status": 410,
  "detail": "This server only keeps recent history; the request asks for older data."
}`},
			parsed: httpError{Status: 410, Type: "https://stellar.org/horizon-errors/before_history",
				Title: "Data Requested Is Before Recorded History", Detail: "This server only keeps recent history; the request asks for older data."},
			alert: AlertBeforeHistory,
		},
		{
			name: "503 stale_history with Retry-After", line: "not in marketplaces.md (brief: 503 timeouts)",
			answer: docAnswer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{
  "type": "https://stellar.org/horizon-errors/stale_history",
  "title": "Historical DB Is Too Stale",
  "status": 503,
  "detail": "Ingestion is behind; try again later."
}`},
			parsed: httpError{Status: 503, Type: "https://stellar.org/horizon-errors/stale_history", Title: "Historical DB Is Too Stale",
				Detail: "Ingestion is behind; try again later.", RetryAfter: time.Second},
			minWait: time.Second,
		},
		{
			name: "504 timeout", line: "not in marketplaces.md (brief: 504 timeouts)",
			answer: docAnswer{status: 504, body: `{
  "type": "https://stellar.org/horizon-errors/timeout",
  "title": "Timeout",
  "status": 504,
  "detail": "The request took too long to answer."
}`},
			parsed: httpError{Status: 504, Type: "https://stellar.org/horizon-errors/timeout", Title: "Timeout",
				Detail: "The request took too long to answer."},
		},
	}
}

// TestDocumentedErrorBodies checks what the client reads from each error
// body and its headers: status, problem fields, bad_request extras, and
// Retry-After.
func TestDocumentedErrorBodies(t *testing.T) {
	for _, tc := range documentedErrors() {
		t.Run(tc.name, func(t *testing.T) {
			h := newDocHorizon(t, nil, tc.answer)
			w, err := NewWatcher(docConfig(h.srv.URL), nil, newStore("0"), (&recorder{}).handle, nil, nil)
			require.NoError(t, err)
			if tc.answer.stream {
				_, err = w.openStream(t.Context(), "0")
			} else {
				_, err = w.fetchPage(t.Context(), url.Values{"cursor": {"0"}, "order": {"asc"}})
			}
			var he *httpError
			require.ErrorAs(t, err, &he, tc.line)
			assert.Equal(t, tc.parsed, *he, tc.line)
			assert.Equal(t, tc.fatal, he.permanent(), "permanent (%s)", tc.line)
			assert.Equal(t, tc.alert == AlertBeforeHistory, he.beforeHistory(), "before history (%s)", tc.line)
			if tc.parsed.InvalidField != "" {
				assert.Contains(t, he.Error(), tc.parsed.InvalidField, "the message names the field to fix")
			}
		})
	}
}

// TestDocumentedErrorOutcomes runs the watcher into each error body once,
// then into a page holding one payment: a rejected request ends Run with
// the error and an alert naming the invalid field; everything else is
// retried from the same cursor, no sooner than Retry-After, with the
// alert its kind calls for, and the payment is then saved.
func TestDocumentedErrorOutcomes(t *testing.T) {
	token := docToken(52100000)
	payment := docRecord{token: token, body: docOperation(token, "payment", 1, true,
		`"asset_type": "native", "from": "$SENDER", "to": "$ACCOUNT", "amount": "1.0000000"`,
		`"memo_type": "text", "memo": "12345678901", "memo_bytes": "MTIzNDU2Nzg5MDE="`)}
	for _, tc := range documentedErrors() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newDocHorizon(t, []docRecord{payment}, tc.answer)
			store := newStore("0")
			alerts := &alertLog{}
			done := runWatcher(t, h, store, alerts)

			if tc.fatal {
				select {
				case err := <-done:
					var he *httpError
					require.ErrorAs(t, err, &he)
					assert.Equal(t, tc.parsed.Status, he.Status)
				case <-time.After(2 * time.Second):
					t.Fatalf("Run did not return (%s)", tc.line)
				}
				assert.Equal(t, []string{tc.alert}, alerts.Kinds())
				require.Len(t, alerts.Details(), 1)
				assert.Contains(t, alerts.Details()[0], tc.parsed.InvalidField, "the alert names the field to fix")
				assert.Len(t, h.Requests(), 1, "not retried")
				assert.Zero(t, store.Count())
				return
			}

			// The failed request (a stream follows the first page), then
			// the retry that follows it.
			failed := 0
			if tc.answer.stream {
				failed = 1
			}
			h.waitRequests(t, failed+2)
			store.waitPayment(t, paymentID(token))
			reqs := h.Requests()
			assert.Equal(t, tc.answer.stream, reqs[failed].stream, "the answered request")
			assert.Equal(t, reqs[failed].cursor, reqs[failed+1].cursor, "retried from the same cursor, nothing skipped")
			assert.GreaterOrEqual(t, reqs[failed+1].at.Sub(reqs[failed].at), tc.minWait, "waited out Retry-After")
			if tc.alert == "" {
				assert.Empty(t, alerts.Kinds())
			} else {
				assert.Equal(t, []string{tc.alert}, alerts.Kinds())
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned %v (%s)", err, tc.line)
			default:
			}
		})
	}
}

func (h *docHorizon) waitRequests(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d requests", n), func() bool { return len(h.Requests()) >= n })
}

func (s *memStore) waitPayment(t *testing.T, id string) {
	t.Helper()
	waitFor(t, "payment "+id+" saved", func() bool {
		_, ok := s.Payment(id)
		return ok
	})
}
