package vigil

import (
	"slices"
	"time"
)

// Signal is one artifact's contribution to a detection: detector Detector
// saw it under Key (e.g. the attacking address) at At. Member is what the
// detection counts distinct values of (a port, a user name), if anything.
type Signal struct {
	ArtifactID string
	At         time.Time
	Member     string
	// Nodes the signal adds to the observation, with their roles.
	Nodes []NodeRef
}

// WindowState summarizes the signals of one (detector, key) in a window,
// or in the whole burst once a detection has fired.
type WindowState struct {
	Count    int // signals (artifacts)
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

// Finding is what a detection says about its window.
type Finding struct {
	Type        string
	Severity    string
	Title       string // the incident's title if this finding opens one
	Description string
}

// Detection is the batch of signals of one (detector, key) to evaluate.
// The store evaluates it atomically: it records the signals (once per
// artifact, so a redelivered artifact counts once), and when the window
// of Span ending at the newest signal holds at least MinCount signals and
// MinDistinct distinct members, it records an observation built by
// Describe — or, while an earlier burst of the same key is still active
// (its last signal within Span, its incident still open), grows that
// burst's observation instead: artifacts and nodes appended, description
// and severity rebuilt.
type Detection struct {
	Detector    string
	Key         string
	Span        time.Duration
	MinCount    int
	MinDistinct int
	// Requires names a detector whose burst for the same key must be
	// active for this detection to fire (a success after a brute force).
	Requires string
	Signals  []Signal
	Describe func(key string, w WindowState) Finding
}

// MaxObservationArtifacts bounds the artifact ids one detected
// observation lists; the incident still counts them all through its
// observations' windows.
const MaxObservationArtifacts = 5000

// SignalPoint is a recorded signal as the burst search sees it: its time
// (Unix nanoseconds) and member.
type SignalPoint struct {
	At     int64
	Member string
}

// Detected is an observation that a detection recorded or grew, and the
// incident it belongs to.
type Detected struct {
	ObservationID string
	IncidentID    string
}

// SummarizeWindow describes a window from its signals: their count,
// distinct non-empty members (the first 20 in order in Members), and the
// times of the first and last.
func SummarizeWindow(points []SignalPoint) WindowState {
	var st WindowState
	if len(points) == 0 {
		return st
	}
	st.Count = len(points)
	first, last := points[0].At, points[0].At
	seen := map[string]bool{}
	for _, p := range points {
		first, last = min(first, p.At), max(last, p.At)
		if p.Member != "" && !seen[p.Member] {
			seen[p.Member] = true
			st.Members = append(st.Members, p.Member)
		}
	}
	st.Distinct = len(st.Members)
	slices.Sort(st.Members)
	if len(st.Members) > 20 {
		st.Members = st.Members[:20]
	}
	st.First, st.Last = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
	return st
}

// MaxBurstScan bounds the recorded signals one burst search reads.
const MaxBurstScan = 20000

// MaxGrowScan bounds the signals read to describe a growing burst: its
// newest ones. A burst that goes on for minutes at live rates holds tens
// of thousands of signals, and rereading them on every growth was half of
// detection's cost; its count stays exact (a running total), the distinct
// members are those of the newest MaxGrowScan, and its severity never
// drops as it grows.
const MaxGrowScan = 1000

// FindBurst finds, among the recorded signals of one (detector, key)
// sorted by time, the first window of span that ends at or after oldest
// (the oldest signal just recorded) while it can still hold a signal up to
// newest, and holds at least minCount signals and minDistinct distinct
// members. Signals recorded by another worker or an earlier late batch
// may lie on either side of the new ones, so windows ending at them count
// too. The burst runs from that window's first signal through the signals
// after its last that follow each other within span. Both stores call it
// inside the transaction that holds the key's lock.
func FindBurst(sigs []SignalPoint, span time.Duration, minCount, minDistinct int, oldest, newest int64) (from, to int64, ok bool) {
	sp, minCount := int64(span), max(minCount, 1)
	members := map[string]int{}
	end := -1
	for i, j := 0, 0; j < len(sigs); j++ {
		if sigs[j].At > newest+sp {
			break // no later window holds a new signal
		}
		if m := sigs[j].Member; m != "" {
			members[m]++
		}
		for sigs[i].At < sigs[j].At-sp {
			if m := sigs[i].Member; m != "" {
				if members[m]--; members[m] == 0 {
					delete(members, m)
				}
			}
			i++
		}
		if sigs[j].At >= oldest && j-i+1 >= minCount && len(members) >= minDistinct {
			from, end = sigs[i].At, j
			break
		}
	}
	if end < 0 {
		return 0, 0, false
	}
	to = sigs[end].At
	for _, s := range sigs[end+1:] {
		if s.At-to > sp {
			break
		}
		to = s.At
	}
	return from, to, true
}

// MergeSignals returns the distinct nodes of signals (a node is a key if
// any signal names it as one) and their distinct artifact ids, in
// first-seen order.
func MergeSignals(signals []Signal) ([]NodeRef, []string) {
	var refs []NodeRef
	idx := map[[2]string]int{}
	var ids []string
	seen := map[string]bool{}
	for _, sg := range signals {
		if !seen[sg.ArtifactID] {
			seen[sg.ArtifactID] = true
			ids = append(ids, sg.ArtifactID)
		}
		for _, n := range sg.Nodes {
			k := [2]string{n.Type, n.Value}
			if i, ok := idx[k]; ok {
				refs[i].Key = refs[i].Key || n.Key
				continue
			}
			idx[k] = len(refs)
			refs = append(refs, n)
		}
	}
	return refs, ids
}
