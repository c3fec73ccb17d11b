package enrich

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/vigil-soc/vigil"
)

// Geo is the location of a public address (ECS geo.* names).
type Geo struct {
	CountryISOCode string    `json:"country_iso_code,omitempty"`
	CityName       string    `json:"city_name,omitempty"`
	Location       *Location `json:"location,omitempty"`
}

// Location is a point in degrees.
type Location struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// ASN is the autonomous system announcing an address (ECS as.*).
type ASN struct {
	Number       uint   `json:"number"`
	Organization string `json:"organization,omitempty"`
}

// cityRecord decodes only the fields used from a City or Country
// database; nested structs instead of maps keep a look-up free of map
// allocations.
type cityRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	City struct {
		Names struct {
			En string `maxminddb:"en"`
		} `maxminddb:"names"`
	} `maxminddb:"city"`
	Location struct {
		Latitude  *float64 `maxminddb:"latitude"`
		Longitude *float64 `maxminddb:"longitude"`
	} `maxminddb:"location"`
}

type asnRecord struct {
	Number       uint   `maxminddb:"autonomous_system_number"`
	Organization string `maxminddb:"autonomous_system_organization"`
}

// mmdb is one loaded database file. The file is read into memory rather
// than memory-mapped: a replaced database is then swapped in with one
// pointer store, and look-ups still running on the old one finish safely
// on its bytes (an unmapped file would fault under them).
type mmdb struct {
	r       *maxminddb.Reader
	path    string
	modTime time.Time
	size    int64
}

// geoSlot holds the current database of one kind and knows its file.
type geoSlot struct {
	name string // metric label: geoip_city, geoip_asn
	path string
	db   atomic.Pointer[mmdb]
}

// geoip looks up locations and AS numbers in MaxMind DB files and swaps in
// a file replaced on disk (see reload).
type geoip struct {
	city, asn geoSlot
	mu        sync.Mutex // serializes reloads
}

// newGeoIP opens the configured databases. An empty path is looked up in
// dataDir/geoip/*.mmdb by database type; none found leaves that kind off.
func newGeoIP(cityPath, asnPath, dataDir string) (*geoip, error) {
	if (cityPath == "" || asnPath == "") && dataDir != "" {
		c, a := findGeoIP(filepath.Join(dataDir, "geoip"))
		if cityPath == "" {
			cityPath = c
		}
		if asnPath == "" {
			asnPath = a
		}
	}
	g := &geoip{
		city: geoSlot{name: "geoip_city", path: cityPath},
		asn:  geoSlot{name: "geoip_asn", path: asnPath},
	}
	for _, s := range []*geoSlot{&g.city, &g.asn} {
		if s.path == "" {
			continue
		}
		db, err := openMMDB(s.path)
		if err != nil {
			return nil, err
		}
		s.db.Store(db)
	}
	return g, nil
}

// findGeoIP picks the City (or else Country) and the ASN database among
// the .mmdb files of dir by their metadata database type.
func findGeoIP(dir string) (city, asn string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.mmdb"))
	country := ""
	for _, p := range paths {
		r, err := maxminddb.Open(p)
		if err != nil {
			continue
		}
		t := r.Metadata.DatabaseType
		_ = r.Close()
		switch {
		case strings.Contains(t, "ASN") || strings.Contains(t, "ISP"):
			if asn == "" {
				asn = p
			}
		case strings.Contains(t, "City"):
			if city == "" {
				city = p
			}
		case strings.Contains(t, "Country"):
			if country == "" {
				country = p
			}
		}
	}
	if city == "" {
		city = country
	}
	return city, asn
}

func openMMDB(path string) (*mmdb, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("geoip: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("geoip: %w", err)
	}
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, fmt.Errorf("geoip: %s: %w", path, err)
	}
	return &mmdb{r: r, path: path, modTime: fi.ModTime(), size: int64(len(b))}, nil
}

// reload re-opens each database whose file changed (modification time or
// size) since it was loaded. A file that fails to open — for instance one
// being copied in place — keeps the old database, and is tried again on
// the next call. It reports the slots reloaded and the errors met.
func (g *geoip) reload() (reloaded []string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, s := range []*geoSlot{&g.city, &g.asn} {
		if s.path == "" {
			continue
		}
		fi, err := os.Stat(s.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("geoip: %w", err))
			continue
		}
		if cur := s.db.Load(); cur != nil && cur.modTime.Equal(fi.ModTime()) && cur.size == fi.Size() {
			continue
		}
		db, err := openMMDB(s.path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.db.Store(db)
		reloaded = append(reloaded, s.name)
	}
	return reloaded, errors.Join(errs...)
}

// ProviderGeoIP names the GeoIP provider (metric label).
const ProviderGeoIP = "geoip"

var _ provider = (*geoip)(nil)

func (g *geoip) name() string { return ProviderGeoIP }

func (g *geoip) enabled(s *vigil.EnrichmentSettings) bool { return s.GeoIPEnabled }

// begin locates the public addresses of a pass (IP nodes and URL hosts)
// in the databases loaded when it began.
func (g *geoip) begin() step {
	v := g.view()
	if v.empty() {
		return nil
	}
	return func(_ *pass, out *nodeOutcome, t *target) int {
		if !t.public {
			return 0
		}
		out.info.Geo, out.info.ASN = v.lookup(t.addr)
		return 1
	}
}

// geoView is the pair of databases one enrichment pass uses, loaded once
// so that a pass sees one consistent version.
type geoView struct {
	city, asn *maxminddb.Reader
}

func (g *geoip) view() geoView {
	var v geoView
	if db := g.city.db.Load(); db != nil {
		v.city = db.r
	}
	if db := g.asn.db.Load(); db != nil {
		v.asn = db.r
	}
	return v
}

func (v geoView) empty() bool { return v.city == nil && v.asn == nil }

// lookup returns what the databases know of a (public) address. Decoding
// errors (a corrupt record) count as not found.
func (v geoView) lookup(a netip.Addr) (*Geo, *ASN) {
	var geo *Geo
	var asn *ASN
	if v.city != nil {
		var rec cityRecord
		if res := v.city.Lookup(a); res.Found() && res.Decode(&rec) == nil {
			g := Geo{CountryISOCode: rec.Country.ISOCode, CityName: rec.City.Names.En}
			if g.CountryISOCode == "" {
				g.CountryISOCode = rec.RegisteredCountry.ISOCode
			}
			if rec.Location.Latitude != nil && rec.Location.Longitude != nil {
				g.Location = &Location{Lat: *rec.Location.Latitude, Lon: *rec.Location.Longitude}
			}
			if g != (Geo{}) {
				geo = &g
			}
		}
	}
	if v.asn != nil {
		var rec asnRecord
		if res := v.asn.Lookup(a); res.Found() && res.Decode(&rec) == nil && rec.Number != 0 {
			asn = &ASN{Number: rec.Number, Organization: rec.Organization}
		}
	}
	return geo, asn
}
