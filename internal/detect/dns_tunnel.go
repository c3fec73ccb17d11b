package detect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// DNSTunnel fires when one client looks up at least Names distinct long,
// random-looking names under one parent domain within Span (default 20
// in 5 minutes): data carried in DNS questions (iodine, dnscat2, DNS
// exfiltration). An exfiltration observation, medium, keyed by client
// and parent: both are key nodes, the client as the source, the parent as
// the domain it talks to.
//
// A name counts when a label below the parent has at least LabelLen
// characters (default 25) or the whole name at least NameLen (default
// 60), and the labels below the parent look random: hexadecimal, or
// unlikely in every language of the DGA detector's models (languageScore
// below −5 bits). Long names of CDNs and
// clouds made of words and short hashes ("partition-cname-trouter…
// .cosmic.office.net") do not, and the parents of wellKnownDomains are
// skipped.
type DNSTunnel struct {
	Names    int
	Span     time.Duration
	LabelLen int
	NameLen  int
	Local    string // LocalReport or LocalIgnore
}

// NameDNSTunnel is the detector's name.
const NameDNSTunnel = "dns_tunnel"

func (d DNSTunnel) Name() string { return NameDNSTunnel }

func (d DNSTunnel) Window() Window {
	n := orInt(d.Names, 20)
	return Window{Span: orDur(d.Span, 5*time.Minute), MinCount: n, MinDistinct: n}
}

func (d DNSTunnel) Signals(ev *Event) []vigil.Signal {
	client, name, ok := dnsLookup(ev.Fields)
	if !ok {
		return nil
	}
	_, parent, ok := registrable(name)
	if !ok || wellKnownDomains[parent] || len(name) <= len(parent)+1 {
		return nil
	}
	sub := name[:len(name)-len(parent)-1]
	if !d.tunnelLike(name, sub) {
		return nil
	}
	who, ok := sourceActor(ev.Fields, client, d.Local)
	if !ok {
		return nil
	}
	return []vigil.Signal{{Key: who.key + "|" + parent,
		Member: sub,
		Unit:   lookupUnit(ev.Fields, client, name),
		Nodes:  nodes(who.nodes, node(vigil.NodeDomain, parent, true)),
	}}
}

// tunnelLike reports whether sub, the labels of name below its parent,
// look like data.
func (d DNSTunnel) tunnelLike(name, sub string) bool {
	long := len(name) >= orInt(d.NameLen, 60)
	for _, l := range strings.Split(sub, ".") {
		if len(l) >= orInt(d.LabelLen, 25) {
			long = true
		}
	}
	if !long {
		return false
	}
	text := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, sub)
	if len(text) < 16 {
		return false
	}
	if hexLike(text) {
		return true
	}
	return entropy(text) >= 3.5 && languageScore(text) < -5
}

// hexLike reports whether s is hexadecimal with both digits and letters.
func hexLike(s string) bool {
	digits, letters := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			digits = true
		case c >= 'a' && c <= 'f':
			letters = true
		default:
			return false
		}
	}
	return digits && letters
}

func (d DNSTunnel) Describe(key string, w vigil.WindowState) vigil.Finding {
	client, parent, _ := strings.Cut(key, "|")
	examples := slices.Clone(w.Members[:min(len(w.Members), 3)])
	for i, e := range examples {
		if len(e) > 40 {
			examples[i] = e[:40] + "…"
		}
	}
	desc := fmt.Sprintf("DNS tunnel: %s by %s of %s with long random sub-domains (%s), %s",
		plural(w.Count, "look-up"), client, plural(w.Distinct, "name")+" under "+parent, list(examples, w.Distinct), span(w))
	return vigil.Finding{Type: "exfiltration", Severity: vigil.SeverityMedium,
		Title: "DNS tunnel from " + client + " to " + parent, Description: desc, Rollup: "DNS tunnel"}
}
