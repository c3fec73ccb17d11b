package search

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAddressKeys(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"none", "sshd: Failed password for root", nil},
		{"one address", "Accepted from 10.0.0.53 port 22", []string{"10.0.0.53"}},
		{"address and port", "query from 10.0.0.53#53", []string{"10.0.0.53", "0.0.53.53"}},
		{"any separators", "10-0-0-53 10 0 0 54", []string{"10.0.0.53", "0.0.53.10", "0.53.10.0", "53.10.0.0", "10.0.0.54"}},
		{"a word breaks a run", "10-0-0-53 and 10 0 0 54", []string{"10.0.0.53", "10.0.0.54"}},
		{"four digits break a run", "1.2.3.4567.5.6.7.8", []string{"5.6.7.8"}},
		{"a letter joins its token", "10.0.0.53x 10.0.0.1", []string{"10.0.0.1"}},
		{"repeated once", "SRC=10.0.0.53 DST=10.0.0.53", []string{"10.0.0.53"}},
		{"unicode letter joins", "10.0.0.53é", nil},
		{"unicode digit is no ASCII digit", "10.0.0.٥٣", nil},
		{"invalid utf-8 separates", "10\xff0\xff0\xff53", []string{"10.0.0.53"}},
		{"at the very end", "dst 192.168.1.1", []string{"192.168.1.1"}},
		{"leading zeros kept", "010.000.000.053", []string{"010.000.000.053"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddressKeys(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AddressKeys(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestTermAddress(t *testing.T) {
	tests := []struct {
		in   string
		key  string
		isOK bool
	}{
		{"10.0.0.53", "10.0.0.53", true},
		{"10-0-0-53", "10.0.0.53", true},
		{`"10 0 0 53"`, "10.0.0.53", true},
		{"10.0.0.1000", "", false},
		{"10.0.0", "", false},
		{"10.0.0.53.1", "", false},
		{"10.0.0.*", "", false},
		{"10.0.0.53*", "", false},
		{"a.0.0.53", "", false},
		{"fe80::1", "", false},
	}
	for _, tt := range tests {
		q, err := Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := q.Any[0][0].Address()
		if k != tt.key || ok != tt.isOK {
			t.Errorf("%q: Address() = %q, %v; want %q, %v", tt.in, k, ok, tt.key, tt.isOK)
		}
	}
}

func TestFTS5Addresses(t *testing.T) {
	for in, want := range map[string][2]string{
		"10.0.0.53":                         {`("10.0.0.53")`, ""},
		"10.0.0.53 OR 10.0.0.54 -10.0.0.55": {`("10.0.0.53") OR ("10.0.0.54")`, `"10.0.0.55"`},
		"-10.0.0.55":                        {"", `"10.0.0.55"`},
	} {
		q, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if !q.AddressesOnly() {
			t.Fatalf("%q: not addresses only", in)
		}
		if m, n := q.FTS5Addresses(); m != want[0] || n != want[1] {
			t.Errorf("%q: FTS5Addresses() = %q, %q; want %q, %q", in, m, n, want[0], want[1])
		}
	}
	for _, in := range []string{"10.0.0.53 sshd", "sshd -10.0.0.53", "10.0.0.5*", ""} {
		q, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if q.AddressesOnly() {
			t.Errorf("%q: addresses only", in)
		}
	}
}

// TestAddressKeysAgreeWithPhrases: on every line of the datasets, a line
// holds an address key exactly when its tokens hold the key's phrase, for
// the keys of the line and for near misses (a part changed).
func TestAddressKeysAgreeWithPhrases(t *testing.T) {
	var lines []string
	for _, dir := range []string{"auth", "dns", "firewall", "suricata"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", dir, "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	if len(lines) < 1000 {
		t.Skip("datasets not found")
	}
	phrase := func(toks []string, p []string) bool {
		for i := 0; i+len(p) <= len(toks); i++ {
			if slices.Equal(toks[i:i+len(p)], p) {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, l := range lines {
		toks := Tokens(l)
		keys := AddressKeys(l)
		for _, k := range keys {
			p := strings.Split(k, ".")
			if !phrase(toks, p) {
				t.Fatalf("key %q of %q: no such phrase", k, l)
			}
			near := slices.Clone(p)
			near[3] += "0"
			if phrase(toks, near) != slices.Contains(keys, strings.Join(near, ".")) {
				t.Fatalf("%q: key %q and its phrase disagree", l, strings.Join(near, "."))
			}
			checked++
		}
		// Every phrase of four short numeric tokens is a key.
		for i := 0; i+AddressParts <= len(toks); i++ {
			if k, ok := (Term{Tokens: toks[i : i+AddressParts]}).Address(); ok && !slices.Contains(keys, k) {
				t.Fatalf("%q: phrase %q has no key", l, k)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no address in the datasets")
	}
	t.Logf("%d lines, %d keys", len(lines), checked)
}

// BenchmarkAddressKeys: the keys of the datasets' lines, as the store
// computes them for each artifact it writes.
func BenchmarkAddressKeys(b *testing.B) {
	var lines []string
	for _, dir := range []string{"auth", "dns", "firewall", "suricata"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", dir, "*"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			lines = append(lines, strings.Split(string(data), "\n")...)
		}
	}
	if len(lines) == 0 {
		b.Skip("no datasets")
	}
	b.ReportAllocs()
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf = AppendAddressKeys(buf[:0], lines[i%len(lines)])
	}
}
