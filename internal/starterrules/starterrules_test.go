package starterrules

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/sigma"
)

// TestStarterRulesCompile: every starter rule parses and compiles (a
// detection rule into a matcher with Vigil sources, a correlation over
// rules of the set), keeps its author, and SigmaHQ's keep the path they
// have in SigmaHQ's repository.
func TestStarterRulesCompile(t *testing.T) {
	all := All()
	if len(all) < 30 {
		t.Fatalf("%d starter rules, want the 33 SigmaHQ rules and Vigil's", len(all))
	}
	names := map[string]bool{}
	for _, r := range all {
		names[r.SigmaID], names[r.Name] = true, true
	}
	seen := map[string]bool{}
	for _, r := range all {
		if seen[r.ID] {
			t.Errorf("%s: id %s twice", r.Path, r.ID)
		}
		seen[r.ID] = true
		if r.Author == "" {
			t.Errorf("%s: no author", r.Path)
		}
		if r.Origin == "SigmaHQ" && !strings.HasPrefix(r.Path, "rules/") {
			t.Errorf("%s: not a SigmaHQ path", r.Path)
		}
		parsed, err := sigma.Parse([]byte(r.Rule))
		if err != nil {
			t.Errorf("%s: %v", r.Path, err)
			continue
		}
		if parsed.Correlation != nil {
			if _, err := sigma.CompileCorrelation(parsed); err != nil {
				t.Errorf("%s: %v", r.Path, err)
			}
			for _, ref := range parsed.Correlation.Rules {
				if !names[ref] {
					t.Errorf("%s names %q, no starter rule", r.Path, ref)
				}
			}
			continue
		}
		c, err := sigma.Compile(parsed)
		if err != nil {
			t.Errorf("%s: %v", r.Path, err)
			continue
		}
		if len(c.Sources()) == 0 {
			t.Errorf("%s reads no Vigil source", r.Path)
		}
	}
}

// TestForOrg: an org's choices change its copy of a rule, not the set.
func TestForOrg(t *testing.T) {
	all := All()
	id := all[0].ID
	mine := ForOrg("org-a", map[string]bool{id: !all[0].Enabled})
	if mine[0].Enabled == all[0].Enabled || mine[0].OrgID != "org-a" {
		t.Errorf("org-a's copy = %+v", mine[0])
	}
	if ForOrg("org-b", nil)[0].Enabled != all[0].Enabled {
		t.Error("org-a's choice reached org-b")
	}
	if Get(id) != all[0] || Get("no-such-id") != nil {
		t.Error("Get")
	}
}
