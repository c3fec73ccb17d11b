package detect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// WindowsChange fires on one kind of Windows event that is a finding on
// its own: an account locked out or created, a member added to a
// privileged group, the security log cleared, a service installed, a
// scheduled task created, LSASS's memory read, malware Microsoft Defender
// detected, and the attack tools' and footholds' kinds (windows_tools.go,
// windows_foothold.go). Each event is an observation (one per key and
// Span, default 1 h, growing with repeats): who did it, on which host,
// when.
//
// The kinds of one WindowsChanges read the Windows events as a group
// (Grouped): an event is passed only to the kinds that read its event
// id, instead of every kind reading every event.
type WindowsChange struct {
	Kind windowsChangeKind
	Span time.Duration
	// group and member place the detector in the group of the kinds made
	// with it; nil when made alone.
	group  *windowsChangeGroup
	member int
}

// windowsChangeKind is what one WindowsChange detector looks for.
type windowsChangeKind struct {
	name string
	// codes are the event ids (event.code) of the events match may fire
	// on.
	codes    []string
	severity string
	title    string // "Windows security log cleared"
	// match returns the key, the member and the nodes of an event it
	// fires on; ok false for others.
	match func(f parse.Event) (key, member string, refs []vigil.NodeRef, ok bool)
}

// signals are the signals the kind draws from f, a Windows event.
func (k *windowsChangeKind) signals(f parse.Event) []vigil.Signal {
	key, member, refs, ok := k.match(f)
	if !ok || key == "" {
		return nil
	}
	return []vigil.Signal{{Key: key, Member: member, Nodes: refs}}
}

// windowsKinds are the kinds of every WindowsChange.
var windowsKinds = slices.Concat(windowsChangeKinds, windowsToolKinds, windowsFootholdKinds, windowsAppLogKinds)

// WindowsChanges returns the detectors of every kind, one group.
func WindowsChanges(span time.Duration) []Detector {
	g := newWindowsChangeGroup(windowsKinds)
	var out []Detector
	for i, k := range windowsKinds {
		out = append(out, WindowsChange{Kind: k, Span: span, group: g, member: i})
	}
	return out
}

// windowsChangeGroup reads a Windows event for the kinds whose codes hold
// its event id.
type windowsChangeGroup struct {
	kinds  []windowsChangeKind
	byCode map[string][]int // event id → the kinds (their numbers) that read it
}

func newWindowsChangeGroup(kinds []windowsChangeKind) *windowsChangeGroup {
	g := &windowsChangeGroup{kinds: kinds, byCode: map[string][]int{}}
	for i, k := range kinds {
		for _, c := range k.codes {
			g.byCode[c] = append(g.byCode[c], i)
		}
	}
	return g
}

func (g *windowsChangeGroup) GroupSignals(ev *Event, emit func(member int, sigs []vigil.Signal)) {
	for _, m := range g.byCode[str(ev.Fields, "event.code")] {
		if sigs := g.kinds[m].signals(ev.Fields); sigs != nil {
			emit(m, sigs)
		}
	}
}

func (d WindowsChange) Name() string { return d.Kind.name }

func (d WindowsChange) Window() Window {
	return Window{Span: orDur(d.Span, time.Hour), MinCount: 1}
}

func (d WindowsChange) Signals(ev *Event) []vigil.Signal {
	if !d.InScope(ev) {
		return nil
	}
	return d.ScopedSignals(ev)
}

// Scope is that of every WindowsChange: the Windows events.
func (d WindowsChange) Scope() string { return "detect:windows-change" }

func (d WindowsChange) InScope(ev *Event) bool { return windowsEvent(ev.Fields) }

func (d WindowsChange) ScopedSignals(ev *Event) []vigil.Signal {
	if !slices.Contains(d.Kind.codes, str(ev.Fields, "event.code")) {
		return nil
	}
	return d.Kind.signals(ev.Fields)
}

// Group returns the group the detector was made in; one made alone
// (WindowsChange{Kind: k}) is a group of its own.
func (d WindowsChange) Group() (Group, int) {
	if d.group == nil {
		return newWindowsChangeGroup([]windowsChangeKind{d.Kind}), 0
	}
	return d.group, d.member
}

func (d WindowsChange) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := d.Kind.title + ": " + key
	desc := fmt.Sprintf("%s: %s", d.Kind.title, plural(w.Count, "event"))
	if w.Distinct > 0 {
		desc += " (" + list(w.Members, w.Distinct) + ")"
	}
	if host := firstNode(w, vigil.NodeHost); host != "" && host != key {
		title += " on " + host
		desc += " on " + host
	}
	if by := firstNode(w, vigil.NodeUser); by != "" && by != key {
		desc += " by " + by
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "windows", Severity: d.Kind.severity, Title: title, Description: desc, Specificity: vigil.SpecificitySignature}
}

// code reports whether f is one of the event ids of a channel.
func code(f parse.Event, channel string, ids ...string) bool {
	if !strings.EqualFold(str(f, "winlog.channel"), channel) {
		return false
	}
	c := str(f, "event.code")
	for _, id := range ids {
		if c == id {
			return true
		}
	}
	return false
}

// privilegedGroups are the groups whose members hold a domain or a host
// (Microsoft's "Appendix B: Privileged Accounts and Groups in Active
// Directory"), by name in lower case.
var privilegedGroups = map[string]bool{
	"administrators": true, "domain admins": true, "enterprise admins": true, "schema admins": true,
	"account operators": true, "backup operators": true, "server operators": true, "print operators": true,
	"dnsadmins": true, "group policy creator owners": true, "enterprise key admins": true, "key admins": true,
	"remote desktop users": true, "hyper-v administrators": true,
}

// lsassRead reports whether a Sysmon 10 access mask can read a process's
// memory: PROCESS_VM_READ (0x10), or PROCESS_ALL_ACCESS style masks that
// hold it.
func lsassRead(mask string) bool {
	var m uint64
	if _, err := fmt.Sscanf(strings.ToLower(strings.TrimSpace(mask)), "0x%x", &m); err != nil {
		return false
	}
	return m&0x10 != 0
}

// hostKey keys a finding about one computer by its Host node.
func hostKey(f parse.Event) (string, []vigil.NodeRef) {
	refs := node(vigil.NodeHost, str(f, "host.name"), true)
	if len(refs) == 0 {
		return "", nil
	}
	return refs[0].Value, refs
}

var windowsChangeKinds = []windowsChangeKind{
	{name: "windows_account_locked_out", codes: []string{"4740"}, severity: vigil.SeverityMedium, title: "Windows account locked out",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "Security", "4740") {
				return "", "", nil, false
			}
			account := windowsAccount(f, "user.target")
			return account, str(f, "source.domain"), nodes(node(vigil.NodeUser, account, true),
				node(vigil.NodeHost, parse.WindowsHost(str(f, "source.domain")), false), node(vigil.NodeHost, str(f, "host.name"), false)), true
		}},
	{name: "windows_account_created", codes: []string{"4720"}, severity: vigil.SeverityMedium, title: "Windows account created",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "Security", "4720") {
				return "", "", nil, false
			}
			account := windowsAccount(f, "user.target")
			return account, "", nodes(node(vigil.NodeUser, account, true), node(vigil.NodeUser, windowsAccount(f, "user"), false),
				node(vigil.NodeHost, str(f, "host.name"), false)), true
		}},
	{name: "windows_privileged_group_member_added", codes: []string{"4728", "4732", "4756"}, severity: vigil.SeverityHigh, title: "Member added to a privileged Windows group",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "Security", "4728", "4732", "4756") || !privilegedGroups[strings.ToLower(str(f, "group.name"))] {
				return "", "", nil, false
			}
			member := windowsAccount(f, "user.target")
			if member == "" {
				member = strings.ToLower(str(f, "user.target.id"))
			}
			return member, str(f, "group.name"), nodes(node(vigil.NodeUser, member, true), node(vigil.NodeUser, windowsAccount(f, "user"), false),
				node(vigil.NodeHost, str(f, "host.name"), false)), true
		}},
	{name: "windows_log_cleared", codes: []string{"1102", "104"}, severity: vigil.SeverityHigh, title: "Windows security log cleared",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "Security", "1102") && !code(f, "System", "104") {
				return "", "", nil, false
			}
			key, refs := hostKey(f)
			return key, str(f, "winlog.channel"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
		}},
	{name: "windows_service_installed", codes: []string{"7045", "4697"}, severity: vigil.SeverityMedium, title: "Windows service installed",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "System", "7045") && !code(f, "Security", "4697") {
				return "", "", nil, false
			}
			key, refs := hostKey(f)
			return key, str(f, "service.name"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
		}},
	{name: "windows_scheduled_task_created", codes: []string{"4698"}, severity: vigil.SeverityMedium, title: "Windows scheduled task created",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			if !code(f, "Security", "4698") {
				return "", "", nil, false
			}
			key, refs := hostKey(f)
			return key, str(f, "winlog.task_name"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
		}},
	{name: "windows_defender_malware", codes: []string{"1006", "1015", "1116"}, severity: vigil.SeverityHigh, title: "Malware detected by Microsoft Defender",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			// A detection (1006, 1116) or suspicious behaviour (1015); the
			// 1117 that logs the action on a detection is not one more.
			if !code(f, "Microsoft-Windows-Windows Defender/Operational", "1006", "1015", "1116") {
				return "", "", nil, false
			}
			key, refs := hostKey(f)
			return key, str(f, "winlog.event_data.Threat Name"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false),
				node(vigil.NodeHash, str(f, "process.hash.sha256"), false)), true
		}},
	{name: "windows_lsass_memory_read", codes: []string{"10"}, severity: vigil.SeverityHigh, title: "Credential theft: LSASS memory read",
		match: func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
			target := strings.ToLower(str(f, "winlog.event_data.TargetImage"))
			if !code(f, sysmon, "10") || !strings.HasSuffix(target, `\lsass.exe`) ||
				!lsassRead(str(f, "winlog.event_data.GrantedAccess")) {
				return "", "", nil, false
			}
			key, refs := hostKey(f)
			return key, str(f, "process.executable"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false),
				node(vigil.NodeHash, str(f, "process.hash.sha256"), false)), true
		}},
}
