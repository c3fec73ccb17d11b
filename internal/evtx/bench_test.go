package evtx

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// BenchmarkRead reads and renders as Winlogbeat JSON every record of the
// largest real recordings: a Security log of 869 records and a Sysmon log
// of 565 (records/s is the figure docs/benchmarks.md gives).
func BenchmarkRead(b *testing.B) {
	for _, rel := range []string{
		"Lateral Movement/LM_5145_Remote_FileCopy.evtx",
		"AutomatedTestingTools/PanacheSysmon_vs_AtomicRedTeam01.evtx",
	} {
		data := mustRead(b, rel)
		b.Run(rel, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			records := 0
			for b.Loop() {
				r, err := NewReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				for {
					rec, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if _, err := rec.Winlogbeat(); err != nil {
						b.Fatal(err)
					}
					records++
				}
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
