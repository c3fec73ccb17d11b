package parse

import (
	"bytes"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
)

// A Windows event arrives as the document Winlogbeat sends (through the
// Elasticsearch bulk endpoint) or as `vigil import` renders a record of an
// .evtx file: the same `winlog.*` names either way (internal/evtx). The
// parser keeps the record's identity (winlog.channel, event_id, record_id,
// computer_name, provider_name), every EventData or UserData item as
// winlog.event_data.<Name> (the names Sigma rules for Windows use), and
// maps the events a SOC reads to ECS: logons, Kerberos and NTLM
// authentication, account and group changes, process creation (Sysmon 1,
// Security 4688), network connections (Sysmon 3), DNS queries (Sysmon 22),
// file, registry and image-load events, services, scheduled tasks and
// PowerShell script blocks.

// windowsMaxData bounds the event_data items kept of one event (an event
// of 10,000 items keeps these and is flagged windows.truncated).
const windowsMaxData = 256

// windowsDoc is what the parser reads of a document.
type windowsDoc struct {
	timestamp string
	outcome   string // event.outcome as the shipper set it
	host      string // host.name
	channel   string
	computer  string
	eventID   string
	provider  string
	recordID  string
	sid       string     // winlog.user.identifier
	data      []dataItem // in document order, a name once
	dataKind  string     // event_data or user_data
	truncated bool
}

func parseWindows(raw []byte, _ time.Time) (Event, time.Time, bool) {
	if firstNonBlank(raw) != '{' {
		return nil, time.Time{}, false
	}
	l := jsonLexer{b: raw}
	var d windowsDoc
	d.read(&l)
	if l.bad || d.eventID == "" || (d.channel == "" && d.provider == "") {
		return nil, time.Time{}, false
	}
	ev := make(Event, 16+len(d.data))
	ev["event.code"] = d.eventID
	ev.set("event.provider", d.provider)
	ev.set("winlog.channel", d.channel)
	ev.set("winlog.event_id", d.eventID)
	ev.set("winlog.provider_name", d.provider)
	ev.set("winlog.computer_name", d.computer)
	if id, err := strconv.ParseInt(d.recordID, 10, 64); err == nil {
		ev["winlog.record_id"] = id
	}
	ev.set("winlog.user.identifier", d.sid)
	for _, it := range d.data {
		ev[it.key] = capString(it.value)
	}
	if d.truncated {
		ev["windows.truncated"] = true
	}
	computer := d.computer
	if computer == "" {
		computer = d.host
	}
	ev.setWindowsHost(computer)
	ev.set("event.outcome", d.outcome)
	mapWindows(ev, &d)
	ts, _ := time.Parse(time.RFC3339Nano, d.timestamp)
	return ev, ts, true
}

// dataItem is one EventData or UserData item: its name, its field name
// in the event and its value.
type dataItem struct {
	name, key, value string
}

// get returns the value of the data item called name, or "".
func (d *windowsDoc) get(name string) string {
	for i := range d.data {
		if d.data[i].name == name {
			return d.data[i].value
		}
	}
	return ""
}

// read walks the document's members the parser uses, skipping the rest.
func (d *windowsDoc) read(l *jsonLexer) {
	if !l.object() {
		l.fail()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "@timestamp":
			d.timestamp, _ = l.scalarText()
		case "event":
			l.members(func(k []byte) bool {
				if string(k) == "outcome" {
					d.outcome, _ = l.scalarText()
					return true
				}
				return false
			})
		case "host":
			l.members(func(k []byte) bool {
				if string(k) == "name" {
					d.host, _ = l.scalarText()
					return true
				}
				return false
			})
		case "winlog":
			d.readWinlog(l)
		default:
			l.skip()
		}
	}
}

func (d *windowsDoc) readWinlog(l *jsonLexer) {
	l.members(func(k []byte) bool {
		switch string(k) {
		case "channel":
			d.channel, _ = l.scalarText()
		case "computer_name":
			d.computer, _ = l.scalarText()
		case "event_id":
			d.eventID, _ = l.scalarText()
		case "provider_name":
			d.provider, _ = l.scalarText()
		case "record_id":
			d.recordID, _ = l.scalarText()
		case "user":
			l.members(func(k []byte) bool {
				if string(k) == "identifier" {
					d.sid, _ = l.scalarText()
					return true
				}
				return false
			})
		case "event_data", "user_data":
			if d.data != nil {
				return false
			}
			d.dataKind = string(k)
			d.data = make([]dataItem, 0, 24)
			l.members(func(name []byte) bool {
				if len(d.data) >= windowsMaxData || !dataNameOK(name) || d.get(string(name)) != "" {
					d.truncated = d.truncated || len(d.data) >= windowsMaxData
					return false
				}
				if v, ok := l.scalarText(); ok {
					short, key := dataKey(d.dataKind, name)
					d.data = append(d.data, dataItem{name: short, key: key, value: v})
				}
				return true
			})
		default:
			return false
		}
		return true
	})
}

// dataNameOK reports whether a data item's name can be a field name: as
// any flattened member's (flatKeyOK), but with spaces inside it, as
// Defender and other providers name their items ("Threat Name",
// "Detection User") and Winlogbeat keeps them.
func dataNameOK(k []byte) bool {
	n := len(k)
	if n == 0 || k[0] == ' ' || k[n-1] == ' ' {
		return false
	}
	if bytes.IndexByte(k, ' ') < 0 {
		return flatKeyOK(k)
	}
	return flatKeyOK(bytes.ReplaceAll(k, []byte{' '}, []byte{'_'}))
}

// members walks an object's members, calling fn with each name; fn reads
// the value and returns true, or returns false to have it skipped. A value
// that is not an object is skipped.
func (l *jsonLexer) members(fn func(name []byte) bool) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		if !fn(k) {
			l.skip()
		}
	}
}

// dataKeys holds the event field names of data items met so far
// ("winlog.event_data.TargetUserName"), so that the names Windows events
// repeat are made once, not once per event; bounded, as names are the
// sender's. A name is looked up without a lock: the names met are read
// from a map no one writes (known), and a new one is added under the lock
// to new, which is merged into a new known map once it holds a quarter
// as many (so that a sender's stream of new names costs its copies once
// over, amortized).
var dataKeys = struct {
	known atomic.Pointer[map[dataKeyName][2]string] // read without the lock
	sync.Mutex
	new   map[dataKeyName][2]string // met since known was made
	total int                       // in known and new
}{new: map[dataKeyName][2]string{}}

// dataKeyName is a data item's name and whether it is of user_data.
type dataKeyName struct {
	name string
	user bool
}

const maxDataKeys = 1 << 14

// dataKey returns a data item's name and its field name, both shared by
// every event that has the item.
func dataKey(kind string, name []byte) (string, string) {
	user := kind == "user_data"
	if m := dataKeys.known.Load(); m != nil {
		if v, ok := (*m)[dataKeyName{string(name), user}]; ok {
			return v[0], v[1]
		}
	}
	dataKeys.Lock()
	defer dataKeys.Unlock()
	if v, ok := dataKeys.new[dataKeyName{string(name), user}]; ok {
		return v[0], v[1]
	}
	short := string(name)
	full := "winlog." + kind + "." + short
	if dataKeys.total >= maxDataKeys {
		return short, full
	}
	if m := dataKeys.known.Load(); m != nil {
		// Another goroutine may have merged it in since the lookup above.
		if v, ok := (*m)[dataKeyName{short, user}]; ok {
			return v[0], v[1]
		}
	}
	dataKeys.new[dataKeyName{short, user}] = [2]string{short, full}
	dataKeys.total++
	known := dataKeys.known.Load()
	if known == nil || len(dataKeys.new) >= max(len(*known)/4, 8) {
		merged := make(map[dataKeyName][2]string, dataKeys.total)
		if known != nil {
			maps.Copy(merged, *known)
		}
		maps.Copy(merged, dataKeys.new)
		dataKeys.known.Store(&merged)
		clear(dataKeys.new)
	}
	return short, full
}

// capString cuts s to maxMessage bytes on a rune boundary.
func capString(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return capText([]byte(s))
}

// setWindowsHost sets host.name to a computer's short name, lower case,
// and host.domain to the rest of a fully qualified name: one computer is
// one Host node whichever form an event gives ("DC01", "dc01.corp.local").
func (ev Event) setWindowsHost(computer string) {
	computer = strings.TrimSuffix(strings.TrimSpace(computer), ".")
	if computer == "" {
		return
	}
	if _, err := netip.ParseAddr(computer); err == nil {
		ev["host.ip"] = computer
		return
	}
	short, domain, _ := strings.Cut(computer, ".")
	ev.set("host.name", strings.ToLower(short))
	ev.set("host.domain", strings.ToLower(domain))
}

// WindowsHost is the Host node of a computer name: its short name in
// lower case, "" for none ("-", an address). "PC01", "pc01" and
// "PC01.example.corp" are one computer, as setWindowsHost makes host.name.
func WindowsHost(computer string) string {
	computer = strings.TrimSuffix(strings.TrimSpace(computer), ".")
	if computer == "" || computer == "-" {
		return ""
	}
	if _, err := netip.ParseAddr(computer); err == nil {
		return ""
	}
	short, _, _ := strings.Cut(computer, ".")
	return strings.ToLower(short)
}

// setWorkstation sets source.domain to the computer a logon or a
// connection came from as the event names it (Winlogbeat's field), and
// related.hosts to its Host node (WindowsHost): the computer that logs
// events as host.name "pc01" is the workstation "PC01" or
// "PC01.example.corp" of another's events.
func (ev Event) setWorkstation(name string) {
	name = strings.TrimSpace(name)
	if name == "" || name == "-" {
		return
	}
	ev["source.domain"] = name
	if h := WindowsHost(name); h != "" {
		ev["related.hosts"] = []string{h}
	}
}

// setWindowsUser sets prefix.name and prefix.domain from an account name
// and its domain, taking either from the name when it is DOMAIN\user or
// user@domain.fqdn; machine accounts and the anonymous and system accounts
// Windows logs for its own work are kept as they are.
func (ev Event) setWindowsUser(prefix, name, domain string) {
	name = strings.TrimSpace(name)
	if name == "" || name == "-" {
		return
	}
	if d, u, ok := strings.Cut(name, `\`); ok {
		domain, name = d, u
	} else if u, d, ok := strings.Cut(name, "@"); ok && u != "" && d != "" {
		name, domain = u, d
	}
	kName, kDomain := userFields(prefix)
	ev.set(kName, name)
	domain = strings.TrimSpace(domain)
	if domain != "" && domain != "-" {
		ev[kDomain] = domain
	}
}

// userFields returns prefix.name and prefix.domain, the prefixes the
// parser uses without making them again (a string made for every event).
func userFields(prefix string) (name, domain string) {
	switch prefix {
	case "user":
		return "user.name", "user.domain"
	case "user.target":
		return "user.target.name", "user.target.domain"
	}
	return prefix + ".name", prefix + ".domain"
}

// WindowsAccount is the account a Windows user field names, as one User
// node: "domain\user" in lower case, the domain's first label for a fully
// qualified one (user@corp.example.com and CORP\user are one account); a
// name without a domain is the name alone.
func WindowsAccount(name, domain string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == "-" {
		return ""
	}
	domain = strings.ToLower(strings.TrimSpace(domain))
	if domain == "" || domain == "-" {
		return name
	}
	if short, _, ok := strings.Cut(domain, "."); ok && short != "" {
		domain = short
	}
	return domain + `\` + name
}

// WindowsSIDs returns the accounts ev names with their security
// identifiers (user.id, user.target.id), each as its User node
// (WindowsAccount), so that the forms one account takes in different
// events (`3B\lgrove` in a logon, "lgrove@threebeesco.com" in a Kerberos
// ticket request) can be joined by its SID. Only a domain or local
// account's SID (S-1-5-21-…, unique to one account of one domain or
// computer) names one account: a well-known SID is every computer's
// (S-1-5-18, SYSTEM, which computer accounts' events carry too) or no one's
// (S-1-0-0, of a failed logon). Only a name with its domain (a bare name
// is any domain's), and not a local account of the computer that logs
// the event (its domain is that computer's name): copies of one disk
// image share their local accounts' SIDs — the recordings' lab machines
// IEWIN7, PC01 and PC02 all name their local ieuser
// S-1-5-21-3583694148-1414552638-2922671848-1000 — and are other
// accounts all the same.
func WindowsSIDs(ev Event) []vigil.AccountSID {
	var out []vigil.AccountSID
	host, _ := ev["host.name"].(string)
	for _, f := range accountFields {
		sid, _ := ev[f.id].(string)
		if !strings.HasPrefix(sid, "S-1-5-21-") {
			continue
		}
		domain, _ := ev[f.domain].(string)
		name, _ := ev[f.name].(string)
		if domain == "" {
			continue
		}
		a := WindowsAccount(name, domain)
		if dom, _, ok := strings.Cut(a, `\`); ok && dom != host {
			out = append(out, vigil.AccountSID{SID: sid, Account: a})
		}
	}
	return out
}

// accountFields are the fields of the accounts an event names with their
// SIDs (WindowsSIDs), the user and the target.
var accountFields = []struct{ id, name, domain string }{
	{"user.id", "user.name", "user.domain"},
	{"user.target.id", "user.target.name", "user.target.domain"},
}

// setSID sets k (user.id, user.target.id: ECS's fields for the account's
// security identifier, as Winlogbeat's ingest pipeline sets them) to a
// SID, unless v is none ("-", empty) or k is set already.
func (ev Event) setSID(k, v string) {
	v = strings.TrimSpace(v)
	if _, ok := ev[k]; ok || !strings.HasPrefix(v, "S-1-") {
		return
	}
	ev[k] = v
}

// setWindowsAddr sets an address field from a logon's address ("-",
// "::ffff:10.0.0.5", "fe80::1%4" and the like as Windows writes them).
func (ev Event) setWindowsAddr(k, v string) {
	v = strings.TrimSpace(v)
	if v == "" || v == "-" {
		return
	}
	if a, err := netip.ParseAddr(v); err == nil {
		ev[k] = a.Unmap().WithZone("").String()
	}
}

func (ev Event) setWindowsPort(k, v string) {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 && n <= 65535 {
		ev[k] = int64(n)
	}
}

// setWindowsPID sets a process id written in decimal or as 0x hex.
func (ev Event) setWindowsPID(k, v string) {
	v = strings.TrimSpace(v)
	base := 10
	if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
		v, base = v[2:], 16
	}
	if n, err := strconv.ParseInt(v, base, 64); err == nil && n >= 0 {
		ev[k] = n
	}
}

// setProcess sets prefix.executable, .name (its file name), and the
// command line.
func (ev Event) setProcess(prefix, exe, cmdline string) {
	var kExe, kName, kCmd string
	switch prefix {
	case "process":
		kExe, kName, kCmd = "process.executable", "process.name", "process.command_line"
	case "process.parent":
		kExe, kName, kCmd = "process.parent.executable", "process.parent.name", "process.parent.command_line"
	default:
		kExe, kName, kCmd = prefix+".executable", prefix+".name", prefix+".command_line"
	}
	exe = strings.TrimSpace(exe)
	if exe != "" && exe != "-" {
		ev[kExe] = exe
		ev[kName] = exe[strings.LastIndexAny(exe, `\/`)+1:]
	}
	ev.set(kCmd, capString(cmdline))
}

// setHashes reads Sysmon's "SHA1=…,MD5=…,SHA256=…,IMPHASH=…" into
// prefix.hash.sha1, .md5, .sha256 and prefix.pe.imphash.
func (ev Event) setHashes(prefix, v string) {
	keys := [4]string{"file.hash.md5", "file.hash.sha1", "file.hash.sha256", "file.pe.imphash"}
	switch prefix {
	case "file":
	case "process":
		keys = [4]string{"process.hash.md5", "process.hash.sha1", "process.hash.sha256", "process.pe.imphash"}
	default:
		keys = [4]string{prefix + ".hash.md5", prefix + ".hash.sha1", prefix + ".hash.sha256", prefix + ".pe.imphash"}
	}
	for kv := range strings.SplitSeq(v, ",") {
		k, h, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || h == "" {
			continue
		}
		i := -1
		switch strings.ToUpper(k) {
		case "MD5":
			i = 0
		case "SHA1":
			i = 1
		case "SHA256":
			i = 2
		case "IMPHASH":
			i = 3
		}
		if i >= 0 {
			ev[keys[i]] = strings.ToLower(h)
		}
	}
}
