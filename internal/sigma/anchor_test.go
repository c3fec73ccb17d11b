package sigma

import (
	"strings"
	"testing"
)

// TestIndexFoldAnchored: the anchored search finds what indexFoldASCII
// finds, at the same offset, whatever byte anchors it.
func TestIndexFoldAnchored(t *testing.T) {
	for _, c := range []struct{ s, lit string }{
		{"COMMAND=/usr/bin/rm /var/log/syslog", "rm /var/log/syslog"},
		{"bash -i >& /dev/tcp/127.0.0.1/9", "bash -i >& /dev/tcp/"},
		{"x=() { :;}; echo", "() { :;};"},
		{"a/b/c/d", "/d"},
		{"a/b/c/d", "a/"},
		{"/", "//"},
		{"", "/"},
		{"no slash here", "a/b"},
		{"Port 22 ssh2", "port 22"},
		{"Entered PROMISCUOUS mode", "entered promiscuous mode"},
		{"new USER: name", "new user"},
		{"aaaa", "aa"},
		{"xyz", "abc"},
	} {
		lit := strings.ToLower(c.lit)
		a := anchorOf(lit)
		if got, want := indexFoldAnchored(c.s, lit, a), indexFoldASCII(c.s, lit); got != want {
			t.Errorf("%q in %q (anchor %d): %d, want %d", lit, c.s, a, got, want)
		}
	}
	if anchorOf("abc") != 1 || anchorOf("ab/c d") != 2 || anchorOf("a b1") != 3 || anchorOf("new user") != 2 {
		t.Errorf("anchorOf: %d %d %d %d", anchorOf("abc"), anchorOf("ab/c d"), anchorOf("a b1"), anchorOf("new user"))
	}
}

// FuzzIndexFoldAnchored: for any literal with an anchor and any text,
// the anchored search finds what strings.Index finds in the folded text.
func FuzzIndexFoldAnchored(f *testing.F) {
	f.Add("COMMAND=/usr/bin/rm /var/log/syslog", "rm /var/log/syslog")
	f.Add("a//b", "/b")
	f.Fuzz(func(t *testing.T, s, lit string) {
		lit = strings.ToLower(lit)
		if !isASCII(lit) || lit == "" {
			return
		}
		a := anchorOf(lit)
		folded := []byte(s) // ASCII letters folded byte by byte, other bytes kept
		for i, c := range folded {
			if c >= 'A' && c <= 'Z' {
				folded[i] = c + 'a' - 'A'
			}
		}
		if got, want := indexFoldAnchored(s, lit, a), strings.Index(string(folded), lit); got != want {
			t.Errorf("%q in %q (anchor %d): %d, want %d", lit, s, a, got, want)
		}
	})
}
