package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat
// (sysconf(_SC_CLK_TCK), 100 on every Linux Go supports).
const clockTick = 10 * time.Millisecond

// procCPU returns the user plus system CPU time of process pid, all
// threads included, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime (field 14) and stime (field 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may contain spaces and parentheses, so fields are counted after the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// procRSS returns the resident set size of process pid in bytes, from
// VmRSS in /proc/<pid>/status.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusKB(b, "VmRSS")
}

// parseStatusKB returns a "Name:   1234 kB" field of /proc/<pid>/status in bytes.
func parseStatusKB(b []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != name {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status: %s is %q", name, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: %s: %w", name, err)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no %s", name)
}

// selfCPU returns this process's user plus system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Machine describes where the figures come from.
type Machine struct {
	CPUModel   string  `json:"cpuModel"`
	NumCPU     int     `json:"numCPU"` // runtime.NumCPU (what nproc prints)
	GoVersion  string  `json:"goVersion"`
	Kernel     string  `json:"kernel"`
	MemTotalGB float64 `json:"memTotalGB"`
	FileLimit  uint64  `json:"fileLimit"`
	// LoadAvgBefore and LoadAvgAfter are /proc/loadavg's 1-minute figure at
	// the start and the end of the run: other work on the machine.
	LoadAvgBefore float64 `json:"loadAvgBefore"`
	LoadAvgAfter  float64 `json:"loadAvgAfter"`
}

func describeMachine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAvgBefore: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = parseCPUModel(b)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if n, err := parseStatusKB(b, "MemTotal"); err == nil {
			m.MemTotalGB = float64(n) / (1 << 30)
		}
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		m.FileLimit = rl.Max
	}
	return m
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo.
func parseCPUModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg returns the 1-minute load average, or -1.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
