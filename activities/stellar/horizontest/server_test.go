package horizontest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

var (
	account = horizontest.AccountID("shop")
	sender  = horizontest.AccountID("customer")
	issuer  = horizontest.AccountID("issuer")
)

func newServer(t *testing.T) *horizontest.Server {
	t.Helper()
	s := horizontest.New(account)
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, rawURL string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

type pageBody struct {
	Links map[string]struct {
		Href string `json:"href"`
	} `json:"_links"`
	Embedded struct {
		Records []map[string]any `json:"records"`
	} `json:"_embedded"`
}

func getPage(t *testing.T, s *horizontest.Server, query string) pageBody {
	t.Helper()
	resp := get(t, s.URL+"/accounts/"+account+"/payments?"+query, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/hal+json")
	var p pageBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return p
}

func ids(p pageBody) []string {
	var out []string
	for _, r := range p.Embedded.Records {
		out = append(out, r["id"].(string))
	}
	return out
}

func TestRecordFormat(t *testing.T) {
	s := newServer(t)
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	payID := s.AddPayment(horizontest.Payment{
		From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: issuer,
		Amount: "12.3400000", MemoType: "text", Memo: "12345678901", CreatedAt: at,
	})
	pathID := s.AddPayment(horizontest.Payment{
		Type: "path_payment_strict_receive", From: sender, To: account,
		Amount: "5.0000000", SourceAmount: "7.1234567", CreatedAt: at,
	})

	p := getPage(t, s, "join=transactions")
	require.Len(t, p.Embedded.Records, 2)
	pay, path := p.Embedded.Records[0], p.Embedded.Records[1]

	assert.Equal(t, payID, pay["id"])
	assert.Equal(t, payID, pay["paging_token"])
	assert.Equal(t, true, pay["transaction_successful"])
	assert.Equal(t, "payment", pay["type"])
	assert.Equal(t, float64(1), pay["type_i"])
	assert.Equal(t, "2025-03-04T05:06:07Z", pay["created_at"])
	assert.Equal(t, sender, pay["source_account"])
	assert.Equal(t, sender, pay["from"])
	assert.Equal(t, account, pay["to"])
	assert.Equal(t, "credit_alphanum4", pay["asset_type"])
	assert.Equal(t, "USDC", pay["asset_code"])
	assert.Equal(t, issuer, pay["asset_issuer"])
	assert.Equal(t, "12.3400000", pay["amount"], "amounts are strings, as Horizon sends them")
	tx := pay["transaction"].(map[string]any)
	assert.Equal(t, pay["transaction_hash"], tx["hash"])
	assert.Equal(t, "text", tx["memo_type"])
	assert.Equal(t, "12345678901", tx["memo"])
	assert.Equal(t, true, tx["successful"])

	assert.Equal(t, pathID, path["id"])
	assert.Equal(t, float64(2), path["type_i"])
	assert.Equal(t, "native", path["asset_type"])
	assert.NotContains(t, path, "asset_code")
	assert.Equal(t, "5.0000000", path["amount"])
	assert.Equal(t, "7.1234567", path["source_amount"])
	assert.Equal(t, "native", path["source_asset_type"])
	pathTx := path["transaction"].(map[string]any)
	assert.Equal(t, "none", pathTx["memo_type"])
	assert.NotContains(t, pathTx, "memo", "a none memo has no memo field")

	a, err := strconv.ParseInt(payID, 10, 64)
	require.NoError(t, err)
	b, err := strconv.ParseInt(pathID, 10, 64)
	require.NoError(t, err)
	assert.Greater(t, b, a, "paging tokens increase")

	next, err := url.Parse(p.Links["next"].Href)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimPrefix(s.URL, "http://"), next.Host)
	assert.Equal(t, pathID, next.Query().Get("cursor"))

	plain := getPage(t, s, "")
	assert.NotContains(t, plain.Embedded.Records[0], "transaction", "no transaction without join")
}

func TestSameTransaction(t *testing.T) {
	s := newServer(t)
	first := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000", TxHash: "aa"})
	second := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "2.0000000", TxHash: "aa"})
	a, _ := strconv.ParseInt(first, 10, 64)
	b, _ := strconv.ParseInt(second, 10, 64)
	assert.Equal(t, a+1, b, "operations of one transaction are consecutive")
	p := getPage(t, s, "")
	assert.Equal(t, "aa", p.Embedded.Records[1]["transaction_hash"])
}

func TestPaging(t *testing.T) {
	s := newServer(t)
	var all []string
	for range 5 {
		all = append(all, s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"}))
	}
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"first page", "limit=2", all[:2]},
		{"after a cursor", "limit=2&cursor=" + all[1], all[2:4]},
		{"last, short page", "limit=2&cursor=" + all[3], all[4:]},
		{"past the end", "cursor=" + all[4], nil},
		{"now", "cursor=now", nil},
		{"default limit 10", "", all},
		{"newest first", "order=desc&limit=1", all[4:]},
		{"desc before a cursor", "order=desc&limit=2&cursor=" + all[3], []string{all[2], all[1]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ids(getPage(t, s, tc.query)))
		})
	}
}

func TestProblems(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name     string
		path     string
		status   int
		typeTail string
	}{
		{"unknown account", "/accounts/" + sender + "/payments", http.StatusNotFound, "/not_found"},
		{"unknown path", "/ledgers", http.StatusNotFound, "/not_found"},
		{"limit over 200", "/accounts/" + account + "/payments?limit=201", http.StatusBadRequest, "/bad_request"},
		{"bad cursor", "/accounts/" + account + "/payments?cursor=abc", http.StatusBadRequest, "/bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, s.URL+tc.path, nil)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Type"), "application/problem+json")
			var p struct {
				Type   string `json:"type"`
				Status int    `json:"status"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
			assert.True(t, strings.HasPrefix(p.Type, "https://stellar.org/horizon-errors/"), p.Type)
			assert.True(t, strings.HasSuffix(p.Type, tc.typeTail), p.Type)
			assert.Equal(t, tc.status, p.Status)
		})
	}
}

func TestFailureInjection(t *testing.T) {
	tests := []struct {
		name       string
		inject     func(s *horizontest.Server)
		status     int
		retryAfter string
		typeTail   string
	}{
		{"429", func(s *horizontest.Server) { s.FailNext(http.StatusTooManyRequests, 2) }, 429, "1", "rate_limit_exceeded"},
		{"503", func(s *horizontest.Server) { s.FailNext(http.StatusServiceUnavailable, 2) }, 503, "1", "server_over_capacity"},
		{"500", func(s *horizontest.Server) { s.FailNext(http.StatusInternalServerError, 2) }, 500, "", "server_error"},
		{"410", func(s *horizontest.Server) { s.GoneNext(2) }, 410, "", "before_history"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			tc.inject(s)
			u := s.URL + "/accounts/" + account + "/payments"
			for i := range 2 {
				resp := get(t, u, nil)
				assert.Equal(t, tc.status, resp.StatusCode, "request %d", i)
				assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
				body, _ := io.ReadAll(resp.Body)
				assert.Contains(t, string(body), tc.typeTail)
			}
			assert.Equal(t, http.StatusOK, get(t, u, nil).StatusCode, "only the next n fail")
			assert.Len(t, s.Requests(), 3)
		})
	}
}

// sseEvent is a test-side view of one event or comment on a stream.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// readEvents reads a stream's events onto a channel until it ends; the
// final error (nil for a clean end) follows on errc.
func readEvents(body io.Reader) (<-chan sseEvent, <-chan error) {
	out := make(chan sseEvent, 100)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		br := bufio.NewReader(body)
		var ev sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				errc <- err
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				out <- sseEvent{comment: true}
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					ev.id = v
				case "event":
					ev.event = v
				case "data":
					ev.data = v
				}
			}
		}
	}()
	return out, errc
}

// nextData returns the next event with data, skipping comments.
func nextData(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "stream ended")
			if !ev.comment {
				return ev
			}
		case <-timeout:
			require.FailNow(t, "no event")
		}
	}
}

func openStream(t *testing.T, s *horizontest.Server, query string) (<-chan sseEvent, <-chan error) {
	t.Helper()
	resp := get(t, s.URL+"/accounts/"+account+"/payments?"+query, http.Header{"Accept": {"text/event-stream"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	return readEvents(resp.Body)
}

func TestStream(t *testing.T) {
	s := newServer(t)
	s.SetKeepAlive(20 * time.Millisecond)
	old := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	backlog := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "2.0000000"})

	events, errc := openStream(t, s, "join=transactions&limit=3&cursor="+old)
	hello := nextData(t, events)
	assert.Equal(t, `"hello"`, hello.data)

	ev := nextData(t, events)
	assert.Equal(t, backlog, ev.id, "records after the cursor first")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rec))
	assert.Equal(t, backlog, rec["paging_token"])
	assert.Contains(t, rec, "transaction")

	live := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "3.0000000"})
	assert.Equal(t, live, nextData(t, events).id, "new records are pushed")

	var sawKeepAlive bool
	for !sawKeepAlive {
		select {
		case ev := <-events:
			sawKeepAlive = ev.comment
		case <-time.After(time.Second):
			require.FailNow(t, "no keep-alive")
		}
	}

	third := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "4.0000000"})
	assert.Equal(t, third, nextData(t, events).id)
	bye := nextData(t, events)
	assert.Equal(t, "close", bye.event, "the stream closes after limit records, as Horizon's does")
	assert.Equal(t, `"byebye"`, bye.data)
	assert.NoError(t, <-errc)
}

func TestStreamDrop(t *testing.T) {
	s := newServer(t)
	events, errc := openStream(t, s, "")
	nextData(t, events) // hello
	s.DropStreamAfter(2)
	a := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	b := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	assert.Equal(t, a, nextData(t, events).id)
	assert.Equal(t, b, nextData(t, events).id)
	select {
	case err := <-errc:
		assert.Error(t, err, "an abrupt drop, not a clean end")
	case <-time.After(3 * time.Second):
		require.FailNow(t, "stream not dropped")
	}

	events, _ = openStream(t, s, "")
	nextData(t, events)
	assert.Equal(t, a, nextData(t, events).id, "the drop applies once")
}

func TestDuplicateAndWithhold(t *testing.T) {
	s := newServer(t)
	s.DuplicateNext(1)
	dup := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	s.WithholdNext(1)
	hidden := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})
	plain := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1.0000000"})

	assert.Equal(t, []string{dup, dup, hidden, plain}, ids(getPage(t, s, "")))

	events, _ := openStream(t, s, "")
	nextData(t, events) // hello
	assert.Equal(t, dup, nextData(t, events).id)
	assert.Equal(t, dup, nextData(t, events).id, "sent twice")
	assert.Equal(t, plain, nextData(t, events).id, "the withheld record is never streamed")
}

func TestSilenceStream(t *testing.T) {
	s := newServer(t)
	s.SilenceStream(300 * time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/accounts/"+account+"/payments", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	_, err = http.DefaultClient.Do(req)
	assert.Error(t, err, "a silenced stream sends not even headers")

	assert.Equal(t, http.StatusOK, get(t, s.URL+"/accounts/"+account+"/payments", nil).StatusCode, "pages still answer")

	start := time.Now()
	events, _ := openStream(t, s, "")
	assert.Equal(t, `"hello"`, nextData(t, events).data)
	assert.Greater(t, time.Since(start), 100*time.Millisecond, "the stream waited out the silence")
	assert.Equal(t, 1, s.StreamsOpened(), "only answered streams count")
}

func TestControlPayments(t *testing.T) {
	s := horizontest.New(account)
	t.Cleanup(s.Close)
	s.SetUSDCIssuer(issuer)
	post := func(body string) *http.Response {
		resp, err := http.Post(s.URL+horizontest.ControlPaymentsPath, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	resp := post(`{"amount":"117.73","asset":"usdc","memo":"12345678906"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var created struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp = post(`{"amount":"5","asset":"XLM"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	p := getPage(t, s, "join=transactions&limit=10")
	require.Len(t, p.Embedded.Records, 2)
	usdc, xlm := p.Embedded.Records[0], p.Embedded.Records[1]
	assert.Equal(t, created.ID, usdc["paging_token"])
	assert.Equal(t, "USDC", usdc["asset_code"])
	assert.Equal(t, issuer, usdc["asset_issuer"])
	assert.Equal(t, "117.7300000", usdc["amount"])
	assert.Equal(t, horizontest.DevPayer, usdc["from"])
	tx := usdc["transaction"].(map[string]any)
	assert.Equal(t, "text", tx["memo_type"])
	assert.Equal(t, "12345678906", tx["memo"])
	assert.Equal(t, "native", xlm["asset_type"])

	assert.Equal(t, http.StatusBadRequest, post(`{"asset":"USDC"}`).StatusCode, "no amount")
	assert.Equal(t, http.StatusBadRequest, post(`{"amount":"1.12345678"}`).StatusCode, "more than 7 places")
	assert.Equal(t, http.StatusBadRequest, post(`{"amount":"0"}`).StatusCode, "zero")
	assert.Equal(t, http.StatusBadRequest, post(`{"amount":"-1"}`).StatusCode, "negative")
	assert.Equal(t, http.StatusBadRequest, post(`{"amount":"1","bogus":1}`).StatusCode, "unknown field")
}
