package detect

import "time"

// Config holds every detector's thresholds; zero values take the
// defaults given beside each field (docs/detections.md lists them with
// the --detect names that set them).
type Config struct {
	BruteForceCount int           // failed SSH password attempts from one source: 5
	BruteForceUsers int           // or logins as 5 distinct users, tried or unknown
	BruteForceSpan  time.Duration // within 5 minutes

	SSHSuccessSpan time.Duration // an accepted login up to 1 h after a brute force

	SuricataSpan time.Duration // one alert observation per (signature, source) grows for 1 h

	SudoFailureSpan time.Duration // sudo/su failures of one account: a burst while 15 minutes apart
	SudoFailureHigh int           // high from 3 failures in the burst

	PortScanPorts  int           // denied distinct destination ports from one source: 20
	PortScanSpan   time.Duration // within 1 minute
	PortScanMedium int           // medium from 100 ports

	HostSweepHosts  int           // denied distinct destination addresses on one port: 20
	HostSweepSpan   time.Duration // within 1 minute
	HostSweepMedium int           // medium from 100 addresses

	IntelSpan time.Duration // one threat-intel observation per indicator grows for 1 h

	DGANames int           // distinct DGA-like names looked up by one client: 1
	DGASpan  time.Duration // within 1 h

	TunnelNames    int           // distinct long random names under one parent from one client: 20
	TunnelSpan     time.Duration // within 5 minutes
	TunnelLabelLen int           // a label of 25 characters or more
	TunnelNameLen  int           // or a name of 60 or more

	WindowsFailureCount int           // failed Windows logon attempts from one source: 5
	WindowsFailureUsers int           // or attempts on 5 distinct accounts (a spray)
	WindowsFailureSpan  time.Duration // within 5 minutes
	WindowsSuccessSpan  time.Duration // a logon up to 1 h after failed logons
	WindowsChangeSpan   time.Duration // one observation per account or host and kind of change grows for 1 h

	// LocalSources is what every detector does with a source address of
	// the logging host itself (loopback, or the line's own destination):
	// LocalReport (the default) or LocalIgnore.
	LocalSources string
}

// Default returns every detector, configured by cfg.
func Default(cfg Config) []Detector {
	return append([]Detector{
		SSHBruteForce{Count: cfg.BruteForceCount, Users: cfg.BruteForceUsers, Span: cfg.BruteForceSpan, Local: cfg.LocalSources},
		SSHSuccess{Span: cfg.SSHSuccessSpan, Local: cfg.LocalSources},
		SuricataAlert{Span: cfg.SuricataSpan, Local: cfg.LocalSources},
		SudoFailure{Span: cfg.SudoFailureSpan, High: cfg.SudoFailureHigh},
		PortScan{Ports: cfg.PortScanPorts, Span: cfg.PortScanSpan, Medium: cfg.PortScanMedium, Local: cfg.LocalSources},
		HostSweep{Hosts: cfg.HostSweepHosts, Span: cfg.HostSweepSpan, Medium: cfg.HostSweepMedium, Local: cfg.LocalSources},
		ThreatIntel{Span: cfg.IntelSpan},
		DGA{Names: cfg.DGANames, Span: cfg.DGASpan, Local: cfg.LocalSources},
		DNSTunnel{Names: cfg.TunnelNames, Span: cfg.TunnelSpan, LabelLen: cfg.TunnelLabelLen, NameLen: cfg.TunnelNameLen, Local: cfg.LocalSources},
		WindowsLogonFailures{Count: cfg.WindowsFailureCount, Users: cfg.WindowsFailureUsers, Span: cfg.WindowsFailureSpan, Local: cfg.LocalSources},
		WindowsLogonSuccess{Span: cfg.WindowsSuccessSpan, Local: cfg.LocalSources},
	}, WindowsChanges(cfg.WindowsChangeSpan)...)
}
