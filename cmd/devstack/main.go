// Command devstack is Memocart's developer and lab tooling: every command of
// the memocart binary plus dev (the whole stack in one process on an
// embedded Temporal server), loadtest, cluster, chaos and payouts. It is its
// own module so the service never depends on the Temporal server it embeds.
package main

import "github.com/memocart/memocart/cmd/internal/app"

func main() { app.Main("devstack", commands()...) }

// commands are the tools this binary adds to the service's commands.
func commands() []app.Command {
	return []app.Command{
		{Name: "dev", Summary: "run everything in one process for development: embedded stack, API, worker, a printed test key", Run: runDev, LogFormat: "text"},
		{Name: "listen", Summary: "forward the dev stack's test events to a local URL, signed as webhooks (listen --help)", Run: runListen, LogFormat: "text"},
		{Name: "loadtest", Summary: "measure the service against pgbench and bare Temporal starts on the same servers (loadtest --help)", Run: runLoadtest, LogFormat: "text"},
		{Name: "cluster", Summary: "the production topology on this machine without Docker: up, down, status... (cluster --help)", Run: runCluster, LogFormat: "text"},
		{Name: "cost", Summary: "events, workflow tasks and billable Temporal actions per order path, from histories (cost --help)", Run: runCost, LogFormat: "text"},
		{Name: "chaos", Summary: "orders through a cluster of its own while its processes are killed; checks that none is lost (chaos --help)", Run: runChaos, LogFormat: "text"},
		{Name: "payouts", Summary: "refunds approved at once on a cluster of its own: time until all are sent, each paid once (payouts --help)", Run: runPayouts, LogFormat: "text"},
	}
}
