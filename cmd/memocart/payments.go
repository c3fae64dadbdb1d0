package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memocart/memocart/activities/payments"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/workflows"
)

const paymentsUsage = `Usage:
  memocart payments list
      Payments that matched no order, money due back (late payments, wrong
      assets, underpaid or failed orders, overpayments) and open alerts.
  memocart payments attach PAYMENT_ID ORDER_NUMBER
      Attach an unmatched payment to an order (the payer got the memo wrong);
      the order's workflow counts it like any matched payment.
  memocart payments mark-refunded --tx HASH (--payment PAYMENT_ID | --order ORDER_NUMBER)
      Record a refund an operator sent outside the service.
  memocart payments clear-alert KIND
      Mark an alert (e.g. stellar_before_history) as handled.

Works on the database of MEMOCART_DATABASE_URL (or the dev SQLite file); attach
also needs the Temporal cluster of MEMOCART_TEMPORAL_ADDRESS.`

// runPayments is `memocart payments`.
func runPayments(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.stderr, paymentsUsage)
		if len(args) == 0 {
			return errors.New("payments needs a subcommand: list, attach, mark-refunded or clear-alert")
		}
		return flag.ErrHelp
	}
	st, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := requireMigrated(ctx, st); err != nil {
		return err
	}
	switch args[0] {
	case "list":
		return paymentsList(ctx, e, st)
	case "attach":
		return paymentsAttach(ctx, e, st, args[1:])
	case "mark-refunded":
		return paymentsMarkRefunded(ctx, e, st, args[1:])
	case "clear-alert":
		if len(args) != 2 {
			return errors.New("clear-alert takes exactly one KIND")
		}
		return st.ClearAlert(ctx, args[1], time.Now())
	}
	fmt.Fprintln(e.stderr, paymentsUsage)
	return fmt.Errorf("unknown payments subcommand %q", args[0])
}

func paymentsList(ctx context.Context, e env, st *sqlstore.Store) error {
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
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
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
	fmt.Fprintf(tw, "\nREFUNDS DUE (%d)\nORDER\tPAYMENT\tAMOUNT\tTO\tREASON\n", len(refunds))
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

func paymentsAttach(ctx context.Context, e env, st *sqlstore.Store, args []string) error {
	if len(args) != 2 {
		return errors.New("attach takes PAYMENT_ID ORDER_NUMBER")
	}
	number, ok := models.NormalizeOrderNumber(args[1])
	if !ok {
		return fmt.Errorf("%q is not a valid order number", args[1])
	}
	tc, err := dialTemporal(ctx, e, e.cfg.TemporalAddress)
	if err != nil {
		return err
	}
	defer tc.Close()
	m := payments.NewMatcher(st, workflows.NewClient(tc, e.cfg.TemporalTaskQueue), e.log)
	outcome, err := m.Attach(ctx, args[0], number)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "payment %s attached to order %s: %s\n", args[0], number, outcome)
	return nil
}

func paymentsMarkRefunded(ctx context.Context, e env, st *sqlstore.Store, args []string) error {
	fs := flag.NewFlagSet("payments mark-refunded", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	tx := fs.String("tx", "", "hash of the refund transaction")
	paymentID := fs.String("payment", "", "a late or wrong-asset payment sent back whole")
	order := fs.String("order", "", "an order whose received money (or excess) was sent back")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tx == "" || (*paymentID == "") == (*order == "") {
		return errors.New("mark-refunded needs --tx and exactly one of --payment or --order")
	}
	now := time.Now()
	if *paymentID != "" {
		if err := st.MarkPaymentRefunded(ctx, *paymentID, *tx, now); err != nil {
			return fmt.Errorf("payment %s: %w", *paymentID, err)
		}
		fmt.Fprintf(e.stdout, "payment %s marked refunded in %s\n", *paymentID, *tx)
		return nil
	}
	number, ok := models.NormalizeOrderNumber(*order)
	if !ok {
		return fmt.Errorf("%q is not a valid order number", *order)
	}
	if err := st.MarkOrderRefunded(ctx, number, *tx, now); err != nil {
		return fmt.Errorf("order %s: %w", number, err)
	}
	fmt.Fprintf(e.stdout, "order %s marked refunded in %s\n", number, *tx)
	return nil
}
