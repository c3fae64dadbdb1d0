package loadtest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the kernel's clock tick for /proc times (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// CPU is where the machine's processor time had gone at one moment: the
// whole machine's busy time and that of the processes asked about, in
// seconds since boot (or since each process started).
type CPU struct {
	Busy  float64
	Procs map[int]float64
	// Postgres is the time of every process named postgres on the machine
	// (the server and its backends), with that of the backends already
	// gone (their parent's reaped children's time).
	Postgres float64
}

// ReadCPU reads /proc/stat and /proc/<pid>/stat for each pid. A process
// that cannot be read counts as zero.
func ReadCPU(pids ...int) (CPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPU{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return CPU{}, errors.New("unexpected /proc/stat")
	}
	var busy float64
	// user nice system idle iowait irq softirq steal: all but idle and iowait.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	c := CPU{Busy: busy / userHZ, Procs: map[int]float64{}, Postgres: postgresCPU()}
	for _, pid := range pids {
		c.Procs[pid] = procCPU(pid)
	}
	return c, nil
}

// postgresCPU sums the user, system and reaped children's time of every
// process whose command name is postgres.
func postgresCPU() float64 {
	var total float64
	for _, p := range snapshot() {
		if p.name == "postgres" {
			total += p.own + p.reaped
		}
	}
	return total / userHZ
}

// proc is one process in a snapshot: its parent, command name, and user
// plus system time in ticks, its own and its reaped children's.
type proc struct {
	ppid        int
	name        string
	own, reaped float64
}

// snapshot reads every process's times. It is not atomic: a child
// reaped between the reading of its parent and its own is in neither
// (the next interval then holds its whole lifetime), one reaped between
// its own reading and its parent's in both. A reading next to many exits
// (Postgres's backends when a pgbench run ends) can be off by a fraction
// of a second that way; readings taken again until stable would take
// seconds each while a pool churns connections, so it is left at that.
func snapshot() map[int]proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		name, f, ok := statFields(b)
		if !ok || len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid: ppid, name: name, own: ticks(f[11]) + ticks(f[12]), reaped: ticks(f[13]) + ticks(f[14])}
	}
	return procs
}

func ticks(s string) float64 {
	n, _ := strconv.ParseFloat(s, 64)
	return n
}

// statFields splits /proc/<pid>/stat into the command name and the fields
// after it (the first is the state, utime is index 11).
func statFields(b []byte) (string, []string, bool) {
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return string(b[open+1 : end]), strings.Fields(string(b[end+1:])), true
}

// procCPU is a process's user plus system time in seconds, all threads.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: fields
	// count from after its closing parenthesis (utime is field 14).
	_, f, ok := statFields(b)
	if !ok || len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / userHZ
}

// Since returns the busy seconds between before and c, the machine's and
// each process's.
func (c CPU) Since(before CPU) CPU {
	d := CPU{Busy: c.Busy - before.Busy, Procs: map[int]float64{}, Postgres: c.Postgres - before.Postgres}
	for pid, v := range c.Procs {
		d.Procs[pid] = v - before.Procs[pid]
	}
	return d
}

// Tree is the processor time of a process and all its descendants at one
// moment, in seconds.
type Tree struct {
	// Total is each live process's user and system time plus the time of
	// the children it has reaped. A child that exits between two readings
	// moves from the live sum to its parent's reaped time, so the
	// difference of two readings is what the tree spent in between
	// (Postgres's backends come and go with their connections).
	Total float64
	// Own is each live descendant's own user and system time (the root's
	// is not in it), and Title its command line: Postgres's backends show
	// their user, database and client there.
	Own   map[int]float64
	Title map[int]string
}

// ReadTrees reads the tree of each root pid. A root that cannot be read
// has a zero Tree.
func ReadTrees(roots ...int) map[int]Tree {
	out := make(map[int]Tree, len(roots))
	procs := snapshot()
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	for _, root := range roots {
		if _, ok := procs[root]; !ok {
			out[root] = Tree{}
			continue
		}
		tr := Tree{Own: map[int]float64{}, Title: map[int]string{}}
		queue := []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			p := procs[pid]
			tr.Total += (p.own + p.reaped) / userHZ
			if pid != root {
				tr.Own[pid] = p.own / userHZ
				tr.Title[pid] = cmdline(pid)
			}
			queue = append(queue, children[pid]...)
		}
		out[root] = tr
	}
	return out
}

// cmdline is a process's command line, its arguments joined by spaces.
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// PostgresByDatabase splits what a Postgres server's process tree spent
// between two readings by the database of each backend: a backend's title
// is "postgres: USER DATABASE CLIENT STATE". The rest counts as "other":
// the server's own processes (the postmaster, checkpointer, WAL writer,
// autovacuum) and the backends that ended in between, whose time is only
// in their parent's reaped total, with no database to name: a client that
// opens and closes connections under load shows there.
func PostgresByDatabase(before, after Tree) map[string]float64 {
	out := map[string]float64{}
	var named float64
	for pid, t := range after.Own {
		f := strings.Fields(after.Title[pid])
		if len(f) < 4 || f[0] != "postgres:" || !strings.Contains(f[3], "(") && f[3] != "[local]" {
			continue
		}
		d := t - before.Own[pid] // a backend born in between: all of its time
		if d < 0 {
			d = t // a pid reused by a new backend
		}
		out[f[2]] += d
		named += d
	}
	out["other"] = after.Total - before.Total - named
	return out
}
