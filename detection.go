package vigil

import "time"

// The vocabulary of detection: a detector emits Signals; the Signals of
// one key in a batch make a Detection, which correlate.Engine evaluates;
// a burst that fires or grows is summarized as a WindowState, which the
// detector describes as a Finding, the observation recorded.

// Signal is one artifact's evidence for a detector, counted under Key (e.g.
// the attacking address) at At; Member is what the detector counts
// distinct values of (a port, a user name), if anything.
//
// A signal counts what its line records, not the line: Count attempts
// (1 when 0), or nothing when it is Evidence — a line linked to the
// observation that records no attempt of its own (a recap such as "PAM 2
// more authentication failures", or PAM's line about a guess that sshd
// logs itself). Lines of one Unit record one event however many there
// are: the first signal of a unit of (detector, key) counts, the others
// within a minute of it are evidence (docs/detections.md, "Counting").
type Signal struct {
	Key        string
	ArtifactID string
	At         time.Time
	Member     string
	// Count is how many attempts (look-ups, packets) the line records:
	// 1 when 0; 3 for sudo's "3 incorrect password attempts".
	Count int
	// Evidence marks a line that counts nothing.
	Evidence bool
	// Unit names the event the line records when several lines may
	// record the same one (BIND's "query:" and "query failed (REFUSED)"
	// lines of one query); "" when the line is its own event.
	Unit string
	// Nodes the signal adds to the observation, with their roles.
	Nodes []NodeRef
	// EngineEvent marks a sensor's report on its own work rather than on
	// an attack: a Suricata decoder, stream or app-layer event (its
	// "SURICATA …" signatures). Such signals count only in the orgs that
	// promote them (EnrichmentSettings.SuricataEngineEvents); elsewhere
	// their artifacts stay searchable and nothing else comes of them.
	EngineEvent bool
}

// Weight is what the signal adds to its window's count: 0 for evidence,
// else Count (at least 1).
func (s Signal) Weight() int {
	if s.Evidence {
		return 0
	}
	return max(s.Count, 1)
}

// WindowState summarizes the signals of one (detector, key) that fired,
// or of a burst that grows: what the detector describes.
type WindowState struct {
	Count    int // what the signals count: the sum of their weights
	Distinct int // distinct members
	First    time.Time
	Last     time.Time
	Members  []string // distinct members, at most 20, for descriptions
	// Nodes are the distinct nodes of the signals being recorded.
	Nodes []NodeRef
	// Grown is true when the detection had already fired and its
	// observation is growing.
	Grown bool
}

// Finding is the observation a detector makes of a window: its type,
// severity and description, the title it gives its incident, and how
// specific it is.
type Finding struct {
	Type        string
	Severity    string
	Title       string // the incident's title while this finding heads it
	Description string
	// Specificity ranks findings of one severity (see TitleRank); the
	// zero value is SpecificityBehavior.
	Specificity int
	// Rollup names what fired without naming its source, as a roll-up
	// of many sources is titled ("Suricata: ET SCAN Potential SSH Scan",
	// "Port scan"); findings of one detector and name roll up together.
	// Empty: the detector's name.
	Rollup string
}

// How precisely a finding names what happened. An incident is named and
// rated after its most severe finding and, among equally severe ones,
// the most specific (then the newest): a Suricata signature that names
// the attack over a threshold on generic events, both over the sensor's
// own decoder noise.
const (
	// SpecificityEngineEvent: a sensor's report on its own decoding (a
	// Suricata decoder or stream event), not on an attack.
	SpecificityEngineEvent = -10
	// SpecificityBehavior: a threshold over generic events (failed
	// logins, denied ports, odd DNS names).
	SpecificityBehavior = 0
	// SpecificitySignature: a rule written for one attack (an IDS
	// signature), or a success that follows a brute force.
	SpecificitySignature = 10
	// SpecificityIndicator: a known-bad indicator (threat intelligence).
	SpecificityIndicator = 20
	// SpecificityAnalyst: an observation an analyst recorded.
	SpecificityAnalyst = 30
)

// TitleRank orders the observations of an incident for its title and
// severity: severity first, then specificity (which stays within ±500).
// The highest rank heads the incident; equal ranks go to the newest
// observation.
func TitleRank(severity string, specificity int) int {
	return SeverityRank(severity)*1000 + max(-500, min(500, specificity))
}

// Detection is the signals of one (detector, key) in a batch, with the
// detector's thresholds and description: correlate.Engine evaluates it
// atomically. It records the signals (once per artifact, so a redelivered
// artifact counts once), and when the window of Span ending at the newest
// signal meets the thresholds (Met: a count of at least MinCount with
// MinDistinct distinct members, or OrDistinct distinct members whatever
// the count), it records an observation built by Describe — or, while an
// earlier burst of the same key is still active (its last signal within
// Span, its incident still open), grows that burst's observation instead:
// artifacts and nodes appended, description and severity rebuilt.
type Detection struct {
	Detector    string
	Key         string
	Span        time.Duration
	MinCount    int
	MinDistinct int
	// OrDistinct, when positive, fires a window of that many distinct
	// members whatever its count: logins as many users that never got
	// to a password.
	OrDistinct int
	// Order, when set, also asks that the window's members appear in
	// this order (OrderChain): a temporal_ordered Sigma correlation's
	// base rules.
	Order []string
	// Requires names a detector whose burst for the same key must be
	// active for this detection to fire (a success after a brute force).
	Requires string
	Signals  []Signal
	Describe func(key string, w WindowState) Finding
}

// Met reports whether a window of count (the sum of its signals'
// weights) and distinct members meets d's thresholds.
func (d *Detection) Met(count, distinct int) bool {
	return ThresholdMet(d.MinCount, d.MinDistinct, d.OrDistinct, count, distinct)
}

// ThresholdMet reports whether a window of count and distinct members
// holds at least minCount (at least 1) with minDistinct distinct members,
// or, when orDistinct is positive, orDistinct distinct members.
func ThresholdMet(minCount, minDistinct, orDistinct, count, distinct int) bool {
	return count >= max(minCount, 1) && distinct >= minDistinct || orDistinct > 0 && distinct >= orDistinct
}

// IntelHit is a node value of an artifact that a threat-intelligence feed
// lists: enrichment finds it, the threat_intel detector reports it.
type IntelHit struct {
	Feed          string
	Indicator     string // as listed: the address, the prefix, the (parent) domain, URL or hash
	IndicatorType string // ip, cidr, domain, url, md5, sha1, sha256, sha512
	NodeType      string
	NodeValue     string
}

// MaxObservationArtifacts bounds the artifact ids one detected
// observation lists; the incident still counts them all through its
// observations' windows.
const MaxObservationArtifacts = 5000
