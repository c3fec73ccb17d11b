package vlogs

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

func TestQueryFilter(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"", ""},
		{"failed", `((w:"failed"))`},
		{"Failed PASSWORD", `((w:"failed" w:"password"))`},
		{`"failed password"`, `((w:"failed password"))`},
		{"203.0.113.7", `((a:"203_0_113_7"))`},
		{"10.0.0.4 OR 10.0.0.6 sshd -10.0.0.5", `((a:"10_0_0_4") or (a:"10_0_0_6" w:"sshd")) !a:"10_0_0_5"`},
		{"203.0.113.7*", `((w:"203 0 113 7"*))`},
		{"1.2.3", `((w:"1 2 3"))`},
		{"evil.example.com", `((w:"evil example com"))`},
		{"user_name", `((w:"user name"))`},
		{"pass*", `((w:"pass"*))`},
		{"evil.exa*", `((w:"evil exa"*))`},
		{"a b OR c", `((w:"a" w:"b") or (w:"c"))`},
		{"a OR b -c", `((w:"a") or (w:"b")) !w:"c"`},
		{`-"root login"`, `!w:"root login"`},
		{"日本語のログ", `((w:"日本語のログ"))`},
		// LogsQL in a query is words like any other.
		{`x" | delete _msg`, `((w:"x" w:"delete" w:"msg"))`},
		{`_stream:{source="a"} OR AccountID:1`, `((w:"stream source a") or (w:"accountid 1"))`},
	} {
		q, err := search.Parse(tc.query)
		if err != nil {
			if tc.want != "" {
				t.Errorf("%q: %v", tc.query, err)
			}
			continue
		}
		if got := queryFilter(q, time.Time{}); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.query, got, tc.want)
		}
	}
}

func TestTimeFilter(t *testing.T) {
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		r      vigil.TimeRange
		want   string
		wantOK bool
	}{
		{"open", vigil.TimeRange{}, "", true},
		{"a day", vigil.TimeRange{Start: day, End: day.Add(24 * time.Hour)}, "_time:[2026-01-02T00:00:00Z, 2026-01-03T00:00:00Z)", true},
		{"empty", vigil.TimeRange{Start: day, End: day}, "", false},
		{"since", vigil.TimeRange{Start: day},
			`(_time:[2026-01-02T00:00:00Z, 2120-01-01T00:00:00Z) or (_time:[2120-01-01T00:00:00Z, 2120-01-01T00:00:00Z] ts:string_range("2120-01-01T00:00:00.000000000Z", "~")))`, true},
		{"before 1970", vigil.TimeRange{Start: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)},
			`(_time:[1970-01-02T00:00:00Z, 1970-01-02T00:00:00Z] ts:string_range("1900-01-01T00:00:00.000000000Z", "1950-01-01T00:00:00.000000000Z"))`, true},
	} {
		got, ok := timeFilter(tc.r)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: got %s %v, want %s %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

// FuzzQueryFilter: whatever a user types, the filter holds only the
// fixed syntax around quoted runs of letters, digits and spaces (and
// address keys: digits joined by '_'): no
// pipe, no other field, no tenant, nothing of the user's text outside
// quotes.
func FuzzQueryFilter(f *testing.F) {
	for _, s := range []string{"failed", `"a b" -c OR d*`, `x" | stats count()`, `_stream:{a="b"} | delete`, "a\\\"b", "AccountID:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := search.Parse(s)
		if err != nil {
			return
		}
		out := queryFilter(q, time.Time{})
		rest := out
		for {
			i := strings.Index(rest, `w:"`)
			if j := strings.Index(rest, `a:"`); j >= 0 && (i < 0 || j < i) {
				i = j // an address key: digits and '_'
			}
			if i < 0 {
				break
			}
			outside := rest[:i]
			if strings.Trim(outside, "() !or*") != "" {
				t.Fatalf("%q: %q outside quotes in %s", s, outside, out)
			}
			end := strings.IndexByte(rest[i+3:], '"')
			if end < 0 {
				t.Fatalf("%q: unterminated quote in %s", s, out)
			}
			for _, r := range rest[i+3 : i+3+end] {
				if r != ' ' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("%q: %q inside quotes in %s", s, r, out)
				}
			}
			rest = rest[i+3+end+1:]
		}
		if strings.Trim(rest, "() !or*") != "" {
			t.Fatalf("%q: %q after the terms in %s", s, rest, out)
		}
	})
}
