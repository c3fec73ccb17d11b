package parse

import "testing"

func TestAppendJSONEscape(t *testing.T) {
	for _, c := range []struct {
		in, want string
		n        int
		lone, ok bool
	}{
		{`\n rest`, "\n", 2, false, true},
		{`\"`, `"`, 2, false, true},
		{`\/`, "/", 2, false, true},
		{`\u00e9`, "é", 6, false, true},
		{`\ud83d\ude00`, "😀", 12, false, true},
		{`\ud83dx`, "\uFFFD", 6, true, true},
		{`\ud83d\u0041`, "\uFFFD", 6, true, true}, // not a pair: the second escape is read on its own
		{`\ude00`, "\uFFFD", 6, true, true},
		{`\u12"`, "", 0, false, false},
		{`\x`, "", 0, false, false},
		{`\`, "", 0, false, false},
		{`n`, "", 0, false, false},
	} {
		out, n, lone, ok := AppendJSONEscape([]byte(">"), []byte(c.in))
		if ok != c.ok || n != c.n || lone != c.lone || (ok && string(out) != ">"+c.want) || (!ok && string(out) != ">") {
			t.Errorf("AppendJSONEscape(%q) = %q, %d, %v, %v; want %q, %d, %v, %v", c.in, out, n, lone, ok, ">"+c.want, c.n, c.lone, c.ok)
		}
	}
}
