package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memocart/memocart/activities/webhooks"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
)

const listenUsage = `Usage: devstack listen --forward-to URL [flags]

Forwards the events of the dev stack's test account to a local URL, as its
webhook endpoint would receive them: it follows GET /v1/events from the
newest event at its start, and POSTs each new event, oldest first, with the
headers of a delivery (Memocart-Signature signed with the secret it prints,
Memocart-Event-Id, Memocart-Event-Type) and the event's body byte for byte.
One line per delivery: the time, the event's type and id, and the answer.
A delivery that fails is not retried (send the event again through
POST /v1/webhook_endpoints/{id}/deliveries/{event_id}/resend with a real
endpoint, or replay it from GET /v1/events/{id}).

The API is the dev stack's (http://MEMOCART_HTTP_ADDR) and the key its
printed test key (MEMOCART_DEV_API_KEY, or the one kept in
MEMOCART_DATA_DIR), unless the flags say otherwise.

Flags:`

// runListen is `devstack listen`.
func runListen(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("listen", listenUsage, e.Stderr)
	var o listenOptions
	fs.StringVar(&o.forwardTo, "forward-to", "", "the local URL events are POSTed to (required)")
	fs.StringVar(&o.api, "api", "http://"+e.Cfg.HTTPAddr, "the API's base URL")
	fs.StringVar(&o.key, "key", "", "a test API key (default: the dev stack's)")
	fs.StringVar(&o.secret, "secret", "", "the signing secret (default: a new one, printed)")
	fs.DurationVar(&o.every, "interval", time.Second, "how often new events are asked for")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if u, err := url.Parse(o.forwardTo); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fs.Usage()
		return errors.New("listen: --forward-to must be an http(s) URL, such as http://localhost:4242/webhooks")
	}
	if o.every <= 0 {
		return errors.New("listen: --interval must be positive")
	}
	if o.key == "" {
		o.key = e.Cfg.DevAPIKey
	}
	if o.key == "" {
		b, err := os.ReadFile(filepath.Join(e.Cfg.DataDir, "dev-api-key"))
		if err != nil {
			return fmt.Errorf("listen: no --key, MEMOCART_DEV_API_KEY or kept dev key (%w): start the dev stack (make run) first", err)
		}
		o.key = strings.TrimSpace(string(b))
	}
	if mode, err := models.ParseAPIKey(e.Cfg.KeyPrefix, o.key); err != nil || mode != models.ModeTest {
		return errors.New("listen: the key must be a test key: listen forwards test events only")
	}
	if o.secret == "" {
		s, err := models.NewID("whsec", rand.Reader)
		if err != nil {
			return err
		}
		o.secret = s
	}
	return listen(ctx, o, e.Stdout)
}

type listenOptions struct {
	forwardTo, api, key, secret string
	every                       time.Duration
}

// listen follows the account's events and forwards each new one until ctx
// ends. Reading the events is retried every interval; a delivery is made
// once.
func listen(ctx context.Context, o listenOptions, out io.Writer) error {
	api := &http.Client{Timeout: 10 * time.Second}
	// The same sender as the service's, on its test-mode policy with
	// loopback allowed: what a test endpoint on this machine would get.
	sender := webhooks.NewSender(webhooks.Config{TestLoopback: true})
	newest, err := newestEvent(ctx, api, o)
	if err != nil {
		return fmt.Errorf("listen: reading the events API at %s: %w", o.api, err)
	}
	fmt.Fprintf(out, "Forwarding the events of this key's account to %s\n", o.forwardTo)
	fmt.Fprintf(out, "Signing secret: %s\n", o.secret)
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		evs, err := eventsAfter(ctx, api, o, newest)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(out, "%s  reading events: %v (retrying)\n", time.Now().UTC().Format(time.TimeOnly), err)
			continue
		}
		for _, ev := range evs {
			fmt.Fprintln(out, forward(ctx, sender, o, ev))
			newest = ev.id
		}
	}
}

// listedEvent is one event of the list: its body as delivered, and the
// id and type read from it.
type listedEvent struct {
	id   string
	typ  models.EventType
	body []byte
}

// eventPage is GET /v1/events' answer, each event kept as its bytes.
type eventPage struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// newestEvent returns the id of the account's newest event ("" when it
// has none): listening starts after it.
func newestEvent(ctx context.Context, c *http.Client, o listenOptions) (string, error) {
	page, _, err := getEventPage(ctx, c, o, url.Values{"limit": {"1"}})
	if err != nil || len(page) == 0 {
		return "", err
	}
	return page[0].id, nil
}

// eventsAfter returns the events recorded after the event after (every
// event when it is ""), oldest first.
func eventsAfter(ctx context.Context, c *http.Client, o listenOptions, after string) ([]listedEvent, error) {
	var newestFirst []listedEvent
	q := url.Values{"limit": {"100"}}
	for {
		if after != "" {
			q.Set("ending_before", after)
		}
		page, more, err := getEventPage(ctx, c, o, q)
		if err != nil {
			return nil, err
		}
		if after != "" {
			// Towards the newest: each page is newer than the last.
			newestFirst = append(page, newestFirst...)
			if !more || len(page) == 0 {
				break
			}
			after = page[0].id
			continue
		}
		// From the newest back: each page is older than the last.
		newestFirst = append(newestFirst, page...)
		if !more || len(page) == 0 {
			break
		}
		q.Set("starting_after", page[len(page)-1].id)
	}
	slices.Reverse(newestFirst)
	return newestFirst, nil
}

func getEventPage(ctx context.Context, c *http.Client, o listenOptions, q url.Values) ([]listedEvent, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(o.api, "/")+"/v1/events?"+q.Encode(), nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	res, err := c.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, false, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("HTTP %d: %s", res.StatusCode, strings.TrimSpace(string(body)))
	}
	var page eventPage
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, false, fmt.Errorf("reading the page: %w", err)
	}
	out := make([]listedEvent, len(page.Data))
	for i, raw := range page.Data {
		var head struct {
			ID   string           `json:"id"`
			Type models.EventType `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, false, fmt.Errorf("reading an event: %w", err)
		}
		out[i] = listedEvent{id: head.ID, typ: head.Type, body: raw}
	}
	return out, page.HasMore, nil
}

// forward delivers one event and returns the line that says how it went.
func forward(ctx context.Context, sender *webhooks.Sender, o listenOptions, ev listedEvent) string {
	start := time.Now()
	status, err := sender.Send(ctx, models.ModeTest, o.forwardTo, models.WebhookHeader(o.secret, start, ev.id, ev.typ, ev.body), ev.body)
	line := fmt.Sprintf("%s  %-17s %s  -> ", start.UTC().Format(time.TimeOnly), ev.typ, ev.id)
	if err != nil {
		return line + "failed: " + err.Error()
	}
	return line + fmt.Sprintf("%d %s (%s)", status, http.StatusText(status), time.Since(start).Round(time.Millisecond))
}
