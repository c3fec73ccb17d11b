package enrich

import (
	"errors"
	"slices"
	"testing"
)

func TestParseMISP(t *testing.T) {
	inds, skipped, err := parseMISP(readTestdata(t, "misp-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Indicator{
		{IndicatorIP, "192.0.2.200"},
		{IndicatorDomain, "misp.example"},
		{IndicatorURL, "http://login.misp.example/verify?id=1"},
		{IndicatorSHA1, "3395856ce81f2b7382dee72602f798b642f14140"},
		{IndicatorIP, "192.0.2.201"},
		{IndicatorCIDR, "198.18.0.0/15"},
		{IndicatorDomain, "obj.misp.example"},
		{IndicatorIP, "192.0.2.202"},
		{IndicatorSHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	if !slices.Equal(inds, want) {
		t.Errorf("got %+v\nwant %+v", inds, want)
	}
	if skipped != 2 { // to_ids false: the ip-src and the link
		t.Errorf("skipped = %d, want 2", skipped)
	}
}

func TestParseMISPShapes(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []Indicator
	}{
		{"list of events", `[{"Event": {"Attribute": [{"type": "domain", "value": "a.example"}]}}, {"Event": {"Attribute": [{"type": "md5", "value": "D41D8CD98F00B204E9800998ECF8427E"}]}}]`,
			[]Indicator{{IndicatorDomain, "a.example"}, {IndicatorMD5, "d41d8cd98f00b204e9800998ecf8427e"}}},
		{"REST search", `{"response": [{"Event": {"Attribute": [{"type": "hostname|port", "value": "b.example|443", "to_ids": "1"}]}}]}`,
			[]Indicator{{IndicatorDomain, "b.example"}}},
		{"attribute search", `{"response": {"Attribute": [{"type": "ip-src", "value": "192.0.2.1", "deleted": false}, {"type": "ip-src", "value": "192.0.2.2", "deleted": true}]}}`,
			[]Indicator{{IndicatorIP, "192.0.2.1"}}},
		{"bare attributes", `{"Attribute": [{"type": "url", "value": "hxxp://c[.]example/x", "to_ids": "0"}, {"type": "url", "value": "http://d.example/"}]}`,
			[]Indicator{{IndicatorURL, "http://d.example/"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inds, _, err := parseMISP([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inds, tt.want) {
				t.Errorf("got %+v, want %+v", inds, tt.want)
			}
		})
	}
	for _, doc := range []string{`{"type": "bundle", "objects": []}`, `[1]`, `{"response": 5}`} {
		if _, _, err := parseMISP([]byte(doc)); !errors.Is(err, errNotFormat) {
			t.Errorf("%s: %v, want errNotFormat", doc, err)
		}
	}
}

func FuzzParseMISP(f *testing.F) {
	f.Add(readTestdata(f, "misp-event.json"))
	f.Add([]byte(`{"response": [{"Event": {"Object": [{"Attribute": [{"type": "domain|ip", "value": "|"}]}]}}]}`))
	f.Add([]byte(`[{"Event": {"Attribute": [{"type": "filename|sha1", "value": "a|b|c", "to_ids": 7}]}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inds, _, _ := parseMISP(data)
		checkIndicators(t, inds)
	})
}
