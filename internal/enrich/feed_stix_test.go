package enrich

import (
	"errors"
	"slices"
	"testing"
)

func TestParseSTIX(t *testing.T) {
	inds, skipped, err := parseSTIX(readTestdata(t, "bundle.stix.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Indicator{
		{IndicatorIP, "198.51.100.55"},
		{IndicatorCIDR, "2001:db8:bad::/48"},
		{IndicatorDomain, "c2.stix.example"},
		{IndicatorURL, "https://stix.example/gate.php"},
		{IndicatorSHA256, "ef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c"},
		{IndicatorMD5, "d41d8cd98f00b204e9800998ecf8427e"},
	}
	if !slices.Equal(inds, want) {
		t.Errorf("got %+v\nwant %+v", inds, want)
	}
	if skipped != 2 { // the AND pattern and the revoked indicator
		t.Errorf("skipped = %d, want 2", skipped)
	}
	if _, _, err := parseSTIX([]byte(`{"Event": {}}`)); !errors.Is(err, errNotFormat) {
		t.Errorf("MISP JSON: %v, want errNotFormat", err)
	}
}

func TestSTIXPattern(t *testing.T) {
	tests := []struct {
		pattern string
		want    []string // values; nil: skipped
	}{
		{`[ipv4-addr:value = '1.2.3.4']`, []string{"1.2.3.4"}},
		{`[ipv4-addr:value='10.0.0.0/8']`, []string{"10.0.0.0/8"}},
		{`[url:value = 'http://x.example/it\'s']`, []string{"http://x.example/it's"}},
		{`[domain-name:value = 'a.example'] OR [domain-name:value = 'b.example']`, []string{"a.example", "b.example"}},
		{`[file:hashes.'SHA-1' = 'da39a3ee5e6b4b0d3255bfef95601890afd80709' or file:hashes.MD5 = 'd41d8cd98f00b204e9800998ecf8427e']`,
			[]string{"da39a3ee5e6b4b0d3255bfef95601890afd80709", "d41d8cd98f00b204e9800998ecf8427e"}},
		{`[ipv4-addr:value = '1.2.3.4'] AND [domain-name:value = 'a.example']`, nil},
		{`[ipv4-addr:value = '1.2.3.4'] WITHIN 60 SECONDS`, nil},
		{`[ipv4-addr:value != '1.2.3.4']`, nil},
		{`[ipv4-addr:value MATCHES '^1\\.2']`, nil},
		{`[email-addr:value = 'a@b.example']`, nil},
		{`[ipv4-addr:value = 'not an ip']`, nil},
		{`[ipv4-addr:value = '1.2.3.4'`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		inds, ok := stixPattern(tt.pattern)
		var got []string
		for _, i := range inds {
			got = append(got, i.Value)
		}
		if !slices.Equal(got, tt.want) || ok != (tt.want != nil) {
			t.Errorf("%s: got %v (%v), want %v", tt.pattern, got, ok, tt.want)
		}
	}
}

func FuzzParseSTIX(f *testing.F) {
	f.Add(readTestdata(f, "bundle.stix.json"))
	f.Add([]byte(`[{"type":"indicator","pattern":"[url:value = 'http://a.example/\\'']"}]`))
	f.Add([]byte(`{"type":"bundle","objects":[{"type":"indicator","pattern":"[file:hashes.'SHA-256' = '` +
		`e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'] OR [x:y = '']"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inds, _, _ := parseSTIX(data)
		checkIndicators(t, inds)
	})
}

func FuzzSTIXPattern(f *testing.F) {
	f.Add(`[ipv4-addr:value = '1.2.3.4'] OR [domain-name:value = 'a.example' OR url:value = 'http://b.example/']`)
	f.Add(`[file:hashes.'SHA-256' = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855']`)
	f.Fuzz(func(t *testing.T, p string) {
		inds, ok := stixPattern(p)
		if ok != (len(inds) > 0) {
			t.Fatalf("ok %v with %d indicators", ok, len(inds))
		}
		checkIndicators(t, inds)
	})
}
