package sigma

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-soc/vigil/internal/parse"
)

// found returns the guards each reports for s, sorted, once each.
func found(x *literals, s string) []int32 {
	var out []int32
	x.each(s, func(gs []int32) {
		for _, g := range gs {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	})
	slices.Sort(out)
	return out
}

// holds returns the guards of the literals s holds, by strings.Contains.
func holds(lits map[string][]int32, s string) []int32 {
	var out []int32
	for lit, gs := range lits {
		if strings.Contains(s, lit) {
			for _, g := range gs {
				if !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestLiterals(t *testing.T) {
	lits := map[string][]int32{
		"he":           {1},
		"she":          {2},
		"his":          {3},
		"hers":         {4},
		"sekurlsa::":   {5, 6},
		"::logonpass":  {7},
		"\\temp\\":     {8},
		"-enc":         {9},
		"-encodedcomm": {10},
		"aaa":          {11},
	}
	x := newLiterals(lits)
	for _, tc := range []struct {
		name, s string
		want    []int32
	}{
		{"empty", "", nil},
		{"none", "xyz", nil},
		{"one", "ushe", []int32{1, 2}},
		{"overlapping", "ushers", []int32{1, 2, 4}},
		{"suffix of a longer one's path", "hisher", []int32{1, 2, 3}},
		{"two sharing bytes", "mimikatz sekurlsa::logonpasswords", []int32{5, 6, 7}},
		{"prefix of another", "powershell -encodedcommand abc", []int32{1, 2, 9, 10}},
		{"prefix only", "powershell -enc abc", []int32{1, 2, 9}},
		{"backslashes", "c:\\users\\x\\appdata\\local\\temp\\a.exe", []int32{8}},
		{"repeated bytes", "aaaa", []int32{11}},
		{"at the end", "xxaaa", []int32{11}},
		{"cut short", "aa", nil},
		{"not folded", "SHE", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := found(x, tc.s); !slices.Equal(got, tc.want) {
				t.Errorf("each(%q) = %v, want %v", tc.s, got, tc.want)
			}
			if got := holds(lits, tc.s); !slices.Equal(got, tc.want) {
				t.Errorf("the table is wrong: %q holds %v, want %v", tc.s, got, tc.want)
			}
		})
	}
}

// FuzzLiterals: the index finds exactly the literals a value holds, by
// strings.Contains, whatever the literals and the value.
func FuzzLiterals(f *testing.F) {
	f.Add("he she his hers", "ushers")
	f.Add("sekurlsa:: ::logonpass", "sekurlsa::logonpasswords")
	f.Add("aaa aab abab", "aaabababaab")
	f.Add("a\x00b \xff\xfe", "a\x00b\xff\xfe\xff")
	f.Fuzz(func(t *testing.T, words, s string) {
		lits := map[string][]int32{}
		for i, w := range strings.Fields(words) {
			lits[w] = append(lits[w], int32(i+1))
		}
		if len(lits) == 0 {
			return
		}
		x := newLiterals(lits)
		if got, want := found(x, s), holds(lits, s); !slices.Equal(got, want) {
			t.Errorf("literals %q in %q: each found %v, want %v", words, s, got, want)
		}
	})
}

// TestLiteralsSharedByWorkers: the workers of one org match events
// through one FieldSet at once; its substring index, made at the first
// event, is made once and read by all (run with -race).
func TestLiteralsSharedByWorkers(t *testing.T) {
	set := NewFieldSet()
	var rules []*Compiled
	for _, lit := range []string{"sekurlsa::", "invoke-mimikatz", "-encodedcommand", "\\temp\\"} {
		r, err := Parse([]byte("title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query|contains: '" + lit + "'\n    condition: s\n"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := CompileIn(r, set)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, c)
	}
	ev := Event{Source: "dns", Fields: parse.Event{"dns.question.name": "powershell -EncodedCommand x; Invoke-Mimikatz"}}
	var wg sync.WaitGroup
	matched := make([]int, 8)
	for w := range matched {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := NewPrepared(set)
			for range 100 {
				p.Reset(ev)
				for _, c := range rules {
					if c.InScopePrepared(p) && c.MatchPrepared(p) {
						matched[w]++
					}
				}
			}
		}()
	}
	wg.Wait()
	for w, n := range matched {
		if n != 200 {
			t.Errorf("worker %d: %d matches, want 200 (two rules, 100 events)", w, n)
		}
	}
}
