package enrich

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
)

// BenchmarkGeoIPLookup measures City+ASN look-ups on one core: "found"
// cycles over addresses the test databases locate (decoding included),
// "random" over random public IPv4 addresses (mostly tree walks that end
// in no record, as with a real database's unrouted space).
func BenchmarkGeoIPLookup(b *testing.B) {
	g, err := newGeoIP(cityDB, asnDB, "")
	if err != nil {
		b.Fatal(err)
	}
	v := g.view()
	found := []netip.Addr{mustAddr("81.2.69.142"), mustAddr("89.160.20.112"), mustAddr("216.160.83.56"),
		mustAddr("2.125.160.216"), mustAddr("175.16.199.1"), mustAddr("67.43.156.1"), mustAddr("1.128.0.1"),
		mustAddr("2001:218::1")}
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]netip.Addr, 4096)
	for i := range random {
		for {
			a := netip.AddrFrom4([4]byte{byte(r.IntN(224)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
			if isPublic(a) {
				random[i] = a
				break
			}
		}
	}
	for _, bc := range []struct {
		name  string
		addrs []netip.Addr
	}{{"found", found}, {"random", random}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			hits := 0
			for i := 0; b.Loop(); i++ {
				geo, asn := v.lookup(bc.addrs[i%len(bc.addrs)])
				if geo != nil || asn != nil {
					hits++
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
			_ = hits
		})
	}
}

// intelBench is the 1M-indicator index, built once for all runs.
var intelBench struct {
	once    sync.Once
	in      *intel
	heapMB  float64
	loadSec float64
	probes  []vigil.NodeRef
	err     error
}

// writeIndicators writes 1,000,000 generated indicators in the two text
// formats: 400k addresses, 100k CIDRs, 300k domains, 100k URLs and 100k
// hashes. It returns probe node values, half of them hits.
func writeIndicators(dir string) ([]vigil.NodeRef, error) {
	r := rand.New(rand.NewPCG(7, 11))
	list, err := os.Create(filepath.Join(dir, "generated.txt"))
	if err != nil {
		return nil, err
	}
	defer list.Close()
	csvf, err := os.Create(filepath.Join(dir, "generated.csv"))
	if err != nil {
		return nil, err
	}
	defer csvf.Close()
	lw, cw := bufio.NewWriter(list), bufio.NewWriter(csvf)
	fmt.Fprintln(cw, "indicator,type,comment")
	var probes []vigil.NodeRef
	randIP := func() netip.Addr {
		return netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	word := func(n int) string {
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	tlds := []string{"com", "net", "org", "info", "xyz", "top", "ru", "de"}
	for i := range 400_000 {
		a := randIP()
		fmt.Fprintln(lw, a)
		if i%100 == 0 {
			probes = append(probes, ip(a.String()), ip(randIP().String()))
		}
	}
	for i := range 100_000 {
		p := netip.PrefixFrom(randIP(), 16+r.IntN(13)).Masked()
		fmt.Fprintf(cw, "%s,cidr,generated\n", p)
		if i%100 == 0 {
			probes = append(probes, ip(p.Addr().Next().String()))
		}
	}
	for i := range 300_000 {
		d := word(6+r.IntN(10)) + "." + tlds[r.IntN(len(tlds))]
		fmt.Fprintln(lw, d)
		if i%100 == 0 {
			probes = append(probes, domain("www.cdn."+d), domain("www."+word(8)+".com"))
		}
	}
	for i := range 100_000 {
		u := "http://" + word(8) + ".example/" + word(12) + ".php"
		fmt.Fprintf(cw, "%s,url,generated\n", u)
		if i%100 == 0 {
			probes = append(probes, urlNode(u), urlNode("http://"+word(8)+".example/x"))
		}
	}
	for i := range 100_000 {
		h := fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
		fmt.Fprintln(lw, h)
		if i%100 == 0 {
			probes = append(probes, hash(h), hash(fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())))
		}
	}
	if err := lw.Flush(); err != nil {
		return nil, err
	}
	r.Shuffle(len(probes), func(i, j int) { probes[i], probes[j] = probes[j], probes[i] })
	return probes, cw.Flush()
}

// BenchmarkIntelMatch1M measures matching against 1,000,000 loaded
// indicators: look-ups/s (a mix of addresses, CIDR containment, domains
// with their parents, URLs and hashes, half hits) on one core, the heap
// the loaded index holds, and the time a full load takes.
func BenchmarkIntelMatch1M(b *testing.B) {
	s := &intelBench
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-intel-bench")
		if err != nil {
			s.err = err
			return
		}
		defer os.RemoveAll(dir)
		if s.probes, s.err = writeIndicators(dir); s.err != nil {
			return
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		s.in = newIntel(dir, nil, newMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
		if _, s.err = s.in.reloadDir(true); s.err != nil {
			return
		}
		s.loadSec = time.Since(start).Seconds()
		runtime.GC()
		runtime.ReadMemStats(&after)
		s.heapMB = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	x := s.in.idx.Load()
	if n := x.size(); n < 990_000 {
		b.Fatalf("index holds %d indicators", n)
	}
	b.ReportAllocs()
	hits := 0
	var dst []IntelMatch
	for i := 0; b.Loop(); i++ {
		dst = matchProbe(x, dst[:0], s.probes[i%len(s.probes)])
		if len(dst) > 0 {
			hits++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	b.ReportMetric(s.heapMB, "heap-MB")
	b.ReportMetric(s.loadSec, "load-s")
	if hits == 0 {
		b.Fatal("no hits")
	}
}

// matchProbe matches a node value as an enrichment pass does, without
// the pass's bookkeeping.
func matchProbe(x *intelIndex, dst []IntelMatch, ref vigil.NodeRef) []IntelMatch {
	switch ref.Type {
	case vigil.NodeIP:
		if a, err := netip.ParseAddr(ref.Value); err == nil {
			return x.matchIP(dst, a)
		}
	case vigil.NodeDomain:
		return x.matchDomain(dst, ref.Value)
	case vigil.NodeURL:
		u, host := parseURL(ref.Value)
		dst = x.matchURL(dst, u)
		if _, d := hostOf(host); d != "" {
			dst = x.matchDomain(dst, d)
		}
		return dst
	case vigil.NodeHash:
		return x.matchHash(dst, ref.Value)
	}
	return dst
}

// benchBatch returns 1000 artifacts with the nodes a firewall or Suricata
// line yields: a public source (mostly distinct), a private destination,
// a domain and a URL from a smaller pool.
func benchBatch(r *rand.Rand) ([]*vigil.Artifact, [][]vigil.NodeRef) {
	known := []string{"81.2.69.142", "89.160.20.112", "216.160.83.56", "2.125.160.216", "175.16.199.7", "1.128.3.4", "192.0.2.77", "198.51.100.23"}
	arts := make([]*vigil.Artifact, 1000)
	lists := make([][]vigil.NodeRef, 1000)
	for i := range arts {
		arts[i] = &vigil.Artifact{ID: fmt.Sprintf("a%d", i)}
		src := known[r.IntN(len(known))]
		if r.IntN(4) > 0 {
			src = netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}).String()
		}
		d := fmt.Sprintf("host%d.site%d.example.com", r.IntN(50), r.IntN(300))
		lists[i] = []vigil.NodeRef{
			ip(src),
			ip(fmt.Sprintf("10.0.%d.%d", r.IntN(4), r.IntN(256))),
			domain(d),
			urlNode("http://" + d + "/index.php?id=" + fmt.Sprint(r.IntN(100))),
		}
	}
	return arts, lists
}

// BenchmarkEnrichBatch1000 measures the inline stage with all local
// providers on (GeoIP City+ASN and the test feeds; DNS and RDAP off) for
// batches of 1000 artifacts, on one core. Reference: storing the same
// batch in SQLite (the store stage it runs beside).
func BenchmarkEnrichBatch1000(b *testing.B) {
	h := newHarness(b, Config{GeoIPCityDB: cityDB, GeoIPASNDB: asnDB, ThreatIntelDir: intelDir})
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	r := rand.New(rand.NewPCG(3, 5))
	batches := make([][]*vigil.Artifact, 8)
	lists := make([][][]vigil.NodeRef, 8)
	for i := range batches {
		batches[i], lists[i] = benchBatch(r)
	}
	ctx := context.Background()
	b.Run("enrich", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			h.e.Enrich(ctx, testOrg, s, batches[i%8], lists[i%8])
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "artifacts/s")
	})
	// With DNS on and nothing cached, each distinct address and domain
	// costs a cache read in the store (the worst case of the inline part;
	// the look-ups themselves are queued by Submit, not run here).
	dnsOn := settings(nil)
	b.Run("enrich-dns-uncached", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			h.e.Enrich(ctx, testOrg, dnsOn, batches[i%8], lists[i%8])
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "artifacts/s")
	})
	b.Run("store-reference", func(b *testing.B) {
		raw := `{"timestamp":"2026-03-01T12:00:00.000000+0000","event_type":"alert","src_ip":"81.2.69.142","src_port":443,"dest_ip":"10.0.0.5","dest_port":51000,"proto":"TCP","alert":{"signature":"ET POLICY test","severity":2}}`
		n := 0
		for b.Loop() {
			arts := make([]*vigil.Artifact, 1000)
			for j := range arts {
				n++
				arts[j] = &vigil.Artifact{ID: fmt.Sprintf("s%09d", n), Source: "suricata", Raw: raw,
					Timestamp: time.Unix(int64(n), 0), CreatedAt: time.Unix(int64(n), 0), Event: []byte(`{"source.ip":"81.2.69.142"}`)}
			}
			if err := h.store.InsertArtifacts(ctx, testOrg, arts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "artifacts/s")
	})
}
