package main

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/devstack/cost"
	"github.com/memocart/memocart/models"
)

// liveCostSpeed is how much faster than real time the live cost runs: an
// hour of Zinc's clock (and of the poll schedule) passes in 0.25 s, so
// the 6-hour safety-net check is 1.5 s, above WatchOrder's 1 s floor.
const liveCostSpeed = 14400

// BenchmarkLiveOrderCost measures what a live order costs Temporal when
// the retailer ships it a day after purchase and the parcel is three days
// in transit (issue 24's live targets), with Zinc's webhooks delivered and
// with every one lost. Zinc's test server runs its clock liveCostSpeed
// times faster than real time and the poll schedule (Zinc's, 7m,4m,6h,6h)
// is scaled to match, so the order is checked as often as it would be.
// Each iteration walks one order from payment to delivered; the figures
// are per order, the median over the iterations:
//
//   - events and workflow tasks: its history's;
//   - actions: its history's billable actions (devstack cost) plus the
//     attempts of WatchOrder that no history shows (a watch stopped because
//     a webhook's check found the change, or still waiting when the
//     workflow closed), from the worker's metrics.
//
// Scaled, every wait is under WatchOrder's 5 s of sleep (maxWatchSleep),
// so a watch's first check is slept through where an unscaled order's
// 6-hour wait costs an early attempt: up to one action per watch fewer
// than the order it stands for.
//
// Run: cd cmd/devstack && go test -run '^$' -bench BenchmarkLiveOrderCost -benchtime 3x .
func BenchmarkLiveOrderCost(b *testing.B) {
	for _, tc := range []struct {
		name string
		lost bool
	}{
		{"webhooks", false},
		{"webhooks-lost", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			adminAddr := ln.Addr().String()
			require.NoError(b, ln.Close())
			s := startLive(b, "sqlite", map[string]string{
				"MEMOCART_ZINC_POLL_SCHEDULE": scaledSchedule(7*time.Minute, 4*time.Minute, 6*time.Hour, 6*time.Hour),
				"MEMOCART_ADMIN_ADDR":         adminAddr,
			})
			zinc := s.servers.Zinc
			zinc.SetTimings(zinctest.Timings{
				Processing: time.Minute, Placed: 6 * time.Minute,
				Shipped: 24 * time.Hour, InTransit: 25 * time.Hour, Delivered: 96 * time.Hour,
			})
			zinc.DropWebhooks(tc.lost)
			zinc.SetNow(time.Now())
			zinc.SetAutoClock(liveCostSpeed)

			admin := "http://" + adminAddr
			var events, tasks, actions []int
			b.ResetTimer()
			for range b.N {
				before := watchAttempts(b, admin)
				o := s.liveCartOrder("https://www.amazon.com/dp/B0LIVE0003")
				s.payInFull(o)
				id := str(o, "id")
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				err := s.client.GetWorkflow(ctx, models.WorkflowID(id), "").Get(ctx, nil)
				cancel()
				require.NoError(b, err, "order %s", id)
				hist := history(b, s, models.WorkflowID(id))
				c := cost.Count(hist)
				// A watch of the closed run may still be in its backoff:
				// give the server a moment to drop it.
				time.Sleep(2 * time.Second)
				unseen := max(watchAttempts(b, admin)-before-watchAttemptsShown(hist), 0)
				events = append(events, c.Events)
				tasks = append(tasks, c.WorkflowTasks)
				actions = append(actions, c.Actions.Total()+unseen)
				b.Logf("order %s: %d events, %d workflow tasks, actions %+v and %d WatchOrder attempts no history shows",
					id, c.Events, c.WorkflowTasks, c.Actions, unseen)
			}
			b.StopTimer()
			b.ReportMetric(float64(median(events)), "events/order")
			b.ReportMetric(float64(median(tasks)), "tasks/order")
			b.ReportMetric(float64(median(actions)), "actions/order")
			b.Logf("%s: events %v, workflow tasks %v, actions %v", tc.name, events, tasks, actions)
		})
	}
}

// scaledSchedule is MEMOCART_ZINC_POLL_SCHEDULE for these durations at
// liveCostSpeed.
func scaledSchedule(ds ...time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, (d / liveCostSpeed).String())
	}
	return strings.Join(parts, ",")
}

// history is the run's events.
func history(tb testing.TB, s *liveStack, workflowID string) []*historypb.HistoryEvent {
	tb.Helper()
	var out []*historypb.HistoryEvent
	iter := s.client.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(tb, err)
		out = append(out, ev)
	}
	return out
}

// watchAttemptsShown counts the WatchOrder attempts a history shows: a
// watch that completed or failed has one started event, with its last
// attempt's number.
func watchAttemptsShown(events []*historypb.HistoryEvent) int {
	watches := map[int64]bool{}
	n := 0
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "WatchOrder" {
			watches[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && watches[a.GetScheduledEventId()] {
			n += int(a.GetAttempt())
		}
	}
	return n
}

// watchAttempts is how many WatchOrder attempts the worker has run, from
// its metrics (the SDK records every attempt's latency).
func watchAttempts(tb testing.TB, admin string) int {
	mf := scrape(tb, admin+"/metrics")
	return int(sumCount(mf, "temporal_activity_execution_latency_seconds", "activity_type", "WatchOrder"))
}

func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
