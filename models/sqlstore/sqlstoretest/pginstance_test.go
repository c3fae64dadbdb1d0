package sqlstoretest_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

func ping(st *sqlstore.Store, d time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	began := time.Now()
	err := st.Ping(ctx)
	return time.Since(began), err
}

// mustPing pings until the store answers. After a restart the pool's
// connections to the old server are dead, and database/sql only retries
// getting a connection, not the ping on it: a connection idle over a
// second is checked (and replaced) first, but one used within the last
// second is handed out and fails that ping with driver.ErrBadConn. So a
// few such failures are expected before a ping on a new connection works.
func mustPing(t *testing.T, st *sqlstore.Store, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for attempt := 1; ; attempt++ {
		took, err := ping(st, 5*time.Second)
		if err == nil {
			if attempt > 1 {
				t.Logf("%s: ping worked at attempt %d", when, attempt)
			}
			return
		}
		if !errors.Is(err, driver.ErrBadConn) || attempt == 20 || time.Now().After(deadline) {
			t.Fatalf("%s: ping %d failed after %v: %v", when, attempt, took, err)
		}
	}
}

func TestPGInstanceLifecycle(t *testing.T) {
	pg := sqlstoretest.StartPostgres(t)
	st := pg.Open(t)
	if st.Dialect() != sqlstore.DialectPostgres {
		t.Fatalf("dialect %q", st.Dialect())
	}
	mustPing(t, st, "after start")
	if ms, err := st.Migrations(context.Background()); err != nil || len(ms) == 0 || ms[0].AppliedAt == nil {
		t.Fatalf("migrations not applied: %v %v", ms, err)
	}

	t0 := time.Now()
	pg.Stop()
	t.Logf("stop took %v", time.Since(t0))
	if pg.PID() != 0 {
		t.Fatal("PID after Stop")
	}
	if took, err := ping(st, 5*time.Second); err == nil {
		t.Fatal("ping succeeded on a stopped server")
	} else if took > 2*time.Second {
		t.Fatalf("ping on a stopped server took %v (%v); want a quick refusal", took, err)
	} else {
		t.Logf("stopped: ping failed in %v: %v", took, err)
	}

	pg.Start()
	mustPing(t, st, "after restart")

	pg.Pause()
	if took, err := ping(st, 500*time.Millisecond); err == nil {
		t.Fatal("ping succeeded on a paused server")
	} else if !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("paused: ping returned after %v with %v; want a deadline error within ~2s", took, err)
	} else {
		t.Logf("paused: ping failed in %v: %v", took, err)
	}
	// A second ping needs a new connection: the kernel accepts it but the
	// frozen postmaster never answers.
	if took, err := ping(st, 500*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("paused, second ping: %v after %v", err, took)
	}
	pg.Resume()
	mustPing(t, st, "after resume")
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("query after resume: %v", err)
	}

	t0 = time.Now()
	pg.Kill()
	t.Logf("kill took %v", time.Since(t0))
	if _, err := ping(st, 2*time.Second); err == nil {
		t.Fatal("ping succeeded on a killed server")
	}
	pg.Start()
	mustPing(t, st, "after kill and restart")
	if ms, err := st.Migrations(context.Background()); err != nil || len(ms) == 0 || ms[0].AppliedAt == nil {
		t.Fatalf("migrations lost over a crash: %v %v", ms, err)
	}

	// Kill and Stop of a paused server work too.
	pg.Pause()
	pg.Kill()
	pg.Start()
	pg.Pause()
	pg.Stop()
	pg.Start()
	mustPing(t, st, "at the end")
}
