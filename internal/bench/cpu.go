package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The CPU of the other processes a server uses (--cpu-pids): PostgreSQL,
// whose postmaster forks a backend per connection, NATS and the
// VictoriaLogs nodes, read from /proc at the start and the end of the
// load. A process's CPU is its own (utime + stime) and, for a tree, that
// of every live descendant plus what exited children left in their
// parent's cutime + cstime once reaped: each process counted once.

// procCPU is one /proc/<pid>/stat: its name, parent and CPU in ticks.
type procCPU struct {
	name        string
	ppid        int
	own, reaped float64
}

// readProcs reads every process of /proc.
func readProcs() (map[int]procCPU, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	out := make(map[int]procCPU, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // it exited
		}
		p, ok := parseStat(string(data))
		if ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStat reads the fields of /proc/<pid>/stat: "pid (comm) state ppid
// … utime stime cutime cstime …", comm in parentheses that may hold
// spaces and parentheses itself.
func parseStat(s string) (procCPU, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procCPU{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return procCPU{}, false
	}
	num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v }
	ppid, _ := strconv.Atoi(f[1])
	return procCPU{name: s[open+1 : end], ppid: ppid, own: num(11) + num(12), reaped: num(13) + num(14)}, true
}

// treesCPU returns the CPU seconds (at USER_HZ 100) of each of pids with
// its descendants, by the root's pid.
func treesCPU(pids []int) (map[int]float64, map[int]string, error) {
	procs, err := readProcs()
	if err != nil {
		return nil, nil, err
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	secs, names := map[int]float64{}, map[int]string{}
	for _, root := range pids {
		p, ok := procs[root]
		if !ok {
			return nil, nil, fmt.Errorf("--cpu-pids: no process %d", root)
		}
		names[root] = p.name
		stack := []int{root}
		for len(stack) > 0 {
			pid := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			q := procs[pid]
			secs[root] += (q.own + q.reaped) / 100
			stack = append(stack, children[pid]...)
		}
	}
	return secs, names, nil
}

// parsePIDs reads --cpu-pids.
func parsePIDs(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--cpu-pids: %q is not a process id", f)
		}
		out = append(out, pid)
	}
	return out, nil
}

// otherCPU is the CPU of --cpu-pids over the load: start it at the start,
// call the function it returns at the end.
func (b *bench) otherCPU() func(rep *LoadReport) {
	pids, err := parsePIDs(b.f.CPUPIDs)
	if err != nil || len(pids) == 0 {
		return func(*LoadReport) {}
	}
	s0, _, err := treesCPU(pids)
	if err != nil {
		b.problem("%v", err)
		return func(*LoadReport) {}
	}
	return func(rep *LoadReport) {
		s1, names, err := treesCPU(pids)
		if err != nil {
			b.problem("%v (at the end of the load)", err)
			return
		}
		rep.OtherCPU = map[string]float64{}
		for _, pid := range pids {
			d := s1[pid] - s0[pid]
			rep.OtherCPU[fmt.Sprintf("%s %d", names[pid], pid)] = d
			rep.OtherCPUSeconds += d
		}
	}
}

// allCPU is the CPU seconds of this process and of the trees of
// --cpu-pids (those it can read).
func (b *bench) allCPU() float64 {
	sum := cpuSeconds()
	if pids, err := parsePIDs(b.f.CPUPIDs); err == nil && len(pids) > 0 {
		if secs, _, err := treesCPU(pids); err == nil {
			for _, v := range secs {
				sum += v
			}
		}
	}
	return sum
}
