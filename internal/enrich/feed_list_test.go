package enrich

import (
	"slices"
	"testing"
)

func TestParseList(t *testing.T) {
	inds, skipped := parseList(readTestdata(t, "blocklist.txt"))
	want := []Indicator{
		{IndicatorIP, "198.51.100.23"},
		{IndicatorCIDR, "203.0.113.0/24"},
		{IndicatorDomain, "evil.example"},
		{IndicatorDomain, "tracker.example"},
		{IndicatorDomain, "ads.tracker.example"},
		{IndicatorURL, "http://phish.example/login"},
		{IndicatorMD5, "44d88612fea8a8f36de82e1278abb02f"},
		{IndicatorCIDR, "2001:db8:dead::/48"},
	}
	if !slices.Equal(inds, want) {
		t.Errorf("got %+v\nwant %+v", inds, want)
	}
	if skipped != 1 {
		t.Errorf("skipped = %d, want 1", skipped)
	}
	inds, _ = parseList([]byte("\ufeff# bom\r\n1.2.3.4\r\n! adblock comment\r\n// c comment\r\n5.6.7.8,extra,columns"))
	if !slices.Equal(inds, []Indicator{{IndicatorIP, "1.2.3.4"}, {IndicatorIP, "5.6.7.8"}}) {
		t.Errorf("CRLF list = %+v", inds)
	}
}

func FuzzParseList(f *testing.F) {
	f.Add(readTestdata(f, "blocklist.txt"))
	f.Add([]byte("0.0.0.0 a.example\n::1\tb.example # x\n1.2.3.4/33\nhxxp://x[.]example\n"))
	f.Add([]byte("\xff\xfe\x00bad\n*.\n.\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inds, skipped := parseList(data)
		if skipped < 0 {
			t.Fatal("negative skipped")
		}
		checkIndicators(t, inds)
	})
}
