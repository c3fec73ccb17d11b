package bench

import (
	"os"
	"strings"
	"testing"
)

// TestParseStat reads this process's own /proc/self/stat, and the same
// line with a name holding spaces and parentheses (a process may name
// itself so), and refuses lines that are not one.
func TestParseStat(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	line := string(b)
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	odd := line[:open+1] + "a) (b c" + line[end:]
	for _, tc := range []struct {
		name, line, want string
	}{{"own", line, line[open+1 : end]}, {"odd name", odd, "a) (b c"}} {
		p, ok := parseStat(tc.line)
		if !ok || p.name != tc.want || p.ppid != os.Getppid() || p.own < 0 || p.reaped < 0 {
			t.Errorf("%s: %+v, %v; want name %q, ppid %d", tc.name, p, ok, tc.want, os.Getppid())
		}
	}
	for _, bad := range []string{"", "123 no parentheses", line[:end+3]} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("%q read as a stat line", bad)
		}
	}
}

// TestTreesCPU: this process's tree is read, and a process
// that does not exist is refused naming the flag.
func TestTreesCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	secs, names, err := treesCPU([]int{os.Getpid()})
	if _, ok := secs[os.Getpid()]; err != nil || !ok || names[os.Getpid()] == "" {
		t.Fatalf("own tree: %v %v %v", secs, names, err)
	}
	if _, _, err := treesCPU([]int{1 << 30}); err == nil || !strings.Contains(err.Error(), "--cpu-pids") {
		t.Fatalf("a missing process: %v", err)
	}
	if _, err := parsePIDs("12,x"); err == nil || !strings.Contains(err.Error(), "--cpu-pids") {
		t.Fatalf("parsePIDs(12,x): %v", err)
	}
}
