package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// healthcheckTimeout bounds the whole check: a container runtime runs it
// every few seconds and counts a hang as a failure anyway.
const healthcheckTimeout = 5 * time.Second

// runHealthcheck is `memocart healthcheck URL`: exit status 0 when URL
// answers 200. The production image is distroless (no curl or wget), so
// docker-compose's healthchecks run the binary itself.
func runHealthcheck(ctx context.Context, e Env, args []string) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(e.Stderr, "Usage: memocart healthcheck URL\n\nGETs URL (e.g. http://127.0.0.1:8080/readyz) and fails unless it answers 200 within 5s.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("healthcheck takes one URL")
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("healthcheck: %q is not an http(s) URL", fs.Arg(0))
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", u, resp.Status)
	}
	return nil
}
