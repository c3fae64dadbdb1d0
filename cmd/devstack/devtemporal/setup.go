package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/memocart/memocart/workflows"
)

// setup waits for the frontend and the namespace, then registers the
// search attributes and waits until the frontend reports them.
func (s *Server) setup(ctx context.Context, attrs map[string]enumspb.IndexedValueType) error {
	c, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	// The namespace was written to the database before start; the
	// frontend answers for it once its namespace registry has loaded.
	err = retry(ctx, func() error {
		_, err := c.WorkflowService().DescribeNamespace(ctx,
			&workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
		return err
	})
	if err != nil {
		return fmt.Errorf("devtemporal: waiting for namespace %q: %w", s.namespace, err)
	}
	if len(attrs) == 0 {
		return nil
	}
	// A new namespace was written with its attributes (prepareSQLite); one
	// from an older data directory may lack some.
	added, err := addSearchAttributes(ctx, c.OperatorService(), s.namespace, attrs)
	if err != nil {
		return err
	}
	if !added {
		return nil
	}
	// AddSearchAttributes returns after the namespace update is stored;
	// this confirms the frontend reads it back, then lets every service
	// see it (SearchAttributesSettle) before anyone relies on it.
	err = retry(ctx, func() error {
		missing, err := missingSearchAttributes(ctx, c.OperatorService(), s.namespace, attrs)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("not yet visible: %v", slices.Sorted(maps.Keys(missing)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("devtemporal: waiting for search attributes: %w", err)
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("devtemporal: waiting for search attributes: %w", ctx.Err())
	case <-time.After(workflows.SearchAttributesSettle):
	}
	return nil
}

// dial connects an SDK client, retrying while the frontend is still coming
// up. The client's own logging is discarded: its retries here are expected.
func (s *Server) dial(ctx context.Context) (client.Client, error) {
	var c client.Client
	err := retry(ctx, func() error {
		var err error
		c, err = client.DialContext(ctx, client.Options{
			HostPort:  s.frontend,
			Namespace: s.namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("devtemporal: connecting to frontend %s: %w", s.frontend, err)
	}
	return c, nil
}

// addSearchAttributes registers the attributes that are not registered
// yet and says whether there were any. Asking for only the missing ones
// keeps restarts quiet (the server logs a warning per attribute that
// already exists) and catches an attribute whose type changed, which the
// server would silently keep.
func addSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, want map[string]enumspb.IndexedValueType) (bool, error) {
	missing, err := missingSearchAttributes(ctx, op, namespace, want)
	if err != nil {
		return false, fmt.Errorf("devtemporal: listing search attributes: %w", err)
	}
	if len(missing) == 0 {
		return false, nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return false, fmt.Errorf("devtemporal: adding search attributes %v: %w", slices.Sorted(maps.Keys(missing)), err)
	}
	return true, nil
}

// missingSearchAttributes returns the wanted attributes the namespace does
// not have, and an error for any it has with a different type.
func missingSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, want map[string]enumspb.IndexedValueType) (map[string]enumspb.IndexedValueType, error) {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	missing := make(map[string]enumspb.IndexedValueType)
	for name, typ := range want {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			if _, system := resp.GetSystemAttributes()[name]; system {
				return nil, permanent(fmt.Errorf("search attribute %q is a system attribute", name))
			}
			missing[name] = typ
			continue
		}
		if got != typ {
			return nil, permanent(fmt.Errorf("search attribute %q is registered as %s, want %s (remove the data dir to start over)", name, got, typ))
		}
	}
	return missing, nil
}

// permanentError marks an error retry must not retry.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// retry calls f until it succeeds, returns a permanent error, or ctx ends.
// Start's readiness steps usually succeed within a few polls, so the
// interval is short and fixed.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(startupPoll):
		}
	}
}
