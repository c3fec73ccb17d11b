// Package detectionrules runs each org's Sigma detection rules: a Cache
// reads an org's enabled rules from the store, compiles them once
// (internal/sigma) and keeps them for a bounded time; each rule becomes a
// detect.Detector, so that its matches go through the same windows,
// screens and correlation as the built-in detectors' signals.
package detectionrules

import (
	"net/netip"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
)

// Span is how long after a rule's last match from a key the next match
// from that key still grows the same observation: a burst of matches is
// one observation, as a built-in detector's burst is.
const Span = time.Hour

// DetectorPrefix starts the detector name of every Sigma rule
// ("sigma:" and the rule's Vigil id), as suppressions and the store's
// windows see it.
const DetectorPrefix = "sigma:"

// keyFields are the fields whose value keys a match, the first present:
// the acting address, else the account, else the host that logged it.
var keyFields = []string{"source.ip", "client.ip", "user.name", "host.name"}

// actingAddress reports whether a field's value is an acting address (a
// source or client address), which a match is keyed by as the built-in
// detectors key it (detect.SourceKey): a local source as "127.0.0.1 on
// web-01", the host its key node, since 127.0.0.1 on one server is not
// 127.0.0.1 on another; dropped when the local-source policy ignores it.
func actingAddress(field, v string) bool {
	if field != "source.ip" && field != "client.ip" {
		return false
	}
	_, err := netip.ParseAddr(v)
	return err == nil
}

// ruleDetector is one compiled Sigma detection rule as a detector.
type ruleDetector struct {
	name    string
	rule    *sigma.Compiled
	typ     string
	sev     string
	ruleRef string // the rule's title and ids, for descriptions
	local   string // the local-source policy (detect.LocalReport or LocalIgnore)
}

func newRuleDetector(id string, c *sigma.Compiled, local string) *ruleDetector {
	r := c.Rule
	return &ruleDetector{name: DetectorPrefix + id, rule: c, typ: ObservationType(r.Tags), sev: Severity(r.Level), ruleRef: ruleRef(id, r), local: local}
}

// ruleRef names a rule in descriptions: its title, Vigil id, Sigma id and
// author (the Detection Rule License of SigmaHQ's rules asks that
// messages based on a rule's matches name its author).
func ruleRef(id string, r *sigma.Rule) string {
	ref := r.Title + " (rule " + id
	if r.ID != "" && r.ID != id {
		ref += ", Sigma id " + r.ID
	}
	if r.Author != "" {
		ref += ", by " + r.Author
	}
	return ref + ")"
}

func (d *ruleDetector) Name() string { return d.name }

func (d *ruleDetector) Window() detect.Window { return detect.Window{Span: Span, MinCount: 1} }

// Signals returns one signal when ev matches the rule, keyed by its
// first key field present ("" when none: the org is the key), an acting
// address as the built-in detectors key it (actingAddress).
func (d *ruleDetector) Signals(ev *detect.Event) []vigil.Signal {
	if !d.InScope(ev) {
		return nil
	}
	return d.ScopedSignals(ev)
}

// Scope is the rule's log source (detect.Scoped): the detect stage sorts
// a batch out once for all the rules of one log source.
func (d *ruleDetector) Scope() string { return d.rule.Scope() }

// InScope reports whether ev is of the rule's log source.
func (d *ruleDetector) InScope(ev *detect.Event) bool {
	return d.rule.InScopePrepared(prepared(ev, d.rule.FieldSet()))
}

// ScopedSignals is Signals for an event of the rule's log source. The
// rules of a scope read the event through one sigma.Prepared, the event's
// Scratch, which reads each field once for all of them.
func (d *ruleDetector) ScopedSignals(ev *detect.Event) []vigil.Signal {
	if !d.rule.MatchPrepared(prepared(ev, d.rule.FieldSet())) {
		return nil
	}
	key, keys, ok := d.key(ev.Fields)
	if !ok {
		return nil
	}
	return []vigil.Signal{{Key: key, Nodes: vigil.MergeNodeRefs(parse.Nodes(ev.Fields), keys)}}
}

// key returns a match's key and key nodes, from its first key field
// present; false when the local-source policy drops the match.
func (d *ruleDetector) key(f parse.Event) (string, []vigil.NodeRef, bool) {
	for _, field := range keyFields {
		v, _ := f[field].(string)
		if v == "" {
			continue
		}
		if actingAddress(field, v) {
			return detect.SourceKey(f, v, d.local)
		}
		if dom, ok := f["user.domain"].(string); ok && field == "user.name" {
			// A Windows account: its User node, as parse.Nodes names it.
			v = parse.WindowsAccount(v, dom)
		}
		if typ, val := parse.NodeOf(nodeTypeOf(field), v); val != "" {
			return val, []vigil.NodeRef{{Type: typ, Value: val, Key: true}}, true
		}
	}
	return "", nil, true
}

// scratch is the Sigma rules' detect.Scratch: a sigma.Prepared, bound to
// the event at the first rule that reads it.
type scratch struct {
	p     *sigma.Prepared
	bound bool
}

func (s *scratch) Reset() { s.bound = false }

// prepared returns ev's sigma.Prepared for the rules of set: ev's Scratch,
// made when it has none (or one for other rules), bound to ev once.
func prepared(ev *detect.Event, set *sigma.FieldSet) *sigma.Prepared {
	s, _ := ev.Scratch.(*scratch)
	if s == nil || s.p.FieldSet() != set {
		s = &scratch{p: sigma.NewPrepared(set)}
		ev.Scratch = s
	}
	if !s.bound {
		s.p.Reset(sigma.Event{Source: ev.Source, Fields: ev.Fields, Raw: ev.Raw, Grams: (*sigma.Grams)(&ev.RawGrams), GramsSet: &ev.RawGramsSet})
		s.bound = true
	}
	return s.p
}

// sigmaEvent is ev as the Sigma engine reads it, with its line's grams,
// read at the first rule that reads ev.
func sigmaEvent(ev *detect.Event) sigma.Event {
	if !ev.RawGramsSet {
		(*sigma.Grams)(&ev.RawGrams).Add(ev.Raw)
		ev.RawGramsSet = true
	}
	return sigma.Event{Source: ev.Source, Fields: ev.Fields, Raw: ev.Raw, Grams: (*sigma.Grams)(&ev.RawGrams)}
}

func nodeTypeOf(field string) string {
	switch field {
	case "user.name":
		return vigil.NodeUser
	case "host.name":
		return vigil.NodeHost
	}
	return vigil.NodeIP
}

// Describe names the rule, its level and what matched.
func (d *ruleDetector) Describe(key string, w vigil.WindowState) vigil.Finding {
	n := "1 match"
	if w.Count != 1 {
		n = itoa(w.Count) + " matches"
	}
	desc := "Sigma rule " + d.ruleRef + ": " + n
	if key != "" {
		desc += " from " + key
	}
	desc += ", " + w.First.UTC().Format(time.RFC3339)
	if w.Last.After(w.First) {
		desc += " – " + w.Last.UTC().Format(time.RFC3339)
	}
	if fp := d.rule.Rule.FalsePositives; len(fp) > 0 {
		desc += ". False positives: " + strings.Join(fp, "; ")
	}
	return vigil.Finding{Type: d.typ, Severity: d.sev, Title: d.rule.Rule.Title, Description: desc,
		Specificity: vigil.SpecificitySignature, Rollup: "Sigma: " + d.rule.Rule.Title}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			break
		}
	}
	return string(b[i:])
}

// Severity maps a Sigma level to an observation's severity:
// informational and low are low, medium medium, high high, critical
// critical; a rule without a level is medium.
func Severity(level string) string {
	switch level {
	case "informational", "low":
		return vigil.SeverityLow
	case "high":
		return vigil.SeverityHigh
	case "critical":
		return vigil.SeverityCritical
	}
	return vigil.SeverityMedium
}

// tacticTypes maps MITRE ATT&CK tactics (Sigma tags attack.<tactic>, with
// - or _) to the observation types Vigil's detectors use.
var tacticTypes = []struct{ tactic, typ string }{
	{"credential-access", "auth"},
	{"privilege-escalation", "auth"},
	{"initial-access", "intrusion"},
	{"execution", "intrusion"},
	{"persistence", "intrusion"},
	{"defense-evasion", "intrusion"},
	{"lateral-movement", "intrusion"},
	{"impact", "intrusion"},
	{"reconnaissance", "recon"},
	{"discovery", "recon"},
	{"exfiltration", "exfiltration"},
	{"command-and-control", "malware"},
	{"collection", "exfiltration"},
	{"resource-development", "malware"},
}

// ObservationType is the type of a rule's observations: that of its
// first ATT&CK tactic tag (tacticTypes), else "sigma".
func ObservationType(tags []string) string {
	for _, t := range tags {
		tactic, ok := strings.CutPrefix(strings.ToLower(t), "attack.")
		if !ok {
			continue
		}
		tactic = strings.ReplaceAll(tactic, "_", "-")
		for _, tt := range tacticTypes {
			if tt.tactic == tactic {
				return tt.typ
			}
		}
	}
	return "sigma"
}
