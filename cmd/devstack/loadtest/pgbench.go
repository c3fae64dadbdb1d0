package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WithDatabase returns the postgres:// URL u with its database name
// replaced by name: the reference and the service's own load database sit
// on the same server as the one configured.
func WithDatabase(u, name string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		return "", errors.New("want a postgres:// URL")
	}
	p.Path = "/" + name
	return p.String(), nil
}

// Pgbench runs the pgbench binary found on the PATH or in the PostgreSQL
// installation's bin directory.
type Pgbench struct {
	// Path is the pgbench binary; empty looks it up.
	Path string
}

// Find returns a Pgbench whose Path is set, or an error saying how to get
// one.
func (p Pgbench) Find() (Pgbench, error) {
	if p.Path != "" {
		return p, nil
	}
	if path, err := exec.LookPath("pgbench"); err == nil {
		return Pgbench{Path: path}, nil
	}
	return p, errors.New("pgbench not found on the PATH (Debian: apt install postgresql-contrib or postgresql-15)")
}

// Init creates pgbench's tables at scale in the database dbURL (which must
// exist), unless they are there at that scale already.
func (p Pgbench) Init(ctx context.Context, dbURL string, scale int) error {
	// pgbench -i drops and recreates its tables; skip that when the
	// accounts table already has the rows of this scale.
	if rows, err := p.accounts(ctx, dbURL); err == nil && rows == int64(scale)*100_000 {
		return nil
	}
	out, err := exec.CommandContext(ctx, p.Path, "-i", "-q", "-s", strconv.Itoa(scale), dbURL).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench -i: %w\n%s", err, out)
	}
	return nil
}

// Psql is the psql binary installed beside pgbench.
func (p Pgbench) Psql() string { return strings.TrimSuffix(p.Path, "pgbench") + "psql" }

func (p Pgbench) accounts(ctx context.Context, dbURL string) (int64, error) {
	out, err := exec.CommandContext(ctx, p.Psql(), "-XAtqc", "select count(*) from pgbench_accounts", dbURL).Output()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)

// SelectOnly runs `pgbench -S -M prepared` (the built-in select-only
// script: one primary-key read of pgbench_accounts per transaction) with
// clients connections for d and returns its transactions per second.
func (p Pgbench) SelectOnly(ctx context.Context, dbURL string, clients, threads int, d time.Duration) (float64, error) {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, p.Path, "-n", "-S", "-M", "prepared",
		"-c", strconv.Itoa(clients), "-j", strconv.Itoa(threads), "-T", strconv.Itoa(secs), dbURL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("pgbench -S: %w\n%s", err, out.String())
	}
	return ParsePgbenchTPS(out.String())
}

// ParsePgbenchTPS reads the "tps = N (without initial connection time)"
// line pgbench prints at the end of a run.
func ParsePgbenchTPS(out string) (float64, error) {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps line in pgbench output:\n%s", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// SelectOnlyAt runs the same select-only script as SelectOnly, but offered
// at rate transactions per second (`pgbench -R`, an open loop) with every
// transaction logged, and returns their latencies. pgbench counts a
// throttled transaction's latency from when it was scheduled, not from
// when it started, as Open does for the service.
func (p Pgbench) SelectOnlyAt(ctx context.Context, dbURL string, clients, threads int, rate float64, d time.Duration) (Sample, error) {
	dir, err := os.MkdirTemp("", "memocart-pgbench-")
	if err != nil {
		return Sample{}, err
	}
	defer os.RemoveAll(dir)
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, p.Path, "-n", "-S", "-M", "prepared",
		"-c", strconv.Itoa(clients), "-j", strconv.Itoa(threads), "-T", strconv.Itoa(secs),
		"-R", strconv.FormatFloat(rate, 'f', 0, 64), "-l", "--log-prefix", filepath.Join(dir, "log"), dbURL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Sample{}, fmt.Errorf("pgbench -S -R: %w\n%s", err, out.String())
	}
	logs, err := filepath.Glob(filepath.Join(dir, "log.*"))
	if err != nil || len(logs) == 0 {
		return Sample{}, fmt.Errorf("pgbench -l wrote no log in %s:\n%s", dir, out.String())
	}
	s := Sample{Elapsed: time.Duration(secs) * time.Second}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			return Sample{}, err
		}
		lat, err := ParsePgbenchLog(string(b))
		if err != nil {
			return Sample{}, fmt.Errorf("%s: %w", l, err)
		}
		s.Latencies = append(s.Latencies, lat...)
	}
	s.Calls = len(s.Latencies)
	slices.Sort(s.Latencies)
	return s, nil
}

// ParsePgbenchLog reads pgbench's per-transaction log (-l): lines of
// "client_id transaction_no time script_no time_epoch time_us
// [schedule_lag]", where time is the latency in microseconds. Skipped
// transactions (time "skipped", only with --latency-limit) are left out.
func ParsePgbenchLog(log string) ([]time.Duration, error) {
	var out []time.Duration
	for i, line := range strings.Split(strings.TrimSpace(log), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: want at least 6 fields, got %q", i+1, line)
		}
		if f[2] == "skipped" {
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || us < 0 {
			return nil, fmt.Errorf("line %d: latency %q is not a number of microseconds", i+1, f[2])
		}
		out = append(out, time.Duration(us)*time.Microsecond)
	}
	return out, nil
}
