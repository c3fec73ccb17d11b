package detect

import (
	"testing"
	"time"
)

func TestConfigSet(t *testing.T) {
	tests := []struct {
		name, kv string
		ok       bool
		check    func(c Config) bool
	}{
		{"count", "brute_force_count=10", true, func(c Config) bool { return c.BruteForceCount == 10 }},
		{"duration", "port_scan_span=2m", true, func(c Config) bool { return c.PortScanSpan == 2*time.Minute }},
		{"spaces", " dga_names = 3 ", true, func(c Config) bool { return c.DGANames == 3 }},
		{"several", "dga_names=2,tunnel_names=30", true, func(c Config) bool { return c.DGANames == 2 && c.TunnelNames == 30 }},
		{"unknown", "nope=1", false, nil},
		{"no equals", "brute_force_count", false, nil},
		{"zero count", "brute_force_count=0", false, nil},
		{"bad duration", "tunnel_span=5", false, nil},
		{"negative duration", "tunnel_span=-1m", false, nil},
		{"users", "brute_force_users=8", true, func(c Config) bool { return c.BruteForceUsers == 8 }},
		{"local sources ignored", "local_sources=ignore", true, func(c Config) bool { return c.LocalSources == LocalIgnore }},
		{"local sources reported", "local_sources=report", true, func(c Config) bool { return c.LocalSources == LocalReport }},
		{"local sources: bad value", "local_sources=maybe", false, nil},
		{"local sources: empty", "local_sources=", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			err := c.Set(tt.kv)
			if (err == nil) != tt.ok {
				t.Fatalf("Set(%q) error = %v, want ok=%v", tt.kv, err, tt.ok)
			}
			if tt.ok && !tt.check(c) {
				t.Fatalf("Set(%q) gave %+v", tt.kv, c)
			}
		})
	}
	// The brute-force threshold set here really changes detection.
	var c Config
	if err := c.Set("brute_force_count=3"); err != nil {
		t.Fatal(err)
	}
	if w := Default(c)[0].Window(); w.MinCount != 3 {
		t.Fatalf("brute force MinCount = %d, want 3", w.MinCount)
	}
}
