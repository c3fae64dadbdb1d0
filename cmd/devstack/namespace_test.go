package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memocart/memocart/cmd/devstack/devtemporal"
	"github.com/memocart/memocart/workflows"
)

// TestWorkerAndAPIRefuseANamespaceWithoutSearchAttributes runs the real
// `memocart worker` and `memocart api` against a Temporal server whose
// "default" namespace has the search attributes (as dev registers them) and
// whose "partial" namespace has only OrderNumber.
func TestWorkerAndAPIRefuseANamespaceWithoutSearchAttributes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ts, err := devtemporal.Start(ctx, devtemporal.Options{UIPort: -1, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	defer ts.Stop()

	tc, err := client.DialContext(ctx, client.Options{HostPort: ts.FrontendHostPort()})
	require.NoError(t, err)
	defer tc.Close()
	_, err = tc.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "partial", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	// A new namespace reaches the frontend's registry on its next refresh.
	require.Eventually(t, func() bool {
		_, err := tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: "partial", SearchAttributes: map[string]enumspb.IndexedValueType{"OrderNumber": enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
		return err == nil
	}, time.Minute, 200*time.Millisecond)

	vars := map[string]string{
		"MEMOCART_DATA_DIR":         t.TempDir(),
		"MEMOCART_TEMPORAL_ADDRESS": ts.FrontendHostPort(),
		"MEMOCART_HTTP_ADDR":        "127.0.0.1:0",
	}
	getenv := func(k string) string { return vars[k] }
	require.NoError(t, run(ctx, []string{"migrate"}, getenv, &syncBuffer{}, &syncBuffer{}))

	vars["MEMOCART_TEMPORAL_NAMESPACE"] = "partial"
	for _, sub := range []string{"worker", "api"} {
		err := run(ctx, []string{sub}, getenv, &syncBuffer{}, &syncBuffer{})
		require.Error(t, err, sub)
		assert.Contains(t, err.Error(), `Temporal namespace "partial" is not prepared for order workflows: missing search attribute(s) OrderMode, OrderStatus, PaymentStatus, RefundStatus;`, sub)
		assert.Contains(t, err.Error(), "--name OrderStatus --type Keyword", sub)
		assert.NotContains(t, err.Error(), "--name OrderNumber", sub)
	}

	// On the prepared namespace the worker starts and polls.
	vars["MEMOCART_TEMPORAL_NAMESPACE"] = "default"
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(wctx, []string{"worker"}, getenv, &syncBuffer{}, &logs) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "worker polling") }, time.Minute, 50*time.Millisecond, logs.String())
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("worker: %v", err)
	}
}
