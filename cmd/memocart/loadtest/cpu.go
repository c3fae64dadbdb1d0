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
	c := CPU{Busy: busy / userHZ, Procs: map[int]float64{}}
	for _, pid := range pids {
		c.Procs[pid] = procCPU(pid)
	}
	return c, nil
}

// procCPU is a process's user plus system time in seconds, all threads.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: fields
	// count from after its closing parenthesis (utime is field 14).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / userHZ
}

// Since returns the busy seconds between before and c, the machine's and
// each process's.
func (c CPU) Since(before CPU) CPU {
	d := CPU{Busy: c.Busy - before.Busy, Procs: map[int]float64{}}
	for pid, v := range c.Procs {
		d.Procs[pid] = v - before.Procs[pid]
	}
	return d
}
