package vigil

// Severities, lowest first. Observations and incidents share them.
const (
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// SeverityRank orders severities; an unknown severity ranks 0.
func SeverityRank(s string) int {
	switch s {
	case SeverityLow:
		return 1
	case SeverityMedium:
		return 2
	case SeverityHigh:
		return 3
	case SeverityCritical:
		return 4
	}
	return 0
}

// ValidSeverity reports whether s is one of the four severities.
func ValidSeverity(s string) bool { return SeverityRank(s) > 0 }

// MaxSeverity returns the higher of two severities.
func MaxSeverity(a, b string) string {
	if SeverityRank(b) > SeverityRank(a) {
		return b
	}
	return a
}
