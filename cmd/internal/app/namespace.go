package app

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/workflows"
)

// namespaceCheckTimeout bounds the start-up check: the frontend has just
// answered the dial, so a slow answer is a fault worth failing on.
const namespaceCheckTimeout = 15 * time.Second

// checkTemporalNamespace refuses to start api or worker on a namespace
// without the search attributes the order workflow sets: the failure would
// otherwise surface only when the first order's workflow task fails.
func checkTemporalNamespace(ctx context.Context, e Env, tc client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, namespaceCheckTimeout)
	defer cancel()
	return workflows.CheckNamespace(ctx, tc.OperatorService(), e.Cfg.TemporalNamespace)
}
