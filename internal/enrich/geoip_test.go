package enrich

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	// Write beside and rename: how geoipupdate replaces a database.
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		tb.Fatal(err)
	}
}

func TestGeoIPLookups(t *testing.T) {
	g, err := newGeoIP(cityDB, asnDB, "")
	if err != nil {
		t.Fatal(err)
	}
	v := g.view()
	tests := []struct {
		addr string
		geo  *Geo
		asn  *ASN
	}{
		{"81.2.69.142", &Geo{CountryISOCode: "GB", CityName: "London", Location: &Location{Lat: 51.5142, Lon: -0.0931}}, nil},
		{"89.160.20.112", &Geo{CountryISOCode: "SE", CityName: "Linköping", Location: &Location{Lat: 58.4167, Lon: 15.6167}}, &ASN{Number: 29518, Organization: "Bredband2 AB"}},
		{"1.128.0.0", nil, &ASN{Number: 1221, Organization: "Telstra Pty Ltd"}},
		{"216.160.83.56", &Geo{CountryISOCode: "US", CityName: "Milton", Location: &Location{Lat: 47.2513, Lon: -122.3149}}, &ASN{Number: 209}},
		{"67.43.156.1", &Geo{CountryISOCode: "BT", Location: &Location{Lat: 27.5, Lon: 90.5}}, &ASN{Number: 35908}},
		{"8.8.4.4", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			geo, asn := v.lookup(mustAddr(tt.addr))
			if !jsonEqual(geo, tt.geo) || !jsonEqual(asn, tt.asn) {
				t.Errorf("got %s %s, want %s %s", mustJSON(geo), mustJSON(asn), mustJSON(tt.geo), mustJSON(tt.asn))
			}
		})
	}
}

func TestGeoIPFoundInDataDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "geoip"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, asnDB, filepath.Join(dir, "geoip", "a.mmdb"))
	copyFile(t, countryDB, filepath.Join(dir, "geoip", "b.mmdb"))
	copyFile(t, cityDB, filepath.Join(dir, "geoip", "c.mmdb"))
	g, err := newGeoIP("", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.city.db.Load(); got == nil || got.r.Metadata.DatabaseType != "GeoLite2-City" {
		t.Errorf("city slot = %+v, want the City database over the Country one", got)
	}
	if got := g.asn.db.Load(); got == nil || got.r.Metadata.DatabaseType != "GeoLite2-ASN" {
		t.Errorf("asn slot = %+v", got)
	}
}

func TestGeoIPReplacedOnDiskIsReloaded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "GeoLite2-City.mmdb")
	copyFile(t, cityDB, path)
	h := newHarness(t, Config{GeoIPCityDB: path, PollInterval: 10 * time.Millisecond})
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	enrich := func() *Geo {
		res := h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a"}}, [][]vigil.NodeRef{{ip("81.2.69.142")}})
		return decodeEnrichment(t, res[0].Enrichment)["81.2.69.142"].Geo
	}
	if g := enrich(); g == nil || g.CityName != "London" {
		t.Fatalf("before: %+v", g)
	}

	// Explicit reload (SIGHUP): the Country database has no cities.
	copyFile(t, countryDB, path)
	if err := h.e.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := enrich(); g == nil || g.CityName != "" || g.CountryISOCode != "GB" {
		t.Errorf("after reload: %+v, want country only", g)
	}

	// A broken file (a copy in progress) keeps the database in use.
	if err := os.WriteFile(path, []byte("truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Reload(context.Background()); err == nil {
		t.Errorf("reload of a broken file: no error")
	}
	if g := enrich(); g == nil || g.CountryISOCode != "GB" {
		t.Errorf("after a failed reload: %+v", g)
	}

	// Polling picks up the next good file without being asked.
	h.start()
	reloads := counter(t, h.e.m.reloads, "geoip_city")
	copyFile(t, cityDB, path)
	waitFor(t, "poll reload", func() bool { return counter(t, h.e.m.reloads, "geoip_city") > reloads })
	if g := enrich(); g == nil || g.CityName != "London" {
		t.Errorf("after polling: %+v", g)
	}
}

func TestIsPublic(t *testing.T) {
	tests := map[string]bool{
		"81.2.69.142": true, "8.8.8.8": true, "1.1.1.1": true, "2a00:1450:4001:82b::200e": true,
		"::ffff:81.2.69.142": true,
		"10.0.0.1":           false, "172.31.255.255": false, "192.168.0.1": false, "100.64.0.1": false,
		"100.127.255.255": false, "127.0.0.1": false, "169.254.169.254": false, "192.0.0.8": false,
		"192.0.2.1": false, "198.51.100.1": false, "203.0.113.1": false, "198.18.0.1": false,
		"224.0.0.1": false, "239.255.255.250": false, "240.0.0.1": false, "255.255.255.255": false,
		"0.0.0.0": false, "::": false, "::1": false, "fe80::1": false, "fc00::1": false, "fd12::1": false,
		"ff02::1": false, "2001:db8::1": false, "2001::1": false, "3fff::1": false, "64:ff9b::808:808": false,
		"100.63.255.255": true, "100.128.0.0": true, "172.32.0.0": true,
	}
	for a, want := range tests {
		if got := isPublic(mustAddr(a)); got != want {
			t.Errorf("isPublic(%s) = %v, want %v", a, got, want)
		}
	}
}

func TestNormDomain(t *testing.T) {
	tests := map[string]string{
		"WWW.Example.COM.": "www.example.com", "a.b": "a.b", "_dmarc.example.com": "_dmarc.example.com",
		"localhost": "", "": "", "a..b": "", "1.2.3.4": "", "bad host.example": "", ".example.com": "",
		"exa$mple.com": "", "xn--bcher-kva.example": "xn--bcher-kva.example",
	}
	for in, want := range tests {
		if got := normDomain(in); got != want {
			t.Errorf("normDomain(%q) = %q, want %q", in, got, want)
		}
	}
}
