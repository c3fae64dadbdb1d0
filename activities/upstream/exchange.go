package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Exchange sends req and reads at most limit bytes of its answer, closing
// the body. req's context carries the call's own timeout and derives from
// ctx, the caller's.
//
// The caller's ctx ending is ctx.Err(): the caller gave up, there is
// nothing to retry. Anything else that leaves no answer is failed(status,
// err), for the provider's client to retry like an outage: no response
// (status 0), a body cut short (the answer's status), the call's own
// timeout (status 0). What arrived after either deadline passed is not an
// answer: a server giving up on a cancelled request may send an empty 200.
func Exchange(ctx context.Context, client *http.Client, req *http.Request, limit int64,
	failed func(status int, err error) error) (*http.Response, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, failed(0, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, failed(resp.StatusCode, fmt.Errorf("reading the answer: %w", err))
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if err := req.Context().Err(); err != nil {
		return nil, nil, failed(0, fmt.Errorf("no answer in time: %w", err))
	}
	return resp, body, nil
}
