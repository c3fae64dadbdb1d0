package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// kill is one planned SIGKILL: component name, killed once at orders of
// the load have started, restarted after down.
type kill struct {
	name string
	at   int
	down time.Duration
}

type plan []kill

func (p plan) String() string {
	var parts []string
	for _, k := range p {
		parts = append(parts, fmt.Sprintf("%s at order %d (down %.1fs)", k.name, k.at, k.down.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// killPlan draws each round's victims (which API and which worker replica),
// shuffles all kills, and places them at random points between 5% and 85%
// of the load, in order, each down for DownMin..DownMax.
func (r *run) killPlan() plan {
	var p plan
	for range r.opts.Kills {
		p = append(p,
			kill{name: fmt.Sprintf("api-%d", 1+r.rng.IntN(2))},
			kill{name: fmt.Sprintf("worker-%d", 1+r.rng.IntN(2))},
			kill{name: "temporal"},
			kill{name: "postgres"})
	}
	r.rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	ats := make([]int, len(p))
	for i := range ats {
		ats[i] = int(float64(r.opts.Orders) * (0.05 + 0.8*r.rng.Float64()))
	}
	slices.Sort(ats)
	for i := range p {
		p[i].at = ats[i]
		p[i].down = r.opts.DownMin + time.Duration(r.rng.Int64N(int64(r.opts.DownMax-r.opts.DownMin)+1))
	}
	return p
}

// killRecord is what happened to one planned kill.
type killRecord struct {
	Name       string
	At         time.Duration // since the start of the load
	DuringLoad bool
	Down       time.Duration // from SIGKILL until restarted and healthy
}

// kill carries out the plan, one kill at a time: each waits for its point
// in the load (or the end of the load), kills the component with SIGKILL,
// leaves it down, starts it and waits until it is healthy, then checks
// that nothing else died meanwhile.
func (r *run) kill(ctx context.Context, p plan, loadDone <-chan struct{}) error {
	for _, k := range p {
	wait:
		for r.started.Load() < int64(k.at) {
			select {
			case <-loadDone:
				break wait
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		rec := killRecord{Name: k.name, At: time.Since(r.began)}
		select {
		case <-loadDone:
		default:
			rec.DuringLoad = true
		}
		var pr *prober
		if k.name == "postgres" {
			var err error
			if pr, err = r.newProber(ctx); err != nil {
				return err
			}
		}
		r.logf("kill -9 %s (%d of %d orders started)", k.name, r.started.Load(), r.opts.Orders)
		killed := time.Now()
		if err := r.c.Stop(k.name, true); err != nil {
			return err
		}
		if pr != nil {
			pr.start(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(k.down):
		}
		r.logf("start %s", k.name)
		if pr != nil {
			pr.phase.Store(phaseRestarting)
		}
		if err := r.c.Start(ctx, k.name); err != nil {
			return fmt.Errorf("restarting %s: %w", k.name, err)
		}
		rec.Down = time.Since(killed)
		r.logf("%s healthy again, %.1fs after the kill", k.name, rec.Down.Seconds())
		if pr != nil {
			pr.back()
			r.pg = pr.finish(ctx)
			r.logf("postgres outage probe on %s: %d answers during the outage (%d × 503 in the envelope, max %v), recovered %.1fs after postgres was back, replica restarted: %v",
				pr.replica, r.pg.OutageAnswers, r.pg.Outage503, r.pg.Max503.Round(time.Millisecond), r.pg.Recovery.Seconds(), r.pg.ReplicaRestarted)
		}
		r.report.Kills = append(r.report.Kills, rec)
		if err := r.othersHealthy(ctx, k.name); err != nil {
			return err
		}
	}
	return nil
}

// othersHealthy waits until every component is healthy again. One that
// died although it was not killed is a finding: it is logged, counted and
// started again so the run can go on.
func (r *run) othersHealthy(ctx context.Context, killed string) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		var down, unhealthy []string
		for _, s := range r.c.Status(ctx) {
			switch {
			case s.PID == 0:
				down = append(down, s.Name)
			case s.Health != nil:
				unhealthy = append(unhealthy, s.Name+": "+s.Health.Error())
			}
		}
		if len(down) == 0 && len(unhealthy) == 0 {
			return nil
		}
		for _, name := range down {
			r.logf("UNPLANNED: %s is not running (found after the kill of %s); starting it; see its log", name, killed)
			r.report.Unplanned = append(r.report.Unplanned, fmt.Sprintf("%s found not running after the kill of %s (see %s)", name, killed, r.c.LogPath(name)))
			if err := r.c.Start(ctx, name); err != nil {
				return fmt.Errorf("starting %s: %w", name, err)
			}
		}
		if len(down) == 0 && time.Now().After(deadline) {
			r.logf("UNPLANNED: still unhealthy 90s after the kill of %s: %s", killed, strings.Join(unhealthy, "; "))
			r.report.Unplanned = append(r.report.Unplanned, "unhealthy after the kill of "+killed+": "+strings.Join(unhealthy, "; "))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// The probe's phases of the Postgres outage.
const (
	phaseOutage     int32 = iota + 1 // Postgres killed, not started yet
	phaseRestarting                  // Postgres starting
	phaseBack                        // Postgres healthy
)

// prober reads one order through one API replica every 250 ms, each read
// in its own goroutine so a hung request does not hide the next ones, from
// the moment Postgres is gone until the replica answers 200 again.
type prober struct {
	r         *run
	replica   string
	url       string
	pidBefore int
	phase     atomic.Int32
	backAt    atomic.Int64 // unix nanos when Postgres was healthy again
	stop      chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	rep       probeReport
	recovered chan struct{}
	once      sync.Once
}

// probeReport is what the probe saw.
type probeReport struct {
	Ran bool
	// OutageAnswers were sent while Postgres was down or starting;
	// Outage503 of them were 503 service_unavailable in the envelope with
	// Retry-After within the bound; Bad lists the rest (other statuses, a
	// 200 before Postgres was back, past the bound, no envelope).
	OutageAnswers, Outage503 int
	// Outage200 were sent while Postgres was down and answered 200 once
	// it was starting: the request waited for it within its deadline.
	Outage200 int
	Max503    time.Duration
	Bad       []string
	// Recovery is from Postgres healthy to the replica's first 200;
	// Recovered is false if that took longer than two minutes.
	Recovered        bool
	Recovery         time.Duration
	After503         int // 503s after Postgres was back, before the first 200
	ReplicaRestarted bool
	Replica          string
}

func (r *run) newProber(ctx context.Context) (*prober, error) {
	i := r.rng.IntN(2)
	pr := &prober{r: r, replica: fmt.Sprintf("api-%d", i+1), stop: make(chan struct{}), recovered: make(chan struct{})}
	pr.url = r.api.bases[i] + "/v1/orders/" + r.probeOrder
	pr.rep.Ran, pr.rep.Replica = true, pr.replica
	pr.pidBefore = r.pid(ctx, pr.replica)
	// The replica reads the order before the outage: the probe's 503s are
	// then the outage's, not a wrong request's.
	a, err := r.api.do(ctx, http.MethodGet, pr.url, "", nil)
	if err != nil || a.status != http.StatusOK {
		return nil, fmt.Errorf("probe before the Postgres kill: %s", describe("GET order", a, err))
	}
	return pr, nil
}

func (r *run) pid(ctx context.Context, name string) int {
	for _, s := range r.c.Status(ctx) {
		if s.Name == name {
			return s.PID
		}
	}
	return 0
}

func (pr *prober) start(ctx context.Context) {
	pr.phase.Store(phaseOutage)
	pr.wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			pr.wg.Go(func() { pr.once1(ctx) })
			select {
			case <-pr.stop:
				return
			case <-t.C:
			}
		}
	})
}

func (pr *prober) back() {
	pr.backAt.Store(time.Now().UnixNano())
	pr.phase.Store(phaseBack)
}

// once1 sends one probe and classifies its answer.
func (pr *prober) once1(ctx context.Context) {
	sentPhase := pr.phase.Load()
	sent := time.Now()
	bound := pr.r.opts.RequestTimeout + pr.r.opts.Slack
	a, err := pr.r.api.do(ctx, http.MethodGet, pr.url, "", nil)
	took := time.Since(sent)
	answeredPhase := pr.phase.Load()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if sentPhase == phaseBack {
		switch {
		case err == nil && a.status == http.StatusOK:
			pr.rep.Recovered = true
			if d := time.Duration(sent.UnixNano() - pr.backAt.Load()); pr.rep.Recovery == 0 || d < pr.rep.Recovery {
				pr.rep.Recovery = max(d, 0)
			}
			pr.once.Do(func() { close(pr.recovered) })
		case err == nil && a.status == http.StatusServiceUnavailable:
			pr.rep.After503++
		default:
			pr.rep.Bad = append(pr.rep.Bad, "after Postgres was back: "+describe("GET", a, err))
		}
		return
	}
	pr.rep.OutageAnswers++
	switch {
	case err != nil:
		pr.rep.Bad = append(pr.rep.Bad, fmt.Sprintf("no answer after %v: %v", took.Round(time.Millisecond), err))
	case a.status == http.StatusServiceUnavailable && a.errorCode() == "service_unavailable" && a.header.Get("Retry-After") != "":
		pr.rep.Max503 = max(pr.rep.Max503, took)
		if took > bound {
			pr.rep.Bad = append(pr.rep.Bad, fmt.Sprintf("503 after %v (bound %v)", took.Round(time.Millisecond), bound))
		} else {
			pr.rep.Outage503++
		}
	case a.status == http.StatusOK && answeredPhase >= phaseRestarting:
		// Sent while Postgres was down, answered once it was starting:
		// the request waited for it, within its deadline.
		pr.rep.Outage200++
		if took > bound {
			pr.rep.Bad = append(pr.rep.Bad, fmt.Sprintf("200 after %v (bound %v)", took.Round(time.Millisecond), bound))
		}
	default:
		pr.rep.Bad = append(pr.rep.Bad, fmt.Sprintf("%d %q after %v (Retry-After %q)", a.status, a.errorCode(), took.Round(time.Millisecond), a.header.Get("Retry-After")))
	}
}

// finish waits until the replica answered 200 (at most two minutes after
// Postgres was back), stops probing and reports.
func (pr *prober) finish(ctx context.Context) probeReport {
	select {
	case <-pr.recovered:
	case <-ctx.Done():
	case <-time.After(2 * time.Minute):
	}
	close(pr.stop)
	pr.wg.Wait()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pid := pr.r.pid(ctx, pr.replica); pid != pr.pidBefore {
		pr.rep.ReplicaRestarted = true
	}
	if pr.rep.Outage503 == 0 {
		pr.rep.Bad = append(pr.rep.Bad, "no 503 seen while Postgres was down")
	}
	return pr.rep
}
