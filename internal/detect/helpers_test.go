package detect

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// refTime resolves the year-less dates of syslog lines.
var refTime = time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)

// datasetDir returns ../shared/datasets, skipping when it is absent.
func datasetDir(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join("..", "..", "..", "shared", "datasets")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("no datasets at %s: %v", p, err)
	}
	return p
}

// parseFile parses every non-empty line of a dataset file as source.
func parseFile(tb testing.TB, source, rel string) []*Event {
	tb.Helper()
	f, err := os.Open(filepath.Join(datasetDir(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []*Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		out = append(out, parseLine(source, sc.Text(), fmt.Sprintf("%s:%d", rel, n)))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// parseLine parses one line as the pipeline does.
func parseLine(source, line, id string) *Event {
	r := parse.Parse(source, []byte(line), refTime)
	at := r.Time
	if at.IsZero() {
		at = refTime
	}
	return &Event{ArtifactID: id, Source: source, At: at, Fields: r.Event}
}

// event builds an Event from fields.
func event(fields parse.Event) *Event {
	return &Event{ArtifactID: vigil.NewID(), At: refTime, Fields: fields}
}

// nodeStrings renders nodes as "Type:value" with a "*" for keys.
func nodeStrings(refs []vigil.NodeRef) []string {
	var out []string
	for _, n := range refs {
		s := n.Type + ":" + n.Value
		if n.Key {
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

// signalCase is one row of a detector's signal table.
type signalCase struct {
	name   string
	fields parse.Event
	key    string // "" when the event gives no signal
	member string
	nodes  []string // nodeStrings of the signal
}

// runSignalCases checks d.Signals over a table.
func runSignalCases(t *testing.T, d Detector, cases []signalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := d.Signals(event(c.fields))
			if c.key == "" {
				if len(got) != 0 {
					t.Fatalf("signals %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d signals %+v, want 1", len(got), got)
			}
			k := got[0]
			if k.Key != c.key || k.Member != c.member {
				t.Errorf("key %q member %q, want %q %q", k.Key, k.Member, c.key, c.member)
			}
			if ns := nodeStrings(k.Nodes); strings.Join(ns, " ") != strings.Join(c.nodes, " ") {
				t.Errorf("nodes %v, want %v", ns, c.nodes)
			}
		})
	}
}

// window builds a WindowState of count signals and members.
func window(count int, members []string, refs ...vigil.NodeRef) vigil.WindowState {
	return vigil.WindowState{Count: count, Distinct: len(members), Members: members, Nodes: refs,
		First: refTime, Last: refTime.Add(time.Minute)}
}

// countSignals runs d over evs and returns how many events gave a signal
// and the distinct members.
func countSignals(d Detector, evs []*Event) (int, map[string]bool) {
	n, members := 0, map[string]bool{}
	for _, ev := range evs {
		for _, k := range d.Signals(ev) {
			n++
			members[k.Member] = true
		}
	}
	return n, members
}
