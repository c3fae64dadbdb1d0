// Command memocart is the Memocart checkout service: the HTTP API, the
// Temporal worker, database migrations and the operator commands (keys,
// payments, webhooks, healthcheck). It is the production binary; the
// developer tools (the embedded dev stack, load, cluster and chaos drivers)
// are the separate module cmd/devstack.
package main

import "github.com/memocart/memocart/cmd/internal/app"

func main() { app.Main("memocart") }
