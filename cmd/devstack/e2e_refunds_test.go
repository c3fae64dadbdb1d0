package main

// End-to-end tests of live refunds: a failed live order's money goes back
// on the Horizon test server, from dev live's payout account, through the
// real Refund workflow, its limits, the operator's CLI and the payer that
// records each transaction before submitting it. Every test counts the
// payments the test server's ledger took (LedgerPayments): money moved
// once, to the destination, with its memo, whatever went wrong on the way.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// commandProcessEnv, set to a command line ("worker"), makes this test
// binary run that memocart command with its environment instead of
// running tests (TestMain): a `memocart worker` process a test can
// SIGKILL. It exits when its stdin closes (the test ended) or on SIGTERM.
const commandProcessEnv = "MEMOCART_TEST_COMMAND"

func runCommandProcess(args string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if err := run(ctx, strings.Fields(args), os.Getenv, os.Stdout, os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "memocart", args+":", err)
		return 1
	}
	return 0
}

// workerProcess is a `memocart worker` running in a process of its own.
type workerProcess struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	stderr *syncBuffer
	exited chan struct{}
}

// startWorkerProcess starts `memocart worker` with env (the stack's, with
// its Temporal address and the payout seed) and waits until it polls.
func startWorkerProcess(t *testing.T, env map[string]string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), commandProcessEnv+"=worker")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// The worker dies with this process, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := &workerProcess{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, w.stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	w.stdin = stdin
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		_ = w.stdin.Close()
		select {
		case <-w.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-w.exited
		}
		if t.Failed() {
			t.Logf("worker process %d's log:\n%s", cmd.Process.Pid, lastLines(w.stderr.String(), 40))
		}
	})
	deadline := time.After(60 * time.Second)
	for !strings.Contains(w.stderr.String(), `"msg":"worker polling"`) {
		select {
		case <-w.exited:
			t.Fatalf("the worker process exited while starting:\n%s", w.stderr.String())
		case <-deadline:
			t.Fatalf("the worker process is not polling after a minute:\n%s", w.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return w
}

// kill SIGKILLs the worker and waits for it to be gone.
func (w *workerProcess) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Kill())
	<-w.exited
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// failedLiveOrder creates a live order of a product the Zinc test server
// finds out of stock, pays it, and waits for it to fail with its money
// due back: it returns the order and its refund, awaiting a destination.
func (s *liveStack) failedLiveOrder() (order, refund map[string]any) {
	s.t.Helper()
	o := s.liveCartOrder("https://www.amazon.com/dp/" + zinctest.OutOfStockASIN)
	// Zinc's clock runs fast: the retailer's answer comes in seconds.
	s.servers.Zinc.SetAutoClock(50_000)
	s.payInFull(o)
	final, _ := s.waitStatus(s.liveKey, str(o, "number"), "failed")
	assert.Equal(s.t, "refund_due", str(final, "payment_status"))
	refund = s.soleRefund(s.liveKey, str(o, "number"), "the failed order's refund is created")
	assert.Equal(s.t, "awaiting_destination", str(refund, "status"))
	assert.Equal(s.t, "order_failed", str(refund, "reason"))
	assert.Equal(s.t, "USDC", str(refund, "asset"))
	assert.True(s.t, decimal.RequireFromString(str(o, "payment_amount")).Equal(decimal.RequireFromString(str(refund, "amount"))),
		"the refund returns what was paid: %s, %s", str(o, "payment_amount"), str(refund, "amount"))
	return o, refund
}

// refundAccount creates an account on the Horizon test server for a
// refund to go to, with some XLM, trusting USDC or not.
func (s *liveStack) refundAccount(name string, trustUSDC bool) string {
	s.t.Helper()
	id := horizontest.AccountID(name)
	require.NoError(s.t, s.horizon.SetAccount(horizontest.Account{ID: id, XLM: "5", TrustUSDC: trustUSDC}))
	return id
}

// setRefundDestination is the API client saying where the order's money
// goes; it answers the status and body. A 503 (the refund's workflow did
// not answer within the request's deadline, as on a loaded machine) is
// retried, as the API asks a client to: setting a destination again is
// harmless.
func (s *liveStack) setRefundDestination(o map[string]any, address, memo string) (int, map[string]any) {
	s.t.Helper()
	for i := 0; ; i++ {
		code, b := s.do(s.liveKey, "POST", "/v1/orders/"+str(o, "number")+"/refund_destination",
			map[string]any{"address": address, "memo_type": "text", "memo": memo})
		if code != http.StatusServiceUnavailable || i == 2 {
			return code, b
		}
		s.t.Logf("setting the refund destination answered 503 (%v); retrying", b)
	}
}

// getRefund is GET /v1/refunds/{id}; nil if not answered 200.
func (s *liveStack) getRefund(id string) map[string]any {
	s.t.Helper()
	code, b := s.do(s.liveKey, "GET", "/v1/refunds/"+id, nil)
	if code != http.StatusOK {
		return nil
	}
	return obj(b, "refund")
}

// waitRefund polls the refund until its status is want.
func (s *liveStack) waitRefund(id, want string) map[string]any {
	s.t.Helper()
	var last map[string]any
	ok := assert.Eventually(s.t, func() bool {
		last = s.getRefund(id)
		return str(last, "status") == want
	}, 45*time.Second, 50*time.Millisecond)
	require.True(s.t, ok, "refund %s: status %q, want %q (%v)", id, str(last, "status"), want, last)
	return last
}

// refundOutcome waits for the refund's workflow to end (nothing pays
// after that) and returns how it ended.
func (s *liveStack) refundOutcome(id string) workflows.RefundOutcome {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out workflows.RefundOutcome
	require.NoError(s.t, s.client.GetWorkflow(ctx, models.RefundWorkflowID(id), "").Get(ctx, &out), "the refund's workflow ended")
	return out
}

// refunds runs `memocart refunds args...` against the stack, as an
// operator would.
func (s *liveStack) refunds(args ...string) (string, error) {
	s.t.Helper()
	return s.operator(append([]string{"refunds"}, args...)...)
}

// activityCompleted reports whether an activity of the type completed in
// the workflow's history.
func (s *liveStack) activityCompleted(workflowID, activityType string) bool {
	iter := s.client.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return false
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			scheduled[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			return true
		}
	}
	return false
}

// successfulPayments are the payments the ledger took that succeeded.
func successfulPayments(ps []horizontest.Payment) []horizontest.Payment {
	var out []horizontest.Payment
	for _, p := range ps {
		if p.Successful != nil && *p.Successful {
			out = append(out, p)
		}
	}
	return out
}

// describe lists payments for a failure message, one a line.
func describe(ps []horizontest.Payment) string {
	var b strings.Builder
	for _, p := range ps {
		ok := p.Successful != nil && *p.Successful
		fmt.Fprintf(&b, "\n  %s → %s: %s %s, memo %s %q, successful %t, tx %s", p.From, p.To, p.Amount, p.AssetCode, p.MemoType, p.Memo, ok, p.TxHash)
	}
	return b.String()
}

// sendingTransaction requires the stored refund to be sending, its outcome
// not recorded yet (why), with the transaction recorded before it was
// submitted, and returns that transaction's hash.
func (s *liveStack) sendingTransaction(t testing.TB, id, why string) string {
	t.Helper()
	stored, err := s.store.Refund(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, models.RefundSending, stored.Status, why)
	require.NotEmpty(t, stored.TransactionHash, "the transaction was recorded before it was submitted")
	return stored.TransactionHash
}

// requireSentOnceWith waits for refund r to be sent, and requires it sent
// with recorded (the transaction of the interrupted attempt), its payout
// the ledger's only payment (to dest, with memo) and its order o refunded.
func (s *liveStack) requireSentOnceWith(t testing.TB, o, r map[string]any, recorded, dest, memo string) {
	t.Helper()
	id := str(r, "id")
	sent := s.waitRefund(id, "sent")
	out := s.refundOutcome(id)
	assert.Equal(t, models.RefundSent, out.Status)
	assert.Equal(t, recorded, out.TransactionHash, "sent with the recorded transaction")
	assert.Equal(t, recorded, str(sent, "transaction_hash"))
	s.onlyRefundPayment(t, r, dest, memo)
	_, b := s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
	assert.Equal(t, "refunded", str(obj(b, "order"), "payment_status"))
}

// onlyRefundPayment checks that the ledger holds one payment in all, a
// successful one, and that it is the refund's payout
// (assertRefundPayment). It returns the payment.
func (s *liveStack) onlyRefundPayment(t testing.TB, refund map[string]any, dest, memo string) horizontest.Payment {
	t.Helper()
	pays := s.horizon.LedgerPayments()
	require.Len(t, pays, 1, "one payment in all:%s", describe(pays))
	p := pays[0]
	require.NotNil(t, p.Successful)
	assert.True(t, *p.Successful)
	s.assertRefundPayment(t, p, refund, dest, memo)
	return p
}

// assertRefundPayment checks that p is the refund's payout: from the
// payout account to dest, in USDC, the refund's amount, with the memo.
func (s *liveStack) assertRefundPayment(t testing.TB, p horizontest.Payment, refund map[string]any, dest, memo string) {
	t.Helper()
	assert.Equal(t, s.servers.Payout, p.From, "paid from the payout account")
	assert.Equal(t, dest, p.To)
	assert.Equal(t, "USDC", p.AssetCode)
	assert.Equal(t, usdcIssuer, p.AssetIssuer)
	assert.True(t, decimal.RequireFromString(p.Amount).Equal(decimal.RequireFromString(str(refund, "amount"))),
		"paid %s, the refund is %s", p.Amount, str(refund, "amount"))
	assert.Equal(t, "text", p.MemoType)
	assert.Equal(t, memo, p.Memo)
}

// TestE2ERefundFailedLiveOrderSentOnce: a failed live order's refund
// waits for its destination; the API client sets one; it is worth less
// than dev live's auto-approve maximum, so it goes out without an
// operator: one payment on the ledger, to the destination, with its memo
// and the refund's amount, whose transaction the order then shows.
func TestE2ERefundFailedLiveOrderSentOnce(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o, r := s.failedLiveOrder()
	id := str(r, "id")
	assert.Empty(t, s.horizon.LedgerPayments(), "nothing is paid before a destination is known")

	dest := s.refundAccount("refund sent once", true)
	code, b := s.setRefundDestination(o, dest, "refund "+str(o, "number"))
	require.Equal(t, http.StatusOK, code, b)
	assert.Equal(t, dest, str(obj(obj(b, "order"), "refund_destination"), "address"))

	sent := s.waitRefund(id, "sent")
	out := s.refundOutcome(id)
	assert.Equal(t, models.RefundSent, out.Status)

	p := s.onlyRefundPayment(t, r, dest, "refund "+str(o, "number"))
	assert.Equal(t, p.TxHash, str(sent, "transaction_hash"))
	assert.Equal(t, p.TxHash, out.TransactionHash)
	acc, ok := s.horizon.Account(dest)
	require.True(t, ok)
	assert.True(t, decimal.RequireFromString(acc.USDC).Equal(decimal.RequireFromString(str(r, "amount"))), "the destination holds %s USDC", acc.USDC)

	code, b = s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
	require.Equal(t, http.StatusOK, code, b)
	final := obj(b, "order")
	assert.Equal(t, "failed", str(final, "status"))
	assert.Equal(t, "refunded", str(final, "payment_status"))
	rs, _ := final["refunds"].([]any)
	require.Len(t, rs, 1, final)
	assert.Equal(t, "sent", str(rs[0].(map[string]any), "status"))
	assert.Equal(t, p.TxHash, str(rs[0].(map[string]any), "transaction_hash"))
}

// TestE2ERefundOverDailyMaxWaitsForOperator: under the auto-approve
// maximum but over what automatic approvals may add up to in a day, a
// refund waits for an operator, and nothing is paid while it waits; the
// operator's `memocart refunds approve` sends it, once.
func TestE2ERefundOverDailyMaxWaitsForOperator(t *testing.T) {
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_REFUND_DAILY_MAX": "1"})
	o, r := s.failedLiveOrder()
	id := str(r, "id")
	require.True(t, decimal.RequireFromString(str(r, "amount")).GreaterThan(decimal.NewFromInt(1)), "the refund is over the daily maximum")
	require.True(t, decimal.RequireFromString(str(r, "amount")).LessThan(testservers.AutoApproveMax), "and under the auto-approve maximum")

	dest := s.refundAccount("refund over daily max", true)
	code, b := s.setRefundDestination(o, dest, "over the daily max")
	require.Equal(t, http.StatusOK, code, b)
	// The limits were checked: the refund stays with the operator.
	require.Eventually(t, func() bool { return s.activityCompleted(models.RefundWorkflowID(id), "AutoApproveRefund") },
		30*time.Second, 100*time.Millisecond, "the limits were checked")
	for range 6 {
		require.Equal(t, "awaiting_approval", str(s.getRefund(id), "status"), "the refund waits for the operator")
		time.Sleep(500 * time.Millisecond)
	}
	assert.Zero(t, s.horizon.Submissions(), "nothing submitted while the refund waits")
	assert.Empty(t, s.horizon.LedgerPayments())
	list, err := s.refunds("list", "--status", "awaiting_approval")
	require.NoError(t, err, list)
	assert.Contains(t, list, id, "the operator's list shows it")

	out, err := s.refunds("approve", id)
	require.NoError(t, err, out)
	sent := s.waitRefund(id, "sent")
	assert.NotEmpty(t, str(sent, "approved_at"))
	outcome := s.refundOutcome(id)
	assert.Equal(t, models.RefundSent, outcome.Status)

	p := s.onlyRefundPayment(t, r, dest, "over the daily max")
	assert.Equal(t, p.TxHash, str(sent, "transaction_hash"))
}

// TestE2ERefundNoTrustlineFailsThenNewDestination: the destination had a
// USDC trustline when it was set (the update checks it with Horizon) but
// lost it before the operator approved the payout; the network refuses
// the payment (op_no_trust), the refund fails with a reason the payer can
// act on and nothing reaches anyone. A new destination, approved, is
// paid, once.
func TestE2ERefundNoTrustlineFailsThenNewDestination(t *testing.T) {
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_REFUND_AUTO_APPROVE_MAX": "0"})
	o, r := s.failedLiveOrder()
	id := str(r, "id")

	// The service's own accounts, the receiving one (or a muxed form of
	// it) and the payout one, are refused: a refund paid to the receiving
	// account would come back as a late payment, refunded again.
	payout, err := testservers.PayoutKey()
	require.NoError(t, err)
	plain, err := xdr.AddressToMuxedAccount(liveAccount)
	require.NoError(t, err)
	muxed, err := xdr.NewMuxedAccount(xdr.CryptoKeyTypeKeyTypeMuxedEd25519,
		xdr.MuxedAccountMed25519{Id: 7, Ed25519: plain.MustEd25519()})
	require.NoError(t, err)
	for _, own := range []string{liveAccount, muxed.Address(), payout.Address()} {
		code, b := s.setRefundDestination(o, own, "loop")
		require.Equal(t, http.StatusUnprocessableEntity, code, b)
		assert.Equal(t, "invalid_refund_destination", str(obj(b, "error"), "code"))
		assert.Equal(t, "refund_destination.address", str(obj(b, "error"), "field"))
	}

	// A destination without a trustline is refused when set.
	bare := s.refundAccount("refund no trustline", false)
	code, b := s.setRefundDestination(o, bare, "no trustline")
	require.Equal(t, http.StatusUnprocessableEntity, code, b)
	assert.Equal(t, "invalid_refund_destination", str(obj(b, "error"), "code"))

	lost := s.refundAccount("refund trustline lost", true)
	code, b = s.setRefundDestination(o, lost, "trustline lost")
	require.Equal(t, http.StatusOK, code, b)
	s.waitRefund(id, "awaiting_approval")
	// The payer removes the trustline before the operator approves.
	require.NoError(t, s.horizon.SetAccount(horizontest.Account{ID: lost, XLM: "5", TrustUSDC: false}))
	out, err := s.refunds("approve", id)
	require.NoError(t, err, out)

	failed := s.waitRefund(id, "failed")
	assert.Contains(t, str(failed, "failure_reason"), "does not trust USDC", "a reason the payer can act on")
	assert.NotEmpty(t, str(failed, "failed_at"))
	pays := s.horizon.LedgerPayments()
	require.Len(t, pays, 1, "the refused payment is in a ledger, failed:%s", describe(pays))
	assert.Equal(t, lost, pays[0].To)
	require.NotNil(t, pays[0].Successful)
	assert.False(t, *pays[0].Successful, "op_no_trust: nothing paid")
	assert.Equal(t, pays[0].TxHash, str(failed, "transaction_hash"), "the refused transaction is shown")
	acc, ok := s.horizon.Account(lost)
	require.True(t, ok)
	assert.False(t, acc.TrustUSDC)
	_, b = s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
	assert.Equal(t, "refund_due", str(obj(b, "order"), "payment_status"), "still owed")

	dest := s.refundAccount("refund new destination", true)
	code, b = s.setRefundDestination(o, dest, "new destination")
	require.Equal(t, http.StatusOK, code, b)
	waiting := s.waitRefund(id, "awaiting_approval")
	assert.Empty(t, str(waiting, "failure_reason"), "a new destination clears the failure")
	out, err = s.refunds("approve", id)
	require.NoError(t, err, out)
	sent := s.waitRefund(id, "sent")
	assert.Equal(t, models.RefundSent, s.refundOutcome(id).Status)

	pays = s.horizon.LedgerPayments()
	require.Len(t, pays, 2, "the refused payment and the one sent:%s", describe(pays))
	ok2 := successfulPayments(pays)
	require.Len(t, ok2, 1, "exactly one payment in all:%s", describe(pays))
	s.assertRefundPayment(t, ok2[0], r, dest, "new destination")
	assert.Equal(t, ok2[0].TxHash, str(sent, "transaction_hash"))
	_, b = s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
	assert.Equal(t, "refunded", str(obj(b, "order"), "payment_status"))
}

// TestE2ERefundTimeoutAfterApplyPaysOnce: Horizon applies the payout and
// answers 504; the payer looks the recorded transaction up instead of
// building another, and the refund is sent with it: one payment.
func TestE2ERefundTimeoutAfterApplyPaysOnce(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o, r := s.failedLiveOrder()
	id := str(r, "id")
	s.horizon.TimeoutAfterApply(1)

	dest := s.refundAccount("refund after a 504", true)
	code, b := s.setRefundDestination(o, dest, "after a 504")
	require.Equal(t, http.StatusOK, code, b)
	sent := s.waitRefund(id, "sent")
	assert.Equal(t, models.RefundSent, s.refundOutcome(id).Status)
	// The only submission is the payout's: TimeoutAfterApply answered it
	// 504 after applying it.
	assert.Positive(t, s.horizon.Submissions())

	p := s.onlyRefundPayment(t, r, dest, "after a 504")
	assert.Equal(t, p.TxHash, str(sent, "transaction_hash"))
}

// TestE2ERefundWorkerKilledAfterSubmittingPaysOnce: the worker paying a
// refund out is SIGKILLed after it recorded and submitted the transaction
// and before it recorded the outcome; the network applies the
// transaction meanwhile. The next worker's attempt looks the recorded
// transaction up and finds it: the refund is sent with it, and the money
// moved once.
//
// The order fails on a stack with its own worker; the stack is then
// restarted on the same data without one (dev -no-worker), and the
// refund is paid by `memocart worker` processes, the first killed while
// Horizon holds its submission.
func TestE2ERefundWorkerKilledAfterSubmittingPaysOnce(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MEMOCART_DATA_DIR": dir, "MEMOCART_REFUND_AUTO_APPROVE_MAX": "0"}
	s := startLive(t, "sqlite", env)
	o, r := s.failedLiveOrder()
	id := str(r, "id")
	dest := s.refundAccount("refund worker killed", true)
	code, b := s.setRefundDestination(o, dest, "worker killed")
	require.Equal(t, http.StatusOK, code, b)
	s.waitRefund(id, "awaiting_approval")

	s2 := s.restart(t, env, "-no-worker")
	workerEnv := map[string]string{}
	for k, v := range s2.env {
		workerEnv[k] = v
	}
	workerEnv["MEMOCART_TEMPORAL_ADDRESS"] = s2.temporal
	workerEnv["MEMOCART_STELLAR_PAYOUT_SECRET_FILE"] = filepath.Join(dir, testservers.PayoutSeedFile)
	first := startWorkerProcess(t, workerEnv)

	// Horizon holds the submission for a while, then applies it whatever
	// became of its client.
	const held = 8 * time.Second
	s.horizon.DelaySubmissions(1, held)
	out, err := s2.refunds("approve", id)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return s.horizon.Submissions() == 1 }, 30*time.Second, 10*time.Millisecond,
		"the payout was submitted")
	first.kill(t)
	killed := time.Now()
	recorded := s.sendingTransaction(t, id, "killed before the outcome was recorded")
	require.Empty(t, s.horizon.LedgerPayments(), "killed while Horizon held the submission")

	// The held transaction is applied with no worker running.
	require.Eventually(t, func() bool { return len(s.horizon.LedgerPayments()) == 1 }, 2*held, 20*time.Millisecond,
		"the held submission was applied")
	assert.Equal(t, recorded, s.horizon.LedgerPayments()[0].TxHash)

	startWorkerProcess(t, workerEnv)
	s2.requireSentOnceWith(t, o, r, recorded, dest, "worker killed")
	t.Logf("sent and checked %s after the kill", time.Since(killed).Round(100*time.Millisecond))
}
