//go:build prod

package main

import (
	"context"
	"errors"
)

// runDev is not part of the production build, which leaves out the
// embedded Temporal server: run api and worker against a Temporal cluster.
func runDev(context.Context, env, []string) error {
	return errors.New("dev is not included in this build (built with -tags prod); run memocart api and memocart worker against a Temporal cluster")
}
