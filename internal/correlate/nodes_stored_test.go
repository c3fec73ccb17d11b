package correlate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vigil-soc/vigil"
)

func TestStoredNodesRoundTrip(t *testing.T) {
	ip := func(v string, key bool) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeIP, Value: v, Key: key} }
	for _, tc := range []struct {
		name, key, member string
		nodes             []vigil.NodeRef
		max               int // bytes at most, 0: no bound
	}{
		{"firewall block: key, member, a host", "11.0.0.104|6379", "203.0.113.10",
			[]vigil.NodeRef{ip("11.0.0.104", true), ip("203.0.113.10", false), {Type: vigil.NodeHost, Value: "edge-01"}}, 28},
		{"the whole key", "198.51.100.7", "22", []vigil.NodeRef{ip("198.51.100.7", true)}, 8},
		{"a value equal to the key and the member", "a", "a", []vigil.NodeRef{{Type: vigil.NodeUser, Value: "a"}}, 0},
		{"no member", "k|x", "", []vigil.NodeRef{{Type: vigil.NodeUser, Value: "x", Key: true}, {Type: vigil.NodeUser, Value: ""}}, 0},
		{"values of neither", "k", "m", []vigil.NodeRef{{Type: vigil.NodeDomain, Value: "ünïcode.example", Key: true}, {Type: vigil.NodeURL, Value: "http://x/|y"}}, 0},
		{"no nodes", "k", "m", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendStoredNodes(nil, tc.key, tc.member, tc.nodes)
			if !IsStoredNodes(b) {
				t.Fatalf("%q is not in the stored form", b)
			}
			got, err := StoredNodes(tc.key, tc.member, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.nodes) {
				t.Errorf("read back %+v, want %+v", got, tc.nodes)
			}
			if j, _ := json.Marshal(tc.nodes); tc.max > 0 && len(b) > tc.max {
				t.Errorf("%d bytes (JSON: %d), want at most %d", len(b), len(j), tc.max)
			}
		})
	}
}

func TestStoredNodesRefusesMalformed(t *testing.T) {
	good := AppendStoredNodes(nil, "a|b", "m", []vigil.NodeRef{{Type: "IP", Value: "b", Key: true}, {Type: "IP", Value: "m"}})
	for name, b := range map[string][]byte{
		"JSON":                   []byte(`[{"type":"IP","value":"a","key":true}]`),
		"empty":                  nil,
		"cut short":              good[:len(good)-1],
		"length past the end":    {storedNodesForm, 9, 'I', 'P'},
		"a field the key lacks":  AppendStoredNodes(nil, "a|b|c", "", []vigil.NodeRef{{Type: "IP", Value: "c"}}),
		"a role byte not 0 or 1": append(append([]byte{}, good[:len(good)-1]...), 7),
	} {
		if got, err := StoredNodes("a|b", "m", b); err == nil {
			t.Errorf("%s: read %+v, want an error", name, got)
		}
	}
}

// FuzzStoredNodes: any bytes read back without a panic, and what was
// written reads back the same.
func FuzzStoredNodes(f *testing.F) {
	f.Add("11.0.0.104|6379", "203.0.113.10", "IP", "11.0.0.104", true, []byte{storedNodesForm, 2, 'I', 'P', 0, 1, 1})
	f.Add("k", "", "User", "", false, []byte(`[]`))
	f.Fuzz(func(t *testing.T, key, member, typ, value string, role bool, raw []byte) {
		_, _ = StoredNodes(key, member, raw)
		nodes := []vigil.NodeRef{{Type: typ, Value: value, Key: role}, {Type: typ, Value: member}}
		got, err := StoredNodes(key, member, AppendStoredNodes(nil, key, member, nodes))
		if err != nil || !reflect.DeepEqual(got, nodes) {
			t.Fatalf("read back %+v, %v; want %+v", got, err, nodes)
		}
	})
}
