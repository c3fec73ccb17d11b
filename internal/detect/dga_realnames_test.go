package detect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// realDGANames returns the DGA names real tools looked up in the
// real-sensor corpus (testdata/realsensors: dig against BIND and
// dnsmasq, names made by tools/names.py), from the cases' ground truth.
func realDGANames(t *testing.T) []string {
	t.Helper()
	set := map[string]bool{}
	for _, c := range []string{"dns_bind", "dns_dnsmasq"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "realsensors", "cases", c, "truth.json"))
		if err != nil {
			t.Fatal(err)
		}
		var truth struct {
			Lookups []struct{ Name string } `json:"lookup_list"`
		}
		if err := json.Unmarshal(b, &truth); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for _, l := range truth.Lookups {
			if !strings.HasSuffix(l.Name, ".xfer-lab.net") && !strings.HasSuffix(l.Name, ".lab.example") {
				set[l.Name] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) != 30 {
		t.Fatalf("%d DGA names in the real-sensor corpus, want its 30", len(out))
	}
	return out
}

// TestDGARealNames: names people chose in other languages than English do
// not fire; the DGA names real tools looked up still all do. The first
// ones fired before the models of other languages: odnoklassniki.ru (a
// real look-up in a real DNS log, one of Russia's largest sites), a site
// of Privacy Badger's crawl of top sites (alducadaosta.com), and sites
// EasyList (uBlock Origin's filter list) has rules for. The others are
// non-English top sites of Privacy Badger's crawl that never fired.
func TestDGARealNames(t *testing.T) {
	for _, name := range []string{
		"odnoklassniki.ru", "alducadaosta.com", "eksisozluk.com",
		"dziennikbaltycki.pl", "kurierlubelski.pl", "zloteprzeboje.pl", "niestatystyczny.pl",
		"kreiszeitung.de", "kryptografie.de", "seznamzpravy.cz", "slobodnadalmacija.hr", "lavozdegalicia.es",
		"tvzvezda.ru", "vriendenloterij.nl", "whiskyprijzen.nl", "dekrantvantoen.nl", "flygbussarna.se",
		"duhoctrungquoc.vn", "doanhnghiepvn.vn", "xianzhenyuan.cn", "otokukensaku.jp", "giurgiuveanul.ro",
		"sportpiacenza.it", "tekniikanmaailma.fi",
		"aftonbladet.se", "ceskatelevize.cz", "ilfattoquotidiano.it", "vseinstrumenti.ru", "kommersant.ru",
		"marktplaats.nl", "wetteronline.de", "willhaben.at", "iefimerida.gr", "vietnamnet.vn", "pojoksatu.id",
		"iltalehti.fi", "hotpepper.jp", "aliexpress.ru", "banquepopulaire.fr", "elcorteingles.es",
	} {
		t.Run(name, func(t *testing.T) {
			label, _, _ := registrable(name)
			english, other := trigramScores(label)
			if len(DGA{}.Signals(event(dnsQuery("10.0.0.8", name)))) != 0 {
				t.Errorf("%s fires (English %.2f bits, best other language %.2f)", name, english, other)
			}
		})
	}
	for _, name := range realDGANames(t) {
		t.Run(name, func(t *testing.T) {
			if len(DGA{}.Signals(event(dnsQuery("203.0.113.66", name)))) != 1 {
				label, _, _ := registrable(name)
				english, other := trigramScores(label)
				t.Errorf("%s does not fire (English %.2f bits, best other language %.2f)", name, english, other)
			}
		})
	}
}

// Real names of real sites, as Debian's packages ship them (.ci/run
// installs both): Privacy Badger's seed data (the first-party sites of
// its crawl of the top sites, and the third-party domains it saw there)
// and the sites that EasyList's and uBlock Origin's own filter lists have
// site-specific rules for, on country-code domains of non-English
// countries.
const (
	privacyBadgerSeed = "/usr/share/webext/privacy-badger/data/seed.json"
	ublockAssets      = "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net/assets"
)

func privacyBadgerNames(t *testing.T) (sites, thirdParties []string) {
	t.Helper()
	b, err := os.ReadFile(privacyBadgerSeed)
	if err != nil {
		t.Fatalf("%v: install Debian's webext-privacy-badger (.ci/run does)", err)
	}
	var seed struct {
		ActionMap map[string]json.RawMessage `json:"action_map"`
		SnitchMap map[string][]string        `json:"snitch_map"`
	}
	if err := json.Unmarshal(b, &seed); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, ss := range seed.SnitchMap {
		for _, s := range ss {
			set[s] = true
		}
	}
	for s := range set {
		sites = append(sites, s)
	}
	for d := range seed.ActionMap {
		thirdParties = append(thirdParties, d)
	}
	sort.Strings(sites)
	sort.Strings(thirdParties)
	return sites, thirdParties
}

var (
	filterHost     = regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]{2,}$`)
	regionalSuffix = regexp.MustCompile(`\.(ru|ua|by|kz|pl|cz|sk|de|at|ch|fr|it|es|pt|br|tr|jp|cn|kr|vn|id|in|nl|se|no|dk|fi|hu|ro|gr|rs|hr|bg|lt|lv|ee|ir|eg|sa|ae|ma|dz|tn|ar|mx|cl|co|pe)$`)
)

// regionalFilterSites returns the hosts of site-specific rules (before
// "##", "#@#", "#?#" …, and in "domain=" options) of uBlock Origin's
// bundled filter lists, on non-English countries' domains.
func regionalFilterSites(t *testing.T) []string {
	t.Helper()
	set := map[string]bool{}
	for _, f := range []string{"thirdparties/easylist/easylist.txt", "thirdparties/easylist/easyprivacy.txt",
		"ublock/filters.min.txt", "ublock/unbreak.min.txt", "ublock/quick-fixes.min.txt", "ublock/privacy.min.txt"} {
		fh, err := os.Open(filepath.Join(ublockAssets, f))
		if err != nil {
			t.Fatalf("%v: install Debian's webext-ublock-origin-firefox (.ci/run does)", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" || l[0] == '!' {
				continue
			}
			var hosts []string
			if i := strings.Index(l, "#"); i > 0 && !strings.ContainsAny(l[:i], "$/|^*") && len(l) > i+1 && strings.ContainsRune("@?$%#", rune(l[i+1])) {
				hosts = strings.Split(l[:i], ",")
			}
			if _, opts, ok := strings.Cut(l, "$"); ok {
				if _, d, ok := strings.Cut(opts, "domain="); ok {
					d, _, _ = strings.Cut(d, ",")
					hosts = append(hosts, strings.Split(d, "|")...)
				}
			}
			for _, h := range hosts {
				h = strings.TrimPrefix(strings.TrimSpace(h), "~")
				if filterHost.MatchString(h) && regionalSuffix.MatchString(h) {
					set[h] = true
				}
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// TestDGATopSites measures the detector on real names (docs/detections.md,
// DGA, has the figures): the share of each list that fires is logged with
// the names, and bounded as measured.
func TestDGATopSites(t *testing.T) {
	sites, thirdParties := privacyBadgerNames(t)
	regional := regionalFilterSites(t)
	for _, c := range []struct {
		what  string
		names []string
		max   float64 // the share that may fire
	}{
		{"Privacy Badger's top sites", sites, 0.002},
		{"Privacy Badger's third-party domains", thirdParties, 0.005},
		{"EasyList's non-English sites", regional, 0.01},
	} {
		n, fired := 0, []string{}
		for _, name := range c.names {
			label, domain, ok := registrable(name)
			if !ok || wellKnownDomains[domain] {
				continue
			}
			n++
			if dgaLike(label) {
				fired = append(fired, name)
			}
		}
		rate := float64(len(fired)) / float64(n)
		t.Logf("%s: %d of %d fire (%.2f %%): %v", c.what, len(fired), n, 100*rate, fired)
		if n < 1000 {
			t.Errorf("%s: %d names, the list is not what it should be", c.what, n)
		}
		if rate > c.max {
			t.Errorf("%s: %.2f %% fire, want at most %.1f %%", c.what, 100*rate, 100*c.max)
		}
	}
}
