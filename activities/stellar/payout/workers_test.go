package payout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// The environment of a worker process TestPayTwoWorkerProcesses starts:
// the test binary again, paying its share of the refunds (TestMain).
const (
	envWorker     = "PAYOUT_TEST_WORKER"      // the worker's number, 0 or 1
	envWorkerJobs = "PAYOUT_TEST_WORKER_JOBS" // JSON: horizon, database, seed file, refunds
)

// workerJobs is what a worker process pays.
type workerJobs struct {
	Horizon, Database, SeedFile string
	Dests                       []string // one refund of 1 XLM each
	First                       int      // the first refund's number
}

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) != "" {
		os.Exit(runWorker())
	}
	os.Exit(m.Run())
}

// runWorker pays the jobs concurrently with a Payer whose Lock is the
// database's, as a memocart worker does, and exits non-zero if any fails.
func runWorker() int {
	var jobs workerJobs
	if err := json.Unmarshal([]byte(os.Getenv(envWorkerJobs)), &jobs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, jobs.Database, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = st.Close() }()
	signer, err := payout.NewFileSigner(jobs.SeedFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := payout.NewPayer(payout.Config{
		HorizonURL: jobs.Horizon, HTTPClient: &http.Client{}, NetworkPassphrase: network.TestNetworkPassphrase,
		USDCIssuer: issuerKey.Address(), Signer: signer, Lock: storeLock{st},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	records := &refundRecords{recorded: map[string]string{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i, d := range jobs.Dests {
		id := "rfd_" + strconv.Itoa(jobs.First+i)
		wg.Go(func() {
			res, err := p.Pay(ctx, refund(id, d, "XLM", "1"), records.recordFor(id, ""))
			if err != nil || res.Outcome != models.PayoutSent {
				mu.Lock()
				failed++
				mu.Unlock()
				fmt.Fprintf(os.Stderr, "%s: %v %v\n", id, res, err)
			}
		})
	}
	wg.Wait()
	if failed > 0 || records.records != len(jobs.Dests) {
		fmt.Fprintf(os.Stderr, "%d failed, %d transactions recorded for %d refunds\n", failed, records.records, len(jobs.Dests))
		return 1
	}
	return 0
}

// storeLock is the store's payout account lock, as the worker wires it.
type storeLock struct{ st *sqlstore.Store }

func (l storeLock) LockAccount(ctx context.Context, key string) (func(), error) {
	return l.st.LockPayoutAccount(ctx, key)
}

// TestPayTwoWorkerProcesses: two worker processes pay 20 refunds at once
// from one account, sharing a Postgres database as the production
// topology's two workers do. Each refund is recorded and submitted once:
// no submission meets the other process's sequence number.
func TestPayTwoWorkerProcesses(t *testing.T) {
	const n = 20
	for _, dialect := range sqlstoretest.Dialects() {
		if dialect != sqlstore.DialectPostgres {
			continue // SQLite serves one process
		}
		s := horizontest.New(payoutKey.Address())
		t.Cleanup(s.Close)
		s.SetUSDCIssuer(issuerKey.Address())
		require.NoError(t, s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1000", Sequence: payoutSequence}))
		dests, accounts := destinations(n, false)
		for _, a := range accounts {
			require.NoError(t, s.SetAccount(a))
		}
		// Every submission waits for its ledger, as on the network, so
		// that the workers' payouts overlap.
		s.DelaySubmissions(n, 20*time.Millisecond)
		seed := t.TempDir() + "/payout.seed"
		require.NoError(t, os.WriteFile(seed, []byte(payoutKey.Seed()+"\n"), 0o600))
		dsn := sqlstoretest.DSN(t, dialect)

		var wg sync.WaitGroup
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		for w := range 2 {
			jobs, err := json.Marshal(workerJobs{Horizon: s.URL, Database: dsn, SeedFile: seed,
				Dests: dests[w*n/2 : (w+1)*n/2], First: w * n / 2})
			require.NoError(t, err)
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envWorker+"="+strconv.Itoa(w), envWorkerJobs+"="+string(jobs))
			wg.Go(func() { outs[w], errs[w] = cmd.CombinedOutput() })
		}
		wg.Wait()
		for w := range 2 {
			require.NoError(t, errs[w], "worker %d: %s", w, outs[w])
		}
		for i, d := range dests {
			assert.Len(t, paidTo(s, d), 1, "refund %d paid once", i)
		}
		assert.Equal(t, n, s.Submissions(), "one submission each: no sequence number was contended")
		assert.Equal(t, int64(payoutSequence+n), mustAccount(t, s, payoutKey.Address()).Sequence)
	}
}
