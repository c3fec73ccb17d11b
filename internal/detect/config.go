package detect

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// settings names every threshold of Config for Set, in snake case.
func (c *Config) settings() map[string]any {
	return map[string]any{
		"brute_force_count": &c.BruteForceCount, "brute_force_span": &c.BruteForceSpan,
		"ssh_success_span":  &c.SSHSuccessSpan,
		"suricata_span":     &c.SuricataSpan,
		"sudo_failure_span": &c.SudoFailureSpan, "sudo_failure_high": &c.SudoFailureHigh,
		"port_scan_ports": &c.PortScanPorts, "port_scan_span": &c.PortScanSpan, "port_scan_medium": &c.PortScanMedium,
		"host_sweep_hosts": &c.HostSweepHosts, "host_sweep_span": &c.HostSweepSpan, "host_sweep_medium": &c.HostSweepMedium,
		"intel_span": &c.IntelSpan,
		"dga_names":  &c.DGANames, "dga_span": &c.DGASpan,
		"tunnel_names": &c.TunnelNames, "tunnel_span": &c.TunnelSpan,
		"tunnel_label_len": &c.TunnelLabelLen, "tunnel_name_len": &c.TunnelNameLen,
		"brute_force_users":     &c.BruteForceUsers,
		"windows_failure_count": &c.WindowsFailureCount, "windows_failure_users": &c.WindowsFailureUsers,
		"windows_failure_span": &c.WindowsFailureSpan, "windows_success_span": &c.WindowsSuccessSpan,
		"windows_change_span": &c.WindowsChangeSpan,
		"local_sources":       &c.LocalSources,
	}
}

// Names lists the thresholds Set accepts.
func (c *Config) Names() []string {
	var out []string
	for k := range c.settings() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Set sets thresholds from "name=value" pairs separated by commas: a
// positive integer for counts, a Go duration ("5m") for spans, report or
// ignore for local_sources.
func (c *Config) Set(s string) error {
	for _, kv := range strings.Split(s, ",") {
		if err := c.set(kv); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) set(kv string) error {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("detection setting %q: want name=value", kv)
	}
	switch p := c.settings()[strings.TrimSpace(name)].(type) {
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 1 {
			return fmt.Errorf("detection setting %s: want a positive integer, got %q", name, value)
		}
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(value))
		if err != nil || d <= 0 {
			return fmt.Errorf("detection setting %s: want a positive duration such as 5m, got %q", name, value)
		}
		*p = d
	case *string:
		v := strings.TrimSpace(value)
		if !validLocalPolicy(v) || v == "" {
			return fmt.Errorf("detection setting %s: want %s or %s, got %q", name, LocalReport, LocalIgnore, value)
		}
		*p = v
	default:
		return fmt.Errorf("unknown detection setting %q; known: %s", name, strings.Join(c.Names(), ", "))
	}
	return nil
}
