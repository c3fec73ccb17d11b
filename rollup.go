package vigil

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Roll-ups and entity risk (docs/detections.md, "Roll-ups and entity
// risk"): when one detection fires for many distinct sources of a low or
// medium severity, their observations make one incident for that
// detection and window instead of one each; a source whose risk crosses a
// threshold, or that several detections saw, leaves the roll-up and has
// an incident of its own.

// RollupPolicy is one org's roll-up and entity-risk settings, as its
// enrichment settings hold them.
type RollupPolicy struct {
	// Threshold is how many distinct sources one detection must fire for
	// within Window before their observations roll up; 0 turns roll-ups
	// off.
	Threshold int
	Window    time.Duration
	// Severities are the severities that roll up.
	Severities []string
	// RiskThreshold is the risk within RiskWindow at which a source
	// stands apart; RiskDetections the distinct detections that make it
	// stand apart whatever its risk.
	RiskThreshold  int
	RiskDetections int
}

// RiskWindow is how far back a source's risk and detections count.
const RiskWindow = 24 * time.Hour

// The defaults of the roll-up and risk settings, and their ranges.
const (
	DefaultRollupThreshold     = 20
	DefaultRollupWindowMinutes = 24 * 60
	DefaultRiskThreshold       = 100
	DefaultRiskDetections      = 3

	MaxRollupThreshold     = 1_000_000
	MaxRollupWindowMinutes = 7 * 24 * 60
	MaxRiskThreshold       = 1_000_000
	MaxRiskDetections      = 100
)

// DefaultRollupSeverities are the severities that roll up by default.
func DefaultRollupSeverities() []string { return []string{SeverityLow, SeverityMedium} }

// DefaultRollupPolicy is the policy of an org that changed none of its
// settings.
func DefaultRollupPolicy() RollupPolicy {
	s := DefaultEnrichmentSettings()
	return s.RollupPolicy()
}

// RollsUp reports whether an observation of severity sev may roll up.
func (p RollupPolicy) RollsUp(sev string) bool {
	return p.Threshold > 0 && slices.Contains(p.Severities, sev)
}

// Risky reports whether a source with risk points seen by detections
// distinct detections stands apart.
func (p RollupPolicy) Risky(points, detections int) bool {
	return p.RiskThreshold > 0 && points >= p.RiskThreshold || p.RiskDetections > 0 && detections >= p.RiskDetections
}

// Risk points of an observation, by its severity.
var riskBySeverity = map[string]int{SeverityLow: 10, SeverityMedium: 25, SeverityHigh: 100, SeverityCritical: 200}

// RiskPoints is the risk an observation adds to each of its key nodes:
// by its severity (low 10, medium 25, high 100, critical 200), four times
// that unless it found reconnaissance or generic network noise (type
// recon or network): a brute force, a malware beacon, DGA look-ups or an
// analyst's observation of medium severity reach the default threshold
// alone, a medium scan signature a quarter of it.
func RiskPoints(typ, severity string) int {
	p := riskBySeverity[severity]
	if typ != "recon" && typ != "network" {
		p *= 4
	}
	return p
}

// Rollup is what a roll-up incident says of itself (the rollup field of
// an incident).
type Rollup struct {
	// Detector is the detector that fired; Name what fired, as the
	// title says it ("Suricata: ET SCAN Potential SSH Scan").
	Detector string `json:"detector"`
	Name     string `json:"name"`
	// Sources is how many distinct sources it holds now; Count what they
	// did, summed (each source's count: the artifacts it holds of that
	// source).
	Sources     int       `json:"sources"`
	Count       int       `json:"count"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
}

// RollupSource is one source of a roll-up with its count.
type RollupSource struct {
	Node      Node      `json:"node"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// Reasons an incident was raised apart from a roll-up.
const (
	RaisedRisk       = "risk"
	RaisedDetections = "detections"
)

// RaisedBy says why an incident stands apart from a roll-up: its entity's
// risk within RiskWindow crossed the org's threshold, or enough distinct
// detections saw it (the raised_by field of an incident).
type RaisedBy struct {
	Reason string `json:"reason"`
	// Entity is the node whose risk it was.
	Entity              Node     `json:"entity"`
	Risk                int      `json:"risk"`
	RiskThreshold       int      `json:"risk_threshold"`
	Detections          []string `json:"detections"`
	DetectionsThreshold int      `json:"detections_threshold"`
	// Rollups are the roll-ups the entity's observations left for it.
	Rollups []string  `json:"rollups"`
	At      time.Time `json:"at"`
}

// RollupTitle is the title of a roll-up of sources sources: "Suricata:
// ET SCAN Potential SSH Scan from 4,812 sources".
func RollupTitle(name string, sources int) string {
	noun := "sources"
	if sources == 1 {
		noun = "source"
	}
	return fmt.Sprintf("%s from %s %s", name, Thousands(sources), noun)
}

// Thousands writes n with commas between thousands: 4812 → "4,812".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// rollupRow is a roll-up as the stores select it with an incident: JSON,
// its times in Unix nanoseconds.
type rollupRow struct {
	Detector    string `json:"detector"`
	Name        string `json:"name"`
	Sources     int    `json:"sources"`
	Count       int    `json:"count"`
	WindowStart int64  `json:"window_start"`
	WindowEnd   int64  `json:"window_end"`
}

// ParseIncidentExtras sets what a store selects with an incident beyond
// its columns: the roll-up it is (rollup, JSON as the stores select it)
// and why it was raised (raisedBy, vigil.RaisedBy as JSON); either may be
// empty.
func ParseIncidentExtras(i *Incident, rollup, raisedBy string) error {
	if rollup != "" {
		var r rollupRow
		if err := json.Unmarshal([]byte(rollup), &r); err != nil {
			return fmt.Errorf("incident %s roll-up: %w", i.ID, err)
		}
		i.Rollup = &Rollup{Detector: r.Detector, Name: r.Name, Sources: r.Sources, Count: r.Count,
			WindowStart: time.Unix(0, r.WindowStart).UTC(), WindowEnd: time.Unix(0, r.WindowEnd).UTC()}
	}
	if raisedBy != "" {
		i.RaisedBy = &RaisedBy{}
		if err := json.Unmarshal([]byte(raisedBy), i.RaisedBy); err != nil {
			return fmt.Errorf("incident %s raised_by: %w", i.ID, err)
		}
	}
	return nil
}
