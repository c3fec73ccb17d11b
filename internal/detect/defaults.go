package detect

import "time"

// Config holds every detector's thresholds; zero values take the defaults
// of DESIGN §8.
type Config struct {
	BruteForceCount int
	BruteForceSpan  time.Duration
}

// Default returns every detector, configured by cfg.
func Default(cfg Config) []Detector {
	return []Detector{
		SSHBruteForce{Count: cfg.BruteForceCount, Span: cfg.BruteForceSpan},
	}
}
