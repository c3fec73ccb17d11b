package storetest

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// OpenIncidentCounts are the numbers of open incidents BenchCorrelate
// correlates beside: an empty org, a busy one and one far past what any
// analyst works through.
var OpenIncidentCounts = []int{0, 10_000, 200_000}

// Seed fills org of a fresh store with n open incidents (status New, not
// merged), each active at at and with a key node of its own that no
// observation of the benchmark names, inserted in bulk by the store's own
// SQL.
type Seed func(b *testing.B, org string, n int, at time.Time)

// BenchCorrelate measures correlating one observation through the engine
// (correlate.Engine.Record) in an org with each of OpenIncidentCounts open
// incidents, all active within the correlation window: what a correlation
// costs must not depend on how many incidents are open. open returns a
// fresh, empty store and its Seed. The observations come in pairs sharing
// a new key node (an IP): the first opens an incident, the second joins
// it; each also names one host, a context node every observation shares.
// An op is one observation; cpu-ns/op is this process's CPU time per
// observation (all of it for an embedded store, the client's alone for a
// server).
func BenchCorrelate(b *testing.B, open func(b *testing.B) (correlate.Store, Seed)) {
	for _, n := range OpenIncidentCounts {
		b.Run(fmt.Sprintf("open=%d", n), func(b *testing.B) {
			s, seed := open(b)
			org := vigil.NewID()
			now := vigil.Now()
			seed(b, org, n, now)
			e := correlate.NewEngine(s, nil, policy)
			b.ReportAllocs()
			cpu0 := ProcessCPU(b)
			i := 0
			for b.Loop() {
				at := now.Add(time.Duration(i) * time.Microsecond)
				o := &vigil.Observation{ID: vigil.NewID(), Type: "bench.finding", Description: "bench", Severity: vigil.SeverityMedium,
					Nodes:     []vigil.NodeRef{ipNode(fmt.Sprintf("2001:db8::%x", i/2)), hostNode("bench-host")},
					CreatedAt: at, UpdatedAt: at}
				if err := e.Record(b.Context(), org, o, "bench"); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(ProcessCPU(b)-cpu0)/float64(i), "cpu-ns/op")
		})
	}
}

// ProcessCPU returns the CPU time (user and system) of the process so far.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
