package app

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

var webhooksUsage = `Usage:
  memocart webhooks create --account NAME --mode test|live --url URL --events TYPE[,TYPE...] [--description TEXT]
      Registers an endpoint of an existing account, as POST /v1/webhook_endpoints
      does (same URL rules), and prints its signing secret, once, on stdout
      (nothing else goes to stdout). --events "*" subscribes to every event.
  memocart webhooks list [--account NAME] [--json]
      Every endpoint, deleted and disabled ones included, with why it was disabled.
  memocart webhooks delete ENDPOINT_ID
  memocart webhooks deliveries [--event EVENT_ID] [--limit N] ENDPOINT_ID
      The endpoint's delivery attempts, newest first.

Event types: ` + eventTypeList() + `.
Works on the database of MEMOCART_DATABASE_URL, or the dev SQLite file (also while dev runs).`

// eventTypeList is every event type a webhook endpoint may subscribe to,
// as models lists them, for the help text.
func eventTypeList() string {
	names := make([]string, len(models.EventTypes))
	for i, t := range models.EventTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// runWebhooks is `memocart webhooks`.
func runWebhooks(ctx context.Context, e Env, args []string) error {
	return runSubcommands(ctx, e, "webhooks", webhooksUsage, args,
		subcommand{"create", webhooksCreate}, subcommand{"list", webhooksList},
		subcommand{"delete", webhooksDelete}, subcommand{"deliveries", webhooksDeliveries})
}

func webhooksFlagSet(e Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("webhooks "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() { fmt.Fprintln(e.Stderr, webhooksUsage); fs.PrintDefaults() }
	return fs
}

func webhooksCreate(ctx context.Context, e Env, args []string) error {
	fs := webhooksFlagSet(e, "create")
	account := fs.String("account", "", "the account's name (memocart keys list)")
	mode := fs.String("mode", "", "test or live: the events of which keys it receives")
	rawURL := fs.String("url", "", "where events are POSTed")
	events := fs.String("events", "", `comma-separated event types, or "*" for all`)
	description := fs.String("description", "", "free text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m := models.Mode(*mode)
	errs := accountModeErrs(*account, m)
	u, err := models.WebhookPolicyFor(m, e.Cfg.WebhookTestLoopback).CheckURL(strings.TrimSpace(*rawURL))
	if err != nil {
		errs = append(errs, fmt.Errorf("--url: %s", cliMessage(err)))
	}
	var types []string
	for _, t := range strings.Split(*events, ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, t)
		}
	}
	enabled, err := models.NormalizeEnabledEvents(types)
	if err != nil {
		errs = append(errs, fmt.Errorf("--events: %s", cliMessage(err)))
	}
	if len(*description) > 200 {
		errs = append(errs, errors.New("--description must be at most 200 characters"))
	}
	st, err := openMigratedStoreUnless(ctx, e, errs)
	if err != nil {
		return err
	}
	defer st.Close()
	acct, err := st.AccountByName(ctx, *account)
	if err != nil {
		return fmt.Errorf("account %q: %w", *account, err)
	}
	secret, err := models.NewWebhookSecret(rand.Reader)
	if err != nil {
		return err
	}
	ep, err := st.CreateWebhookEndpoint(ctx, models.WebhookEndpoint{
		AccountID: acct.ID, Mode: m, URL: u, Description: strings.TrimSpace(*description), EnabledEvents: enabled,
		Secret: secret, CreatedAt: time.Now().UTC().Truncate(time.Second),
	})
	if err != nil {
		return errors.New(cliMessage(err))
	}
	fmt.Fprintf(e.Stderr, "created webhook endpoint %s for account %s (%s mode) to %s, events %s; its signing secret is shown once:\n",
		ep.ID, acct.Name, ep.Mode, ep.URL, joinTypes(ep.EnabledEvents))
	_, err = fmt.Fprintln(e.Stdout, secret)
	return err
}

// cliMessage is a model error's message without its code prefix.
func cliMessage(err error) string {
	var me *models.Error
	if errors.As(err, &me) {
		return me.Message
	}
	return err.Error()
}

func joinTypes(ts []models.EventType) string { return strings.Join(eventNames(ts), ",") }

func eventNames(ts []models.EventType) []string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = string(t)
	}
	return parts
}

func webhooksList(ctx context.Context, e Env, args []string) error {
	return runList(ctx, e, webhooksFlagSet(e, "list"), args, "endpoints", listing[sqlstore.StoredWebhookEndpoint, endpointOut]{
		rows: func(ctx context.Context, st *sqlstore.Store, account string) ([]sqlstore.StoredWebhookEndpoint, error) {
			return st.AllWebhookEndpoints(ctx, account)
		},
		json: func(ep sqlstore.StoredWebhookEndpoint) endpointOut {
			return endpointOut{ID: ep.ID, Account: ep.AccountName, Mode: string(ep.Mode), Status: endpointStatus(ep), URL: ep.URL,
				Events: eventNames(ep.EnabledEvents), CreatedAt: ep.CreatedAt.UTC(), LastSuccessAt: ep.LastSuccessAt,
				DisabledAt: ep.DisabledAt, DisabledReason: ep.DisabledReason, DeletedAt: ep.DeletedAt}
		},
		header: "ID\tACCOUNT\tMODE\tSTATUS\tURL\tEVENTS\tCREATED\tLAST_SUCCESS\tDISABLED_REASON",
		line: func(ep sqlstore.StoredWebhookEndpoint) string {
			last := "-"
			if ep.LastSuccessAt != nil {
				last = ep.LastSuccessAt.Format(time.RFC3339)
			}
			reason := ep.DisabledReason
			if reason == "" {
				reason = "-"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", ep.ID, ep.AccountName, ep.Mode, endpointStatus(ep), ep.URL,
				joinTypes(ep.EnabledEvents), ep.CreatedAt.Format(time.RFC3339), last, reason)
		},
	})
}

// endpointOut is an endpoint as webhooks list --json prints it; never its
// secret.
type endpointOut struct {
	ID             string     `json:"id"`
	Account        string     `json:"account"`
	Mode           string     `json:"mode"`
	Status         string     `json:"status"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	CreatedAt      time.Time  `json:"created_at"`
	LastSuccessAt  *time.Time `json:"last_success_at"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason string     `json:"disabled_reason"`
	DeletedAt      *time.Time `json:"deleted_at"`
}

// endpointStatus is enabled, disabled (by failing deliveries) or deleted.
func endpointStatus(ep sqlstore.StoredWebhookEndpoint) string {
	switch {
	case ep.DeletedAt != nil:
		return "deleted"
	case ep.DisabledAt != nil:
		return "disabled"
	}
	return "enabled"
}

func webhooksDelete(ctx context.Context, e Env, args []string) error {
	id, st, err := parseOneArgStore(ctx, e, webhooksFlagSet(e, "delete"), args, "webhooks delete takes exactly one ENDPOINT_ID (see webhooks list)")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteWebhookEndpointByID(ctx, id, time.Now()); err != nil {
		return fmt.Errorf("%s: %s", id, cliMessage(err))
	}
	_, err = fmt.Fprintf(e.Stdout, "deleted %s: nothing is delivered to it any more\n", id)
	return err
}

func webhooksDeliveries(ctx context.Context, e Env, args []string) error {
	fs := webhooksFlagSet(e, "deliveries")
	event := fs.String("event", "", "only this event's attempts")
	limit := fs.Int("limit", 50, fmt.Sprintf("how many attempts, at most %d", sqlstore.MaxAttemptsListed))
	id, err := parseOneArg(fs, args, "webhooks deliveries takes exactly one ENDPOINT_ID (see webhooks list)")
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > sqlstore.MaxAttemptsListed {
		return fmt.Errorf("--limit must be from 1 to %d", sqlstore.MaxAttemptsListed)
	}
	st, err := openMigratedStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.WebhookEndpointByID(ctx, id); err != nil {
		return fmt.Errorf("%s: %s", id, cliMessage(err))
	}
	as, err := st.WebhookAttempts(ctx, id, *event, *limit)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tEVENT\tTYPE\tATTEMPT\tRESULT\tSTATUS\tDURATION\tNEXT_RETRY\tERROR")
	for _, a := range as {
		result, status, next, msg := "failed", "-", "-", a.Error
		if a.Succeeded {
			result = "succeeded"
		}
		if a.Resend {
			result += " (resend)"
		}
		if a.ResponseStatus != 0 {
			status = fmt.Sprint(a.ResponseStatus)
		}
		if a.NextRetryAt != nil {
			next = a.NextRetryAt.Format(time.RFC3339)
		}
		if msg == "" {
			msg = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", a.At.Format(time.RFC3339), a.EventID, a.EventType, a.Attempt,
			result, status, a.Duration, next, msg)
	}
	return tw.Flush()
}
