// Package starterrules holds the Sigma rules every organization starts
// with (README.md): SigmaHQ's rules for the logs Vigil parses, under the
// Detection Rule License 1.1 with their authors, and Vigil's own (the SSH
// brute force as a correlation rule). Each org switches each of them on
// or off; the store keeps only its changes from the defaults.
package starterrules

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sigma"
)

//go:embed sigmahq vigil
var files embed.FS

// SigmaHQCommit is the SigmaHQ/sigma commit the sigmahq rules are copied
// from.
const SigmaHQCommit = "8eaafff1f2845a696050e05e72ba1140ee190698"

// Rule is a starter rule: a detection rule whose ID is its Sigma id and
// whose Enabled is its default, with where it comes from.
type Rule struct {
	vigil.DetectionRule
	// Origin is "SigmaHQ" or "Vigil"; Path the file's path in SigmaHQ's
	// repository (or under vigil/); Author the rule's author field.
	Origin string
	Path   string
	Author string
}

// disabledByDefault are the starter rules an org has off until it turns
// them on: the brute-force correlation (the built-in detector reports the
// same) and its base rule (a failed attempt is no finding on its own).
var disabledByDefault = map[string]bool{
	"0c1f6d2e-8a4b-4f3e-9b7d-2e5a6c8d9f01": true,
	"4e1e7a3c-2f0b-4d5e-8a61-9c3b2d1f0e77": true,
}

// All returns the starter rules, SigmaHQ's by path then Vigil's. The
// slice and its rules are shared: callers copy what they change.
func All() []*Rule { return load() }

// Get returns the starter rule with Sigma id id, or nil.
func Get(id string) *Rule {
	for _, r := range load() {
		if r.ID == id {
			return r
		}
	}
	return nil
}

var load = sync.OnceValue(func() []*Rule {
	rules, err := read(files)
	if err != nil {
		// The files are embedded and tested (TestStarterRulesCompile).
		panic("starterrules: " + err.Error())
	}
	return rules
})

// read parses every .yml file of fsys into rules.
func read(fsys fs.FS) ([]*Rule, error) {
	var out []*Rule
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".yml" {
			return err
		}
		text, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		parsed, err := sigma.Parse(text)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if parsed.ID == "" {
			return fmt.Errorf("%s: a starter rule needs an id", p)
		}
		kind := "detection"
		switch {
		case parsed.Correlation != nil:
			kind = "correlation"
		case parsed.Filter != nil:
			kind = "filter"
		}
		origin, rel := "Vigil", p
		if r, ok := strings.CutPrefix(p, "sigmahq/"); ok {
			origin, rel = "SigmaHQ", r
		}
		created := day(parsed.Date)
		updated := day(parsed.Modified)
		if updated.IsZero() {
			updated = created
		}
		out = append(out, &Rule{
			DetectionRule: vigil.DetectionRule{ID: parsed.ID, Title: parsed.Title, SigmaID: parsed.ID, Name: parsed.Name,
				Kind: kind, Level: parsed.Level, Enabled: !disabledByDefault[parsed.ID], Rule: string(text), CreatedBy: origin,
				CreatedAt: created, UpdatedAt: updated},
			Origin: origin, Path: rel, Author: parsed.Author,
		})
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Origin != out[j].Origin {
			return out[i].Origin == "SigmaHQ"
		}
		return out[i].Path < out[j].Path
	})
	return out, err
}

// day reads a Sigma date (YYYY-MM-DD or YYYY/MM/DD); zero if none.
func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", strings.ReplaceAll(s, "/", "-"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// ForOrg returns the starter rules as org has them: each a copy with
// Enabled from states (rule id → enabled) where org changed it, else its
// default.
func ForOrg(org string, states map[string]bool) []*vigil.DetectionRule {
	all := load()
	out := make([]*vigil.DetectionRule, len(all))
	for i, r := range all {
		dr := r.DetectionRule
		dr.OrgID = org
		if on, ok := states[r.ID]; ok {
			dr.Enabled = on
		}
		out[i] = &dr
	}
	return out
}
