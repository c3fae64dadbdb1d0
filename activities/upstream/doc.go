// Package upstream holds the plumbing the live providers' HTTP clients
// share: backoff with jitter, Retry-After, waiting within a context's
// deadline, one exchange read within the caller's and the call's
// deadlines, an OAuth2 client-credentials token cache, and the checks and
// defaults of their settings.
//
// It may import the standard library and golang.org/x/oauth2.
package upstream
