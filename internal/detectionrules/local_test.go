package detectionrules

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
)

// datasetLine returns the first line of a file of ../shared/datasets that
// contains s.
func datasetLine(t *testing.T, rel, s string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "shared", "datasets", rel))
	if err != nil {
		t.Skipf("no datasets: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return sc.Text()
		}
	}
	t.Fatalf("%s: no line with %q", rel, s)
	return ""
}

const failedPasswordRule = "title: SSH failed password\nname: ssh_failed\nlogsource:\n    product: linux\n    service: sshd\n" +
	"detection:\n    k:\n        - 'Failed password'\n    condition: k\n"

// TestLocalSourceKeys: a Sigma rule's match, and a correlation's group-by
// on source.ip, key a local source as the built-in detectors do: by the
// address on the host that logged it, the host the key node and the
// address context, so two hosts' loopbacks are two actors; with
// local_sources=ignore they make no signal. A remote address keys as
// before. The lines are fail2ban's real sshd test lines; the second
// host's line is the same line with only its host field changed.
func TestLocalSourceKeys(t *testing.T) {
	loop := datasetLine(t, "auth/fail2ban-sshd.log", "Failed password for dan from 127.0.0.1 port 45416")
	host := strings.Fields(loop)[3] // "spaceman"
	other := strings.Replace(loop, " "+host+" ", " db-02 ", 1)
	remote := datasetLine(t, "auth/integrations-test-secure-rhel7.log", "Failed password for root from 202.109.143.106")

	rules := []*vigil.DetectionRule{
		{ID: "r1", Enabled: true, Kind: "detection", Rule: failedPasswordRule},
		{ID: "c1", Enabled: true, Kind: "correlation", Rule: "title: c\ncorrelation:\n    type: event_count\n    rules: [ssh_failed]\n" +
			"    group-by: [source.ip]\n    timespan: 10m\n    condition:\n        gte: 3\n"},
	}
	for _, c := range []struct {
		name, raw, policy string
		key               string          // "" with want nil: no signal
		keyNodes          []vigil.NodeRef // the key nodes
		ipContext         bool            // the address is a context node
	}{
		{"loopback on " + host, loop, detect.LocalReport, "127.0.0.1 on " + host,
			[]vigil.NodeRef{{Type: vigil.NodeHost, Value: host, Key: true}}, true},
		{"loopback on db-02", other, "", "127.0.0.1 on db-02",
			[]vigil.NodeRef{{Type: vigil.NodeHost, Value: "db-02", Key: true}}, true},
		{"loopback ignored", loop, detect.LocalIgnore, "", nil, false},
		{"remote address", remote, detect.LocalIgnore, "202.109.143.106",
			[]vigil.NodeRef{{Type: vigil.NodeIP, Value: "202.109.143.106", Key: true}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dets, errs := Compile(rules, c.policy)
			if len(dets) != 2 || len(errs) != 0 {
				t.Fatalf("detectors %d, errors %v", len(dets), errs)
			}
			for _, d := range dets {
				sigs := d.Signals(event("auth", c.raw))
				if c.key == "" {
					if len(sigs) != 0 {
						t.Errorf("%s: signals %+v, want none", d.Name(), sigs)
					}
					continue
				}
				if len(sigs) != 1 || sigs[0].Key != c.key {
					t.Fatalf("%s: signals %+v, want one keyed %q", d.Name(), sigs, c.key)
				}
				var keys []vigil.NodeRef
				ipContext := false
				for _, n := range sigs[0].Nodes {
					if n.Key {
						keys = append(keys, n)
					}
					if n.Type == vigil.NodeIP && n.Value == "127.0.0.1" && !n.Key {
						ipContext = true
					}
				}
				if len(keys) != len(c.keyNodes) || (len(keys) > 0 && keys[0] != c.keyNodes[0]) || ipContext != c.ipContext {
					t.Errorf("%s: nodes %+v, want key nodes %+v, 127.0.0.1 as context %v", d.Name(), sigs[0].Nodes, c.keyNodes, c.ipContext)
				}
			}
		})
	}
}
