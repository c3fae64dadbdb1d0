package app

import (
	"context"
	"encoding/json"
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

const refundsUsage = `Usage:
  memocart refunds list [--status STATUS] [--json]
      Refunds of every account, oldest first: all, or those of one status
      (awaiting_destination, awaiting_approval, sending, sent, failed,
      cancelled).
  memocart refunds show REFUND_ID [--json]
      One refund, with its destination and transaction.
  memocart refunds approve REFUND_ID
      Approve the payout of a refund awaiting approval, or retry a failed
      one to the same destination.
  memocart refunds cancel REFUND_ID
      The refund was settled another way: nothing will be sent.
  memocart refunds mark-sent REFUND_ID --tx HASH
      The refund was paid from another wallet, in transaction HASH.
  memocart refunds create --payment PAYMENT_ID
      Refund a payment that matched no order (see memocart payments list).

Reads the database of MEMOCART_DATABASE_URL (or the dev SQLite file, which it
never creates); approve, cancel, mark-sent and create ask the refund's
workflow on the Temporal cluster of MEMOCART_TEMPORAL_ADDRESS, which writes
the move.`

// runRefunds is `memocart refunds`.
func runRefunds(ctx context.Context, e Env, args []string) error {
	move := func(action string) subcommand {
		return subcommand{action, onOperatorStore(func(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
			return refundsMove(ctx, e, st, action, args)
		})}
	}
	return runSubcommands(ctx, e, "refunds", refundsUsage, args,
		subcommand{"list", onOperatorStore(refundsList)}, subcommand{"show", onOperatorStore(refundsShow)},
		move("approve"), move("cancel"), move("mark-sent"), subcommand{"create", onOperatorStore(refundsCreate)})
}

func refundsList(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	fs := flag.NewFlagSet("refunds list", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	status := fs.String("status", "", "only refunds of this status")
	asJSON := fs.Bool("json", false, "print JSON, one array")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var statuses []models.RefundStatus
	if *status != "" {
		s := models.RefundStatus(*status)
		if !s.Valid() {
			return fmt.Errorf("unknown refund status %q", *status)
		}
		statuses = append(statuses, s)
	}
	rs, err := st.Refunds(ctx, statuses...)
	if err != nil {
		return err
	}
	if *asJSON {
		return printRefundsJSON(e, rs)
	}
	if len(rs) == 0 {
		fmt.Fprintln(e.Stdout, "no refunds")
		return nil
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATUS\tAMOUNT\tMODE\tORDER\tREASON\tCREATED")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s %s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Amount, r.Asset, r.Mode,
			dash(r.OrderID), r.Reason, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	return w.Flush()
}

func refundsShow(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	id, rest := firstArg(args)
	fs := flag.NewFlagSet("refunds show", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if id == "" || fs.NArg() > 0 {
		return errors.New("show takes exactly one REFUND_ID")
	}
	r, err := st.Refund(ctx, id)
	if err != nil {
		return fmt.Errorf("refund %s: %w", id, err)
	}
	if *asJSON {
		return printRefundsJSON(e, []models.Refund{r})
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "id\t%s\nstatus\t%s\namount\t%s %s\nmode\t%s\norder\t%s\npayments\t%s\nreason\t%s\n",
		r.ID, r.Status, r.Amount, r.Asset, r.Mode, dash(r.OrderID), strings.Join(r.PaymentIDs, ", "), r.Reason)
	if r.Value != nil {
		fmt.Fprintf(w, "value\t%s\n", r.Value)
	}
	if d := r.Destination; d != nil {
		to := d.Address
		if d.ToSender {
			to = "the paying account"
		}
		fmt.Fprintf(w, "destination\t%s\n", to)
		if d.MemoType != "" {
			fmt.Fprintf(w, "memo\t%s %s\n", d.MemoType, d.Memo)
		}
	}
	if r.TransactionHash != "" {
		fmt.Fprintf(w, "transaction\t%s\n", r.TransactionHash)
	}
	if r.FailureReason != "" {
		fmt.Fprintf(w, "failure\t%s\n", r.FailureReason)
	}
	fmt.Fprintf(w, "created\t%s\nworkflow\t%s\n", r.CreatedAt.UTC().Format(time.RFC3339), models.RefundWorkflowID(r.ID))
	return w.Flush()
}

// refundView is a refund as the CLI prints it in JSON: the model's fields
// under stable names, without the payout's envelope.
type refundView struct {
	ID              string                    `json:"id"`
	Status          models.RefundStatus       `json:"status"`
	Amount          string                    `json:"amount"`
	Asset           string                    `json:"asset"`
	Mode            models.Mode               `json:"mode"`
	OrderID         string                    `json:"order_id,omitempty"`
	PaymentIDs      []string                  `json:"payment_ids"`
	Reason          models.RefundReason       `json:"reason"`
	Destination     *models.RefundDestination `json:"destination,omitempty"`
	TransactionHash string                    `json:"transaction_hash,omitempty"`
	FailureReason   string                    `json:"failure_reason,omitempty"`
	CreatedAt       time.Time                 `json:"created_at"`
}

func printRefundsJSON(e Env, rs []models.Refund) error {
	out := make([]refundView, len(rs))
	for i, r := range rs {
		out[i] = refundView{
			ID: r.ID, Status: r.Status, Amount: r.Amount.String(), Asset: r.Asset, Mode: r.Mode, OrderID: r.OrderID,
			PaymentIDs: r.PaymentIDs, Reason: r.Reason, Destination: r.Destination, TransactionHash: r.TransactionHash,
			FailureReason: r.FailureReason, CreatedAt: r.CreatedAt.UTC(),
		}
	}
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// refundsMove is approve, cancel and mark-sent: the refund's workflow
// makes the move.
func refundsMove(ctx context.Context, e Env, st *sqlstore.Store, action string, args []string) error {
	id, rest := firstArg(args)
	fs := flag.NewFlagSet("refunds "+action, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	tx := fs.String("tx", "", "mark-sent: hash of the transaction that paid the refund")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	switch {
	case id == "" || fs.NArg() > 0:
		return fmt.Errorf("%s takes exactly one REFUND_ID", action)
	case action == "mark-sent" && *tx == "":
		return errors.New("mark-sent needs --tx HASH")
	case action != "mark-sent" && *tx != "":
		return fmt.Errorf("%s takes no --tx", action)
	}
	by := workflows.RefundOperatorRequest{By: "memocart refunds " + action, TxHash: *tx}
	var move workflows.RefundMove
	switch action {
	case "approve":
		move = workflows.ApproveRefund(by)
	case "cancel":
		move = workflows.CancelRefund(by)
	case "mark-sent":
		move = workflows.MarkRefundSent(by)
	default:
		return fmt.Errorf("unknown refund action %q", action)
	}
	wf := &lazyWorkflows{e: e}
	defer wf.close()
	uses, err := checkout.NewRefunds(useCaseConfig(e.Cfg), st, st, wf, wf, nil, e.Log)
	if err != nil {
		return err
	}
	r, err := uses.MoveRefund(ctx, id, move)
	if err != nil {
		return fmt.Errorf("refund %s: %w", id, err)
	}
	fmt.Fprintf(e.Stdout, "refund %s is %s\n", r.ID, r.Status)
	return nil
}

func refundsCreate(ctx context.Context, e Env, st *sqlstore.Store, args []string) error {
	fs := flag.NewFlagSet("refunds create", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	paymentID := fs.String("payment", "", "a payment that matched no order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *paymentID == "" || fs.NArg() > 0 {
		return errors.New("create needs --payment PAYMENT_ID")
	}
	ps, err := st.Payments(ctx, string(models.PaymentStateUnmatched))
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.ID != *paymentID {
			continue
		}
		wf := &lazyWorkflows{e: e}
		defer wf.close()
		uses, err := checkout.NewRefunds(useCaseConfig(e.Cfg), st, st, wf, wf, nil, e.Log)
		if err != nil {
			return err
		}
		r, err := uses.RefundUnmatchedPayment(ctx, p.Payment, models.PaymentState(p.Status))
		if err != nil {
			return fmt.Errorf("payment %s: %w", *paymentID, err)
		}
		fmt.Fprintf(e.Stdout, "refund %s of payment %s is %s\n", r.ID, *paymentID, r.Status)
		return nil
	}
	return fmt.Errorf("payment %s is not an unmatched payment (memocart payments list)", *paymentID)
}

// firstArg splits a leading positional argument from the flags after it.
func firstArg(args []string) (string, []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", args
	}
	return args[0], args[1:]
}

// lazyWorkflows is the workflows an operator's command drives
// (checkout.RefundWorkflows, checkout.RefundRuns,
// checkout.OrderRefundWorkflows) on the cluster of
// MEMOCART_TEMPORAL_ADDRESS, connected on first use: a command the
// database alone answers never touches Temporal.
type lazyWorkflows struct {
	e  Env
	tc client.Client
}

func (w *lazyWorkflows) client() (*workflows.Client, error) {
	if w.tc == nil {
		opts, err := TemporalOptions(w.e, w.e.Cfg.TemporalAddress)
		if err != nil {
			return nil, temporalSetupError{err}
		}
		if w.tc, err = client.NewLazyClient(opts); err != nil {
			return nil, temporalSetupError{err}
		}
	}
	return workflows.NewClient(w.tc, w.e.Cfg.TemporalTaskQueue), nil
}

// workflowCallTimeout bounds a command's call to a workflow: an operator
// is told, not left waiting on a cluster that does not answer.
const workflowCallTimeout = 30 * time.Second

// onWorkflows calls call with the workflows' client, connected on first
// use, within workflowCallTimeout.
func onWorkflows[T any](ctx context.Context, w *lazyWorkflows, call func(context.Context, *workflows.Client) (T, error)) (T, error) {
	c, err := w.client()
	if err != nil {
		var zero T
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, workflowCallTimeout)
	defer cancel()
	return call(ctx, c)
}

func (w *lazyWorkflows) StartRefund(ctx context.Context, r models.Refund, orderNumber string) error {
	_, err := onWorkflows(ctx, w, func(ctx context.Context, c *workflows.Client) (struct{}, error) {
		return struct{}{}, c.StartRefund(ctx, r, orderNumber)
	})
	return err
}

func (w *lazyWorkflows) MoveRefund(ctx context.Context, refundID string, move workflows.RefundMove) (models.Refund, error) {
	return onWorkflows(ctx, w, func(ctx context.Context, c *workflows.Client) (models.Refund, error) {
		return c.MoveRefund(ctx, refundID, move)
	})
}

func (w *lazyWorkflows) RefundRunsClosed(ctx context.Context, after, until time.Time) ([]string, error) {
	return onWorkflows(ctx, w, func(ctx context.Context, c *workflows.Client) ([]string, error) {
		return c.RefundRunsClosed(ctx, after, until)
	})
}

func (w *lazyWorkflows) close() {
	if w.tc != nil {
		w.tc.Close()
	}
}
