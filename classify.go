package vigil

import (
	"encoding/json"
	"time"
)

// IncidentFacts is what classification rules see of an incident: the
// incident.* fields of a rule's conditions (docs/detections.md).
type IncidentFacts struct {
	Severity      string // the computed severity, before any rule
	ArtifactCount int
	NodeCount     int
	Title         string
	// Rollup, on a roll-up only: its detection and sources; RaisedBy, on
	// an incident an entity's risk set apart: why.
	Rollup       *Rollup
	RaisedBy     *RaisedBy
	Observations []ObservationRef
	Artifacts    []ArtifactFacts
	Nodes        []Node
}

// ArtifactFacts is an artifact as rules see it: its source and event.
type ArtifactFacts struct {
	Source    string
	Raw       string
	Timestamp time.Time
	Event     json.RawMessage // when stored (older versions); else parsed from Raw
}

// MaxFactArtifacts bounds the artifacts (newest first) whose events the
// rules of one incident look at, so that classifying a huge incident
// stays cheap.
const MaxFactArtifacts = 500
