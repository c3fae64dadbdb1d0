package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/workflows"
)

const paymentsUsage = `Usage:
  memocart payments list [--json]
      Payments that matched no order, open alerts, and money owed back that
      no refund covers (from before refunds were paid out), which an
      operator sends by hand; the refunds are listed by memocart refunds list.
  memocart payments attach PAYMENT_ID ORDER_NUMBER
      Attach an unmatched payment to an order (the payer got the memo wrong);
      the order's workflow counts it like any matched payment.
  memocart payments mark-refunded --tx HASH (--payment PAYMENT_ID | --order ORDER_NUMBER)
      Record money listed as owed back by hand that an operator sent outside
      the service. Money a refund covers is refused: use memocart refunds
      mark-sent or cancel on that refund. A cancelled or failed order's money
      goes through its workflow while it is open (it waits up to 90 days for
      it), which records it and closes.
  memocart payments clear-alert KIND
      Mark an alert (e.g. stellar_before_history) as handled.

Works on the database of MEMOCART_DATABASE_URL (or the dev SQLite file, which it
never creates); attach also signals the order's workflow on the Temporal cluster
of MEMOCART_TEMPORAL_ADDRESS, after the database has accepted the attachment,
and mark-refunded --order asks an open order workflow to record the refund.`

// runPayments is `memocart payments`.
func runPayments(ctx context.Context, e Env, args []string) error {
	return runSubcommands(ctx, e, "payments", paymentsUsage, args,
		subcommand{"list", onOperatorStore(paymentsList)}, subcommand{"attach", onOperatorStore(paymentsAttach)},
		subcommand{"mark-refunded", onOperatorStore(paymentsMarkRefunded)}, subcommand{"clear-alert", onOperatorStore(paymentsClearAlert)})
}

func paymentsClearAlert(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	if len(args) != 1 {
		return errors.New("clear-alert takes exactly one KIND")
	}
	err := st.ClearAlert(ctx, args[0], time.Now())
	if errors.Is(err, sqlstore.ErrNoOpenAlert) {
		open, lerr := st.OpenAlerts(ctx)
		if lerr != nil {
			return lerr
		}
		kinds := make([]string, len(open))
		for i, a := range open {
			kinds[i] = a.Kind
		}
		return fmt.Errorf("no open alert %q (open: %s)", args[0], dash(strings.Join(kinds, ", ")))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "alert %s cleared\n", args[0])
	return nil
}

// paymentsOut is payments list --json.
type paymentsOut struct {
	Counts     map[string]int64 `json:"counts"`
	Alerts     []alertOut       `json:"alerts"`
	Unmatched  []paymentOut     `json:"unmatched"`
	RefundsDue []refundOut      `json:"refunds_due"`
}

type alertOut struct {
	Kind   string    `json:"kind"`
	Count  int       `json:"count"`
	LastAt time.Time `json:"last_at"`
	Detail string    `json:"detail"`
}

// paymentOut carries amounts as decimal strings, as the API does.
type paymentOut struct {
	ID         string    `json:"id"`
	Mode       string    `json:"mode"`
	Amount     string    `json:"amount"`
	Asset      string    `json:"asset"`
	Memo       string    `json:"memo"`
	MemoType   string    `json:"memo_type"`
	Sender     string    `json:"sender"`
	TxHash     string    `json:"tx_hash"`
	ReceivedAt time.Time `json:"received_at"`
}

type refundOut struct {
	OrderNumber string   `json:"order_number"`
	PaymentID   string   `json:"payment_id"`
	Amount      string   `json:"amount"`
	Asset       string   `json:"asset"`
	To          []string `json:"to"`
	Reason      string   `json:"reason"`
}

func paymentsList(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	fs := flag.NewFlagSet("payments list", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	asJSON := fs.Bool("json", false, "print one JSON object: counts, alerts, unmatched, refunds_due")
	if err := fs.Parse(args); err != nil {
		return err
	}
	alerts, err := st.OpenAlerts(ctx)
	if err != nil {
		return err
	}
	unmatched, err := st.Payments(ctx, sqlstore.PaymentUnmatched)
	if err != nil {
		return err
	}
	refunds, err := st.RefundsDue(ctx)
	if err != nil {
		return err
	}
	counts, err := st.PaymentCounts(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		out := paymentsOut{Counts: counts, Alerts: []alertOut{}, Unmatched: []paymentOut{}, RefundsDue: []refundOut{}}
		for _, a := range alerts {
			out.Alerts = append(out.Alerts, alertOut{Kind: a.Kind, Count: a.Count, LastAt: a.LastAt.UTC(), Detail: a.Detail})
		}
		for _, p := range unmatched {
			out.Unmatched = append(out.Unmatched, paymentOut{ID: p.ID, Mode: string(p.Mode), Amount: p.Amount.String(), Asset: p.Asset,
				Memo: p.Memo, MemoType: p.MemoType, Sender: p.Sender, TxHash: p.TxHash, ReceivedAt: p.ReceivedAt.UTC()})
		}
		for _, r := range refunds {
			out.RefundsDue = append(out.RefundsDue, refundOut{OrderNumber: r.OrderNumber, PaymentID: r.PaymentID,
				Amount: r.Amount.String(), Asset: r.Asset, To: r.Senders, Reason: r.Reason})
		}
		return printJSON(e, out)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PAYMENTS: %d matched, %d unmatched, %d late, %d refund_due, %d refunded, %d not yet matched\n\n",
		counts[sqlstore.PaymentMatched], counts[sqlstore.PaymentUnmatched], counts[sqlstore.PaymentLate],
		counts[sqlstore.PaymentRefundDue], counts[sqlstore.PaymentRefunded], counts[sqlstore.PaymentReceived])
	if len(alerts) > 0 {
		fmt.Fprintln(tw, "OPEN ALERTS\nKIND\tCOUNT\tLAST\tDETAIL")
		for _, a := range alerts {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", a.Kind, a.Count, a.LastAt.Format(time.RFC3339), a.Detail)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "UNMATCHED PAYMENTS (%d)\nPAYMENT\tMODE\tAMOUNT\tMEMO\tSENDER\tTX\tRECEIVED\n", len(unmatched))
	for _, p := range unmatched {
		memo := p.Memo
		if p.MemoType != "" && p.MemoType != "text" {
			memo = p.MemoType + ":" + memo
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%s\n", p.ID, p.Mode, p.Amount, p.Asset, memo, p.Sender, p.TxHash, p.ReceivedAt.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "\nOWED BACK BY HAND (%d; no refund covers it: memocart refunds list has the refunds)\nORDER\tPAYMENT\tAMOUNT\tTO\tREASON\n", len(refunds))
	for _, r := range refunds {
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\n", dash(r.OrderNumber), dash(r.PaymentID), r.Amount, r.Asset, dash(strings.Join(r.Senders, ",")), r.Reason)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func paymentsAttach(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	if len(args) != 2 {
		return errors.New("attach takes PAYMENT_ID ORDER_NUMBER")
	}
	number, ok := models.NormalizeOrderNumber(args[1])
	if !ok {
		return fmt.Errorf("%q is not a valid order number", args[1])
	}
	// A lazy client: the database decides first (unknown payment, one
	// already matched, unknown order), and Temporal is contacted only to
	// signal an attachment the database accepted.
	opts, err := TemporalOptions(e, e.Cfg.TemporalAddress)
	if err != nil {
		return err
	}
	tc, err := client.NewLazyClient(opts)
	if err != nil {
		return err
	}
	defer tc.Close()
	sigCtx, cancel := context.WithTimeout(ctx, workflowCallTimeout)
	defer cancel()
	matcher, err := checkout.NewMatcher(st, workflows.NewClient(tc, e.Cfg.TemporalTaskQueue), e.Log)
	if err != nil {
		return err
	}
	outcome, err := matcher.Attach(sigCtx, args[0], number)
	if errors.Is(err, checkout.ErrSignal) {
		return fmt.Errorf("payment %s is attached to order %s, but its workflow could not be told (%w); "+
			"memocart api re-drives it every MEMOCART_RECONCILE_INTERVAL once Temporal answers", args[0], number, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "payment %s attached to order %s: %s\n", args[0], number, outcome)
	return nil
}

func paymentsMarkRefunded(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	fs := flag.NewFlagSet("payments mark-refunded", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	tx := fs.String("tx", "", "hash of the refund transaction")
	paymentID := fs.String("payment", "", "a late or wrong-asset payment sent back whole")
	order := fs.String("order", "", "an order whose received money (or excess) was sent back")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tx == "" || (*paymentID == "") == (*order == "") {
		return errors.New("mark-refunded needs --tx and exactly one of --payment or --order")
	}
	wf := &lazyWorkflows{e: e}
	defer wf.close()
	uses, err := checkout.NewHandRefunds(st, wf, nil)
	if err != nil {
		return err
	}
	if *paymentID != "" {
		if err := uses.RecordPaymentRefund(ctx, *paymentID, *tx); err != nil {
			return fmt.Errorf("payment %s: %w", *paymentID, err)
		}
		fmt.Fprintf(e.Stdout, "payment %s marked refunded in %s\n", *paymentID, *tx)
		return nil
	}
	number, ok := models.NormalizeOrderNumber(*order)
	if !ok {
		return fmt.Errorf("%q is not a valid order number", *order)
	}
	r, err := uses.RecordOrderRefund(ctx, checkout.OrderRefundRequest{Number: number, TxHash: *tx, RecordedBy: "memocart payments mark-refunded"})
	var setup temporalSetupError
	switch {
	case errors.As(err, &setup):
		return fmt.Errorf("order %s: %w", number, setup.err)
	case errors.Is(err, checkout.ErrRefundNotRecorded):
		return fmt.Errorf("order %s: %w; check memocart payments list and run the command again", number, err)
	case err != nil:
		return fmt.Errorf("order %s: %w", number, err)
	case r.ThroughWorkflow:
		fmt.Fprintf(e.Stdout, "order %s marked refunded in %s (%s %s); its workflow recorded it and closes\n",
			number, *tx, r.Amount, r.Asset)
	default:
		fmt.Fprintf(e.Stdout, "order %s marked refunded in %s\n", number, *tx)
	}
	return nil
}

func (w *lazyWorkflows) RecordRefund(ctx context.Context, orderID string, r workflows.RefundRequest) (workflows.RefundResult, error) {
	return onWorkflows(ctx, w, func(ctx context.Context, c *workflows.Client) (workflows.RefundResult, error) {
		return c.RecordRefund(ctx, orderID, r)
	})
}

// temporalSetupError is a client configuration the command could not use:
// reported as it is, not as the workflow's answer.
type temporalSetupError struct{ err error }

func (e temporalSetupError) Error() string { return e.err.Error() }
func (e temporalSetupError) Unwrap() error { return e.err }
