package sigma

import "testing"

// FuzzGrams: a line's grams never rule out a value that matches it,
// whatever the pattern's kind, case or wildcards.
func FuzzGrams(f *testing.F) {
	f.Add("Feb 20 08:35:22 slave22 sshd[5774]: Failed password for root", "*FAILED pass*", "contains", false)
	f.Add("wget http://x - http://y | perl", "wget * - http* | perl", "", false)
	f.Add("Trojan.Gen FOUND", "Trojan*FOUND", "", true)
	f.Add("a", "A", "", false)
	f.Fuzz(func(t *testing.T, s, v, match string, cased bool) {
		if match != "" && match != "contains" && match != "startswith" && match != "endswith" {
			return
		}
		p, err := compilePattern(v, match, cased)
		if err != nil {
			return
		}
		var g Grams
		g.Add(s)
		if p.matchString(s) && !(line{s, &g}).mayHold(p) {
			t.Errorf("%q (%s, cased %v) matches %q, but its grams rule it out", v, match, cased, s)
		}
	})
}
