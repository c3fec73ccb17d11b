package enrich

import (
	"slices"
	"testing"
)

func TestParseCSV(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    []Indicator
		skipped int
	}{
		{"typed columns", string(readTestdata(t, "c2.csv")), []Indicator{
			{IndicatorIP, "192.0.2.77"}, {IndicatorCIDR, "10.66.0.0/16"}, {IndicatorDomain, "malware.example"},
			{IndicatorURL, "http://dl.example/payload.exe"},
			{IndicatorSHA256, "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f"},
		}, 1},
		{"header in a comment", string(readTestdata(t, "urlhaus-style.csv")), []Indicator{
			{IndicatorURL, "http://198.51.100.99/bins/x86"}, {IndicatorURL, "https://drop.example/a/b.zip"},
		}, 0},
		{"feodo-style ip:port columns", "# first_seen_utc,dst_ip,dst_port,c2_status\n\"2024-01-01\",\"192.0.2.9\",\"443\",\"online\"\n", []Indicator{
			{IndicatorIP, "192.0.2.9"}}, 0},
		{"several hash columns", "sha256_hash,md5_hash,file_name\n" +
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855,d41d8cd98f00b204e9800998ecf8427e,empty\n", []Indicator{
			{IndicatorSHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
			{IndicatorMD5, "d41d8cd98f00b204e9800998ecf8427e"}}, 0},
		{"generic value with ip:port", "Value,Type,Source\n192.0.2.1:8080,IPv4,x\nevil.example,hostname,y\n", []Indicator{
			{IndicatorIP, "192.0.2.1"}, {IndicatorDomain, "evil.example"}}, 0},
		{"no known header", "first,second\n192.0.2.3,x\nevil.example,y\n", []Indicator{
			{IndicatorIP, "192.0.2.3"}, {IndicatorDomain, "evil.example"}}, 0},
		{"headerless", "192.0.2.4,note\nevil.example\n", []Indicator{
			{IndicatorIP, "192.0.2.4"}, {IndicatorDomain, "evil.example"}}, 0},
		{"tsv", "indicator\ttype\n192.0.2.5\tip\n", []Indicator{{IndicatorIP, "192.0.2.5"}}, 0},
		{"mislabelled column", "domain\n192.0.2.6\n", []Indicator{{IndicatorIP, "192.0.2.6"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inds, skipped, err := parseCSV([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inds, tt.want) || skipped != tt.skipped {
				t.Errorf("got %+v (skipped %d)\nwant %+v (skipped %d)", inds, skipped, tt.want, tt.skipped)
			}
		})
	}
}

func FuzzParseCSV(f *testing.F) {
	f.Add(readTestdata(f, "c2.csv"))
	f.Add(readTestdata(f, "urlhaus-style.csv"))
	f.Add([]byte("ioc,type\n\"a\"b\",ip\n,,,\n\"unterminated\n"))
	f.Add([]byte("#\n#\n# ip\n1.2.3.4|80\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inds, _, _ := parseCSV(data)
		checkIndicators(t, inds)
	})
}
