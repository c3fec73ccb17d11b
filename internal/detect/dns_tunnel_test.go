package detect

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// tunnelName makes the n-th look-up of a DNS tunnel under parent, in the
// style of a tool: dnscat2 (hex), iodine (base32 labels) or plain
// exfiltration (base32 chunks of a file).
func tunnelName(r *rand.Rand, style string, n int, parent string) string {
	rnd := func(alphabet string, k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	switch style {
	case "dnscat2":
		return rnd("0123456789abcdef", 60) + "." + rnd("0123456789abcdef", 30) + "." + parent
	case "iodine":
		return "p" + rnd("abcdefghijklmnopqrstuvwxyz012345", 55) + "." + parent
	}
	return fmt.Sprintf("%04d-%s.%s", n, rnd("abcdefghijklmnopqrstuvwxyz234567", 26), parent)
}

func TestDNSTunnelSignals(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, style := range []string{"dnscat2", "iodine", "exfil"} {
		name := tunnelName(r, style, 1, "t.evil.example.com")
		runSignalCases(t, DNSTunnel{}, []signalCase{{name: style, fields: dnsQuery("10.0.0.8", name),
			key: "10.0.0.8|example.com", member: strings.TrimSuffix(name, ".example.com"),
			nodes: []string{"IP:10.0.0.8*", "Domain:example.com*"}}})
	}
	var cases []signalCase
	for _, name := range []string{
		"partition-cname-trouter-ic3-edf-trouter-service-trouter-1.d02-015.ic3-edf-trouter.01-polandcentral-prod.cosmic.office.net",
		"partition-cname-trouter.pub-csm-dewc-01.ic3-edf-trouter.germanywestcentral-prod.cosmic.office.net",
		"0988253c66242502070643933dd49e88.clo.footprintdns.com",
		"elb-telemetry-prod-external-1332413525.us-west-2.elb.amazonaws.com",
		"a21ed24aedde648804e7-228765c84088fef4ff5e70f2710398e9.r17.cf1.rackcdn.com",
		"community-cdn-digitalocean-com.global.ssl.fastly.net",
		"github-production-release-asset-2e65be.s3.amazonaws.com",
		"b.f.3.e.2.2.e.f.f.f.b.d.2.0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.e.f.ip6.arpa",
		"www.example.com", "shortrandom.xjwqpvkzrmdl.com",
	} {
		cases = append(cases, signalCase{name: name, fields: dnsQuery("10.0.0.8", name)})
	}
	runSignalCases(t, DNSTunnel{}, cases)
}

// TestDNSTunnelWindow: twenty distinct tunnel names from one client under
// one parent within 5 minutes meet the window; the same names under many
// parents, or repeated, do not.
func TestDNSTunnelWindow(t *testing.T) {
	d := DNSTunnel{}
	r := rand.New(rand.NewPCG(3, 4))
	var evs []*Event
	for i := range 25 {
		ev := event(dnsQuery("10.0.0.8", tunnelName(r, "exfil", i, "exfil.example.org")))
		ev.At = refTime.Add(time.Duration(i) * 5 * time.Second)
		evs = append(evs, ev)
	}
	ds := NewEngine(d).Detections(evs)
	if len(ds) != 2 || len(ds[0].Signals) != 20 || ds[0].Key != "10.0.0.8|example.org" || ds[0].MinDistinct != 20 {
		t.Fatalf("detections %d (first %+v), want the 20th signal to end the first", len(ds), ds[0])
	}
	f := d.Describe(ds[0].Key, window(20, []string{ds[0].Signals[0].Member}))
	if f.Type != "exfiltration" || f.Severity != vigil.SeverityMedium || f.Title != "DNS tunnel from 10.0.0.8 to example.org" {
		t.Errorf("finding %+v", f)
	}
}

// TestDNSTunnelDatasets: the real DNS logs hold a few long machine-made
// names but never 20 under one parent from one client.
func TestDNSTunnelDatasets(t *testing.T) {
	for _, c := range dnsDatasets {
		perKey := map[string]map[string]bool{}
		for _, ev := range parseFile(t, c.source, c.file) {
			for _, k := range (DNSTunnel{}).Signals(ev) {
				if perKey[k.Key] == nil {
					perKey[k.Key] = map[string]bool{}
				}
				perKey[k.Key][k.Member] = true
			}
		}
		most := 0
		for k, m := range perKey {
			most = max(most, len(m))
			t.Logf("%s: %s has %d tunnel-like names", c.file, k, len(m))
		}
		if most >= 20 {
			t.Errorf("%s: %d tunnel-like names under one parent", c.file, most)
		}
	}
}
