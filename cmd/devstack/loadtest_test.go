package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/memocart/memocart/cmd/devstack/loadtest"
	"github.com/memocart/memocart/models"
)

// TestLoadtestAgainstTheDevStack runs `devstack loadtest -stack external`,
// at a tiny size, against the real dev stack on Postgres: a key in the
// stack's database, carts, orders, bare starts on the same Temporal server
// and pgbench on the same Postgres server, orders taken to delivered, and
// the figures printed as tables. The API is given twice, as two replicas
// would be, so the spreading runs through every phase.
func TestLoadtestAgainstTheDevStack(t *testing.T) {
	s := startDev(t, "postgres", nil)
	env := map[string]string{
		"MEMOCART_DATABASE_URL":     s.env["MEMOCART_DATABASE_URL"],
		"MEMOCART_TEMPORAL_ADDRESS": s.temporal,
	}
	var out, errOut syncBuffer
	err := run(t.Context(), []string{"loadtest", "-stack", "external", "-api", s.baseURL + "," + s.baseURL + "/",
		"-pairs", "2", "-create", "4", "-orders", "12", "-deliver", "3", "-duration", "1s", "-settle", "0s",
		"-pgbench-scale", "1", "-pgbench-db", "memocart_pgbench_test", "-connections", "4"},
		func(k string) string { return env[k] }, &out, &errOut)
	require.NoError(t, err, "stderr:\n%s", errOut.String())
	got := out.String()
	t.Log(got)

	// One row per pair and a median, each with positive rates and ratio.
	creation := regexp.MustCompile(`(?m)^\s+(1|2|median)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)`)
	rows := creation.FindAllStringSubmatch(got, -1)
	require.Len(t, rows, 6, "two pairs and a median for creation, the same for reads")
	assertPositiveFigures(t, rows, "row")
	// Creation has both references: bare starts, and starts whose first
	// task the stack's worker runs; a ratio to each.
	withTask := regexp.MustCompile(`(?m)^\s+(1|2|median)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)`).FindAllStringSubmatch(got, 3)
	require.Len(t, withTask, 3, "creation: two pairs and a median, five figures each")
	assertPositiveFigures(t, withTask, "creation row")
	assert.Regexp(t, `start \+ first task: [1-9][0-9]* µs = load generator`, got)
	assert.Contains(t, got, "GET /v1/orders/{id}: 12 orders in the account")
	assert.Regexp(t, `served [0-9]+ req/s; p50 [0-9.]+ ms  p90 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms; 0 errors`, got)
	assert.Regexp(t, `pgbench -S at half its maximum rate, [0-9]+ TPS offered for 1s .*\n  served [1-9][0-9]* TPS; p50 [0-9.]+ ms  p90 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms`, got)
	assert.Regexp(t, `Ceiling: GET /healthz \(same HTTP stack, no key, no database\) [1-9][0-9]* req/s = [0-9.]+ of the reference server, [0-9.]+ of pgbench -S`, got)
	assert.Regexp(t, `GET ÷ reference server \(median of [0-9]+ pairs\): [0-9]+\.[0-9]+`, got)
	assert.Regexp(t, `GET [0-9]+ µs = load generator [0-9]+ \+ Postgres [1-9][0-9]* \+ the rest`, got,
		"Postgres's own CPU is counted (the dev stack's database is on the same server)")
	assert.Contains(t, got, "requests go to the 2 API replicas in turn")

	// Three orders created, paid and followed to delivered. The stack's
	// sandbox steps take 150 ms each: no order can be delivered sooner
	// than three of them after it was paid.
	assert.Contains(t, got, "Creation to delivered: 3 orders")
	rate := regexp.MustCompile(`delivered: 3 in [0-9.]+ s from the first POST /v1/orders to the last delivery: ([0-9.]+) delivered orders/s`).FindStringSubmatch(got)
	require.NotNil(t, rate, "the delivered rate is printed")
	v, err := strconv.ParseFloat(rate[1], 64)
	require.NoError(t, err)
	assert.Positive(t, v)
	paid := regexp.MustCompile(`paid to delivered \(.*\): p50 ([0-9.]+) s`).FindStringSubmatch(got)
	require.NotNil(t, paid)
	p50, err := strconv.ParseFloat(paid[1], 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, p50, 0.45, "paid to delivered spans the sandbox's three steps")
	assert.Contains(t, got, "all 3 read delivered through the API afterwards")
	hist := regexp.MustCompile(`workflow history per order \(mean of 3\): ([0-9.]+) events: [0-9.]+ workflow tasks, ([0-9.]+) activities, [0-9.]+ timers, ([0-9.]+) signals`).FindStringSubmatch(got)
	require.NotNil(t, hist, "the orders' histories are read")
	// Events, activities (the placement and a check at least: the
	// writes are local activities), the payment's signal.
	for i, least := range []float64{20, 2, 1} {
		v, err := strconv.ParseFloat(hist[i+1], 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, v, least, hist[0])
	}
	assert.Regexp(t, `CPU per delivered order \(machine-wide, whole phase\): [1-9][0-9]* µs = load generator`, got)

	// The reference starts (two runs of four of each kind) were
	// terminated: none is left running, on the reference queue or among
	// the service's orders. Visibility catches up asynchronously.
	count := func(query string) int64 {
		res, err := s.client.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		require.NoError(t, err)
		return res.GetCount()
	}
	bare := "TaskQueue = '" + loadtest.ReferenceTaskQueue + "' AND ExecutionStatus = "
	require.Eventually(t, func() bool { return count(bare+"'Terminated'") == 8 }, 15*time.Second, 200*time.Millisecond)
	assert.Zero(t, count(bare+"'Running'"))
	withWorker := "TaskQueue = 'memocart-orders' AND WorkflowId STARTS_WITH '" + models.WorkflowID("ord_loadref") + "' AND ExecutionStatus = "
	require.Eventually(t, func() bool { return count(withWorker+"'Terminated'") == 8 }, 15*time.Second, 200*time.Millisecond)
	assert.Zero(t, count(withWorker+"'Running'"))
}

// assertPositiveFigures checks that each row's figures are positive
// numbers: rows are a table's regexp matches, the line, its label, then
// its figures.
func assertPositiveFigures(t *testing.T, rows [][]string, what string) {
	t.Helper()
	for _, r := range rows {
		for _, f := range r[2:] {
			v, err := strconv.ParseFloat(f, 64)
			require.NoError(t, err)
			assert.Positive(t, v, "%s %q", what, r[0])
		}
	}
}

func TestLoadtestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-orders", "100,10"},
		{"-orders", "x"},
		{"-waiting", "0"},
		{"-stack", "cluster"},
		{"-pgbench-db", "x; drop table orders"},
		{"-duration", "10ms"},
		{"-deliver", "-1"},
		{"-api", "127.0.0.1:8080"},
		{"-api", "http://127.0.0.1:8080,"},
		{"-cluster", ".data/cluster"}, // needs -stack external
	} {
		var out, errOut syncBuffer
		env := map[string]string{"MEMOCART_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"}
		err := run(t.Context(), append([]string{"loadtest"}, args...), func(k string) string { return env[k] }, &out, &errOut)
		assert.Error(t, err, "%v", args)
	}
	var out, errOut syncBuffer
	err := run(t.Context(), []string{"loadtest"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorContains(t, err, "postgres://")
}

func TestParseAPIs(t *testing.T) {
	got, err := parseAPIs("http://127.0.0.1:17081")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://127.0.0.1:17081"}, got, "one URL stays one replica")
	got, err = parseAPIs("http://127.0.0.1:17081/, https://api.example.test ")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://127.0.0.1:17081", "https://api.example.test"}, got)
	for _, bad := range []string{"", "127.0.0.1:17081", "http://a:1,,http://b:2", "http://a:1/v1", "ftp://a"} {
		_, err := parseAPIs(bad)
		assert.Error(t, err, "%q", bad)
	}
}
