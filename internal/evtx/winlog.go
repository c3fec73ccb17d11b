package evtx

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/internal/jsontext"
)

// Winlogbeat renders a record as the document Winlogbeat sends for it:
// `winlog.*` with the event's own names (channel, computer_name, event_id,
// provider_name, record_id, event_data or user_data, …), `event.code`,
// `event.provider`, `event.outcome` for audit events, `host.name`,
// `log.level` and `@timestamp` (the event's TimeCreated). Winlogbeat's
// `message`, `task` and `event.action` come from the provider's message
// files on a Windows host; they cannot be made from the file and are left
// out. Keys are written in a fixed order, so the same record always gives
// the same bytes.
func (r *Record) Winlogbeat() ([]byte, error) {
	ev := r.Event
	sys := ev.Child("System")
	if sys == nil {
		return nil, fmt.Errorf("record %d: no System element", r.ID)
	}
	text := func(name string) string {
		if c := sys.Child(name); c != nil {
			return strings.TrimSpace(c.Text)
		}
		return ""
	}
	provider := sys.Child("Provider")
	providerName := provider.attr("Name")
	eventID := text("EventID")
	computer := text("Computer")
	keywords, outcome := keywordNames(text("Keywords"))

	// The document is about the size of the record's UTF-16 text with its
	// names: room for that, so that it is not grown as it is written.
	w := jsonWriter{b: make([]byte, 0, 512+r.size)}
	w.open()
	if t := sys.Child("TimeCreated"); t != nil && t.Attr("SystemTime") != "" {
		w.str("@timestamp", t.Attr("SystemTime"))
	} else {
		w.str("@timestamp", r.Written.Format("2006-01-02T15:04:05.0000000Z"))
	}
	w.object("event")
	w.str("code", eventID)
	w.str("kind", "event")
	w.str("outcome", outcome)
	w.str("provider", providerName)
	w.close()
	if computer != "" {
		w.object("host")
		w.str("name", computer)
		w.close()
	}
	if l, ok := levels[text("Level")]; ok {
		w.object("log")
		w.str("level", l)
		w.close()
	}
	w.object("winlog")
	if c := sys.Child("Correlation"); c != nil {
		w.str("activity_id", c.Attr("ActivityID"))
	}
	w.str("channel", text("Channel"))
	w.str("computer_name", computer)
	if data := ev.Child("EventData"); data != nil {
		eventData(&w, data)
	}
	w.str("event_id", eventID)
	if src := provider.attr("EventSourceName"); src != providerName {
		w.str("event_source_name", src)
	}
	if len(keywords) > 0 {
		w.key("keywords")
		w.b = append(w.b, '[')
		for i, k := range keywords {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = jsontext.AppendString(w.b, k)
		}
		w.b = append(w.b, ']')
	}
	if text("Opcode") == "0" {
		w.str("opcode", "Info")
	}
	if x := sys.Child("Execution"); x != nil {
		pid, perr := strconv.ParseUint(x.Attr("ProcessID"), 10, 32)
		tid, terr := strconv.ParseUint(x.Attr("ThreadID"), 10, 32)
		if perr == nil || terr == nil {
			w.object("process")
			if perr == nil {
				w.num("pid", pid)
			}
			if terr == nil {
				w.object("thread")
				w.num("id", tid)
				w.close()
			}
			w.close()
		}
	}
	w.str("provider_guid", strings.ToUpper(provider.attr("Guid")))
	w.str("provider_name", providerName)
	if id, err := strconv.ParseUint(text("EventRecordID"), 10, 64); err == nil {
		w.num("record_id", id)
	} else {
		w.num("record_id", r.ID)
	}
	if c := sys.Child("Correlation"); c != nil {
		w.str("related_activity_id", c.Attr("RelatedActivityID"))
	}
	if s := sys.Child("Security"); s != nil && s.Attr("UserID") != "" {
		sid := s.Attr("UserID")
		w.object("user")
		if wk, ok := wellKnownSIDs[sid]; ok {
			w.str("domain", wk[1])
			w.str("identifier", sid)
			w.str("name", wk[0])
			w.str("type", "Well Known Group")
		} else {
			w.str("identifier", sid)
		}
		w.close()
	}
	if ud := ev.Child("UserData"); ud != nil && len(ud.Children) > 0 {
		inner := ud.Children[0]
		w.object("user_data")
		seen := make([]string, 0, len(inner.Children))
		for _, c := range inner.Children {
			if c.Name != "xml_name" && !has(seen, c.Name) {
				seen = append(seen, c.Name)
				w.strAlways(c.Name, c.Text)
			}
		}
		w.str("xml_name", inner.Name)
		w.close()
	}
	if v, err := strconv.ParseUint(text("Version"), 10, 8); err == nil && v != 0 {
		w.num("version", v)
	}
	w.close()
	w.close()
	return w.b, nil
}

func (e *Element) attr(name string) string {
	if e == nil {
		return ""
	}
	return e.Attr(name)
}

// eventData writes <Data Name="x">v</Data> as x: v, as Winlogbeat does;
// unnamed items are param1, param2, … and <Binary> is Binary. Empty items
// are left out, and a name met twice keeps its first value.
func eventData(w *jsonWriter, data *Element) {
	seen := make([]string, 0, len(data.Children))
	param := 0
	for _, c := range data.Children {
		name := c.Attr("Name")
		switch {
		case c.Name == "Data" && name != "":
		case c.Name == "Data":
			param++
			name = "param" + strconv.Itoa(param)
		default:
			name = c.Name
		}
		if c.Text == "" || has(seen, name) {
			continue
		}
		if len(seen) == 0 {
			w.object("event_data")
		}
		seen = append(seen, name)
		w.str(name, c.Text)
	}
	if len(seen) > 0 {
		w.close()
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsonWriter appends a JSON object to b key by key.
type jsonWriter struct {
	b     []byte
	first bool
}

func (w *jsonWriter) open() {
	w.b = append(w.b, '{')
	w.first = true
}

func (w *jsonWriter) close() {
	w.b = append(w.b, '}')
	w.first = false
}

func (w *jsonWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = jsontext.AppendString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *jsonWriter) object(k string) {
	w.key(k)
	w.open()
}

// str writes k: v unless v is empty.
func (w *jsonWriter) str(k, v string) {
	if v != "" {
		w.strAlways(k, v)
	}
}

func (w *jsonWriter) strAlways(k, v string) {
	w.key(k)
	w.b = jsontext.AppendString(w.b, v)
}

func (w *jsonWriter) num(k string, v uint64) {
	w.key(k)
	w.b = strconv.AppendUint(w.b, v, 10)
}

var levels = map[string]string{
	"0": "information", "1": "critical", "2": "error", "3": "warning", "4": "information", "5": "verbose",
}

// wellKnownSIDs are the accounts Winlogbeat names without a look-up.
var wellKnownSIDs = map[string][2]string{
	"S-1-5-18": {"SYSTEM", "NT AUTHORITY"},
	"S-1-5-19": {"LOCAL SERVICE", "NT AUTHORITY"},
	"S-1-5-20": {"NETWORK SERVICE", "NT AUTHORITY"},
}

// keywordNames names the standard keyword bits (winmeta.xml) and says the
// outcome an audit keyword gives.
func keywordNames(s string) ([]string, string) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
	if err != nil {
		return nil, ""
	}
	var names []string
	outcome := ""
	for _, k := range standardKeywords {
		if v&k.bit != 0 {
			names = append(names, k.name)
		}
	}
	switch {
	case v&auditFailure != 0:
		outcome = "failure"
	case v&auditSuccess != 0:
		outcome = "success"
	}
	return names, outcome
}

const (
	auditFailure = 0x10000000000000
	auditSuccess = 0x20000000000000
)

var standardKeywords = []struct {
	bit  uint64
	name string
}{
	{0x1000000000000, "Response Time"},
	{0x2000000000000, "WDI Context"},
	{0x4000000000000, "WDI Diag"},
	{0x8000000000000, "SQM"},
	{auditFailure, "Audit Failure"},
	{auditSuccess, "Audit Success"},
	{0x40000000000000, "Correlation Hint"},
	{0x80000000000000, "Classic"},
}
