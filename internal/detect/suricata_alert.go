package detect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// SuricataAlert turns Suricata alerts into observations: one per
// (signature, source address), growing while the source keeps tripping
// the signature within Span (default 1 h). EVE severity 1 is high, 2
// medium, 3 and above low; malware, trojan and command-and-control
// alerts are of type malware, scans and information leaks recon, the
// rest network.
//
// Suricata's own decoder, stream and app-layer events (its "SURICATA …"
// signatures, sids 2200000–2299999: invalid checksums, stream anomalies,
// malformed HTTP) are signals marked EngineEvent: capture noise that the
// org's screen drops unless it promotes them. Their findings rank below a
// signature's (vigil.SpecificityEngineEvent), so that promoted they never
// name an incident that holds an attack.
//
// The source address is the key node. The destination is context (the
// attacked server), except for malware alerts, where it is the address
// an infected host beacons to and so a key as well, with the HTTP or TLS
// server name.
type SuricataAlert struct {
	Span  time.Duration
	Local string // LocalReport or LocalIgnore
}

// NameSuricataAlert is the detector's name.
const NameSuricataAlert = "suricata_alert"

func (d SuricataAlert) Name() string { return NameSuricataAlert }

func (d SuricataAlert) Window() Window {
	return Window{Span: orDur(d.Span, time.Hour), MinCount: 1}
}

// alertInfo is what an alert says beyond the window's counts.
type alertInfo struct {
	sid, signature, category string
	severity                 int64
	typ                      string
	engine                   bool // a Suricata engine event
}

// alert reads what an alert event says, or ok false when ev is none.
func alert(ev *Event) (info alertInfo, src string, ok bool) {
	f := ev.Fields
	if str(f, "event.kind") != "alert" || (str(f, "rule.name") == "" && str(f, "rule.id") == "") {
		return info, "", false
	}
	if src, ok = validIP(str(f, "source.ip")); !ok {
		return info, "", false
	}
	info = alertInfo{sid: str(f, "rule.id"), signature: str(f, "rule.name"), category: str(f, "rule.category")}
	var known bool
	if info.severity, known = num(f, "event.severity"); !known {
		info.severity = 3
	}
	info.typ = alertType(info.signature, info.category)
	info.engine = engineEvent(info.sid, info.signature)
	return info, src, true
}

// engineEvent reports whether an alert is one of Suricata's own engine
// events: the rules shipped with Suricata for its decoder, stream and
// app-layer parsers, all named "SURICATA …" and numbered 2200000–2299999
// (Emerging Threats rules use 2000000–2199999 and 2800000 up).
func engineEvent(sid, signature string) bool {
	if strings.HasPrefix(signature, "SURICATA ") {
		return true
	}
	n, err := strconv.ParseInt(sid, 10, 64)
	return err == nil && n >= 2200000 && n <= 2299999
}

func (d SuricataAlert) Signals(ev *Event) []vigil.Signal {
	info, src, ok := alert(ev)
	if !ok {
		return nil
	}
	f := ev.Fields
	who, ok := sourceActor(f, src, d.Local)
	if !ok {
		return nil
	}
	id := info.sid
	if id == "" {
		id = info.signature
	}
	beacon := info.typ == "malware"
	dst, _ := validIP(str(f, "destination.ip"))
	return []vigil.Signal{{Key: id + "|" + who.key,
		Member:      dst,
		EngineEvent: info.engine,
		Nodes: nodes(who.nodes, node(vigil.NodeIP, dst, beacon && dst != src),
			node(vigil.NodeDomain, str(f, "url.domain"), beacon), node(vigil.NodeDomain, str(f, "tls.client.server_name"), beacon),
			node(vigil.NodeHost, str(f, "host.name"), false)),
	}}
}

// Context returns what the alert says beyond the window's counts: its
// signature, category and severity.
func (d SuricataAlert) Context(ev *Event) any {
	info, _, ok := alert(ev)
	if !ok {
		return nil
	}
	return info
}

// alertType classifies an alert by its category and signature, as the
// Emerging Threats and Snort rule sets name them.
func alertType(signature, category string) string {
	sig, cat := strings.ToLower(signature), strings.ToLower(category)
	for _, s := range []string{"et malware", "et trojan", "etpro malware", "etpro trojan", "et mobile_malware",
		"et cnc", "et botcc", "gpl trojan", "malware-cnc", "malware-backdoor", "malware-other"} {
		if strings.HasPrefix(sig, s) {
			return "malware"
		}
	}
	if strings.Contains(signature, "CnC") || strings.Contains(sig, "command and control") ||
		strings.Contains(" "+sig+" ", " c2 ") || strings.Contains(cat, "trojan") || strings.Contains(cat, "malware") ||
		strings.Contains(cat, "command and control") || strings.Contains(cat, "command-and-control") {
		return "malware"
	}
	if cat == "detection of a network scan" || strings.Contains(cat, "information leak") ||
		strings.HasPrefix(sig, "et scan") || strings.HasPrefix(sig, "gpl scan") || strings.Contains(" "+sig+" ", " scan ") {
		return "recon"
	}
	return "network"
}

// alertSeverity maps EVE's alert severity (1 is the most severe).
func alertSeverity(s int64) string {
	switch {
	case s <= 1:
		return vigil.SeverityHigh
	case s == 2:
		return vigil.SeverityMedium
	}
	return vigil.SeverityLow
}

func (d SuricataAlert) DescribeContext(key string, ctx any, w vigil.WindowState) vigil.Finding {
	info, ok := ctx.(alertInfo)
	if !ok {
		info.severity = 3
	}
	id, src, _ := strings.Cut(key, "|")
	if info.signature == "" {
		info.signature = "signature " + id
	}
	if info.sid == "" {
		info.sid = id
	}
	if info.typ == "" {
		info.typ = alertType(info.signature, info.category)
	}
	specificity := vigil.SpecificitySignature
	if info.engine || engineEvent(info.sid, info.signature) {
		specificity = vigil.SpecificityEngineEvent
	}
	title := "Suricata: " + info.signature + " from " + src
	dst := ""
	for _, n := range w.Nodes {
		if n.Type == vigil.NodeIP && n.Value != actorAddr(src) {
			dst = n.Value
			break
		}
	}
	if dst == "" && len(w.Members) > 0 {
		dst = w.Members[0]
	}
	if dst != "" {
		title += " to " + dst
	}
	desc := fmt.Sprintf("Suricata alert %q (sid %s", info.signature, info.sid)
	if info.category != "" {
		desc += ", " + info.category
	}
	desc += ", severity " + strconv.FormatInt(info.severity, 10) + "): " + plural(w.Count, "alert") + " from " + src
	switch {
	case w.Distinct == 1:
		desc += " to " + w.Members[0]
	case w.Distinct > 1:
		desc += fmt.Sprintf(" to %s (%s)", plural(w.Distinct, "destination"), list(w.Members, w.Distinct))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: info.typ, Severity: alertSeverity(info.severity), Title: title, Description: desc,
		Specificity: specificity, Rollup: "Suricata: " + info.signature}
}

// Describe serves a window without an alert's context, which Signals
// always gives; it names the signature id.
func (d SuricataAlert) Describe(key string, w vigil.WindowState) vigil.Finding {
	return d.DescribeContext(key, nil, w)
}
