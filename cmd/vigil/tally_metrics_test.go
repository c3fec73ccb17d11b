package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-soc/vigil/internal/correlate"
)

// TestRegisterTally: /metrics says what the embedded store's detection
// Tally does with keys, by fate, and what it holds (docs/operations.md).
func TestRegisterTally(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerTally(reg, correlate.NewTally(0, 0))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fates := map[string]bool{}
	held := false
	for _, mf := range mfs {
		switch mf.GetName() {
		case "vigil_detect_tally_keys_total":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "fate" {
						fates[l.GetValue()] = true
					}
				}
			}
		case "vigil_detect_tally_held_signals":
			held = true
		}
	}
	for _, f := range []string{"promoted", "spilled", "expired", "late", "logged", "unlogged"} {
		if !fates[f] {
			t.Errorf("vigil_detect_tally_keys_total{fate=%q} missing (have %v)", f, fates)
		}
	}
	if !held {
		t.Error("vigil_detect_tally_held_signals missing")
	}
}
