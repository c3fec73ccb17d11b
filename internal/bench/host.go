package bench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/internal/sqlite"
)

// machine describes this machine and the build of this binary.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(), SQLite: sqlite.DriverName}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			m.Build = rev[:min(12, len(rev))]
			if modified == "true" {
				m.Build += " + uncommitted changes"
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, row := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(row, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, row := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(row, ":"); ok && k == "MemTotal" {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
				break
			}
		}
	}
	return m
}

// hostBusy returns the CPU seconds all processes of the host have used
// (/proc/stat, at USER_HZ 100), or -1 where that is not readable.
func hostBusy() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	first, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(first)
	if len(f) < 5 || f[0] != "cpu" {
		return -1
	}
	var busy float64
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		// user nice system idle iowait irq softirq steal guest guest_nice;
		// guest time is already counted in user.
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return busy / 100
}

// loadAvg returns the 1, 5 and 15 minute load averages of the host.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func sourcesSummary(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
