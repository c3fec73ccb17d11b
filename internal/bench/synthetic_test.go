package bench

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/parse"
)

// TestSyntheticLines checks that the generated mix is realistic: every
// source is present and the parsers understand its lines.
func TestSyntheticLines(t *testing.T) {
	lines := syntheticLines(5000, time.Now())
	bySource := map[string]int{}
	parsed := map[string]int{}
	for _, l := range lines {
		bySource[l.Source]++
		if parse.Parse(l.Source, []byte(l.Raw), time.Now()).Parsed {
			parsed[l.Source]++
		}
	}
	for _, s := range sources {
		if bySource[s] < 300 {
			t.Errorf("%s: %d lines", s, bySource[s])
		}
		if parsed[s] != bySource[s] {
			t.Errorf("%s: %d of %d lines parsed", s, parsed[s], bySource[s])
		}
	}
}

// TestInternetLines checks the internet mixes: the parsers understand
// every line, the unique mix never repeats a source address, and the
// Zipf mix has heavy hitters and a long tail of addresses seen once.
func TestInternetLines(t *testing.T) {
	for _, unique := range []bool{true, false} {
		lines := internetLines(20000, time.Now(), unique)
		bySource := map[string]int{}
		seen := map[string]int{}
		for _, l := range lines {
			bySource[l.Source]++
			res := parse.Parse(l.Source, []byte(l.Raw), time.Now())
			if !res.Parsed {
				t.Fatalf("unique=%v: not parsed: %s", unique, l.Raw)
			}
			if l.Source == "dns" {
				continue
			}
			src, _ := res.Event["source.ip"].(string)
			if src == "" {
				t.Fatalf("unique=%v: no source.ip in %s", unique, l.Raw)
			}
			seen[src]++
		}
		for src, want := range map[string]float64{"firewall": 0.46, "dns": 0.36, "auth": 0.18} {
			if got := float64(bySource[src]) / float64(len(lines)); got < want-0.02 || got > want+0.02 {
				t.Errorf("unique=%v: %s is %.3f of the lines, want %.2f", unique, src, got, want)
			}
		}
		once, top := 0, 0
		for _, n := range seen {
			if n == 1 {
				once++
			}
			top = max(top, n)
		}
		if unique && once != len(seen) {
			t.Errorf("unique: %d of %d addresses seen once", once, len(seen))
		}
		if !unique && (top < 200 || once < len(seen)/2) {
			t.Errorf("zipf: top address %d lines, %d of %d addresses seen once", top, once, len(seen))
		}
	}
}

// TestRenumberKeepsTheUniqueMixNew: the internet-unique mix's bodies, sent
// again and again — every pass of the 215 before the first comes back,
// those of two-digit octets edited in place and the others copied —
// carry source addresses no earlier pass carried, every line still parsed
// with a public source; the other mixes go out as they are.
// TestScannersLeaveRoomForEpochs: the scanners of the internet mixes'
// lines have a second octet below 64, so that each epoch's (renumberCopy,
// the octet moved by 64) are new.
func TestScannersLeaveRoomForEpochs(t *testing.T) {
	now := time.Now()
	for name, lines := range map[string][]line{"internet-unique": internetLines(internetLineCount, now, true), "internet-edge": edgeLines(internetLineCount, now)} {
		n := 0
		for _, l := range lines {
			res := parse.Parse(l.Source, []byte(l.Raw), now)
			src, _ := res.Event["source.ip"].(string)
			a, err := netip.ParseAddr(src)
			if err != nil || a.As4()[0] != 11 {
				continue
			}
			n++
			if a.As4()[1] >= 64 {
				t.Fatalf("%s: scanner %s: its second octet leaves no room for the epochs", name, src)
			}
		}
		if n < internetLineCount/2 {
			t.Fatalf("%s: %d scanners in 11.0.0.0/8, want more than half the lines", name, n)
		}
	}
}

func TestRenumberKeepsTheUniqueMixNew(t *testing.T) {
	lines := internetLines(3000, time.Now(), true)
	var body bytes.Buffer
	for _, l := range lines {
		js, _ := json.Marshal(l.Raw)
		body.Write(js)
		body.WriteByte('\n')
	}
	b := &bench{f: Config{Files: "internet-unique"}}
	passes := len(scannerOctets) * scannerEpochs
	if passes < 800 {
		t.Fatalf("%d passes before an address comes back: a 30-minute run at 30,000 a second would send its first scanners again", passes)
	}
	seen := map[string]int{}
	for round := range passes {
		owned := round%2 == 0
		sent := body.Bytes()
		if owned {
			sent = bytes.Clone(sent)
		}
		for i, raw := range strings.Split(strings.TrimSpace(string(b.renumber(sent, round, owned))), "\n") {
			var l string
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("round %d: line %d is no JSON string any more: %v", round, i, err)
			}
			res := parse.Parse(lines[i].Source, []byte(l), time.Now())
			if !res.Parsed {
				t.Fatalf("round %d: not parsed: %s", round, l)
			}
			if lines[i].Source == "dns" {
				continue
			}
			src, _ := res.Event["source.ip"].(string)
			a, err := netip.ParseAddr(src)
			if err != nil || a.IsPrivate() || !a.IsGlobalUnicast() {
				t.Fatalf("round %d: source %q is no public address", round, src)
			}
			if r, ok := seen[src]; ok {
				t.Fatalf("round %d: source %s was sent in round %d already", round, src, r)
			}
			seen[src] = round
		}
	}
	if got := b.renumber(body.Bytes(), passes, false); !bytes.Equal(got, body.Bytes()) {
		t.Error("the pass after the last does not start again from the first")
	}
	if !b.renumbered.Load() {
		t.Error("renumbered is not set: the search phase would expect exact totals")
	}
	other := &bench{f: Config{Files: "internet-zipf"}}
	if got := other.renumber(body.Bytes(), 1, false); !bytes.Equal(got, body.Bytes()) {
		t.Error("the Zipf mix was renumbered")
	}
}
