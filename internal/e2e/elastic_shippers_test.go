package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// TestElasticRealShippers: two shippers nobody on the project wrote ship
// the auth and firewall datasets (10,994 lines) into the Elasticsearch
// bulk endpoint with an ingest API key, at once, into a vigil serve whose
// queue is kept full (--max-pending 1), each through a proxy that loses
// the reply to some of the requests Vigil took, and every line arrives
// exactly once (the search total, and each line as often as the files
// hold it). Each runs the configuration docs/ingest.md shows, read from
// there (only the addresses, the key and the paths replaced):
//
//   - Debian's rsyslog 8.2302 with omelasticsearch (imfile), whose bulk
//     URL carries ?timeout=1m: refused requests wait in Vigil for room,
//     since this rsyslog reads no HTTP status and drops what a 429
//     refuses;
//   - Debian's syslog-ng 3.38 with elasticsearch-http() (a file source
//     with flow control), which is answered 429 and retries with its own
//     retries() and time-reopen().
//
// Both send a batch whose reply was lost again, as they must; the _id
// each document carries (the file's name and the line's offset for
// rsyslog, syslog-ng's $UNIQID) is what keeps the second copy out.
//
// The programs must be installed (.ci/run installs rsyslog-elasticsearch,
// and unpacks syslog-ng beside rsyslog, with which Debian's package
// conflicts): the test fails without them.
func TestElasticRealShippers(t *testing.T) {
	rsyslogd := requireTool(t, "rsyslogd", "/usr/sbin/rsyslogd")
	if m, _ := filepath.Glob("/usr/lib/*/rsyslog/omelasticsearch.so"); len(m) == 0 {
		t.Fatal("rsyslog's omelasticsearch (Debian package rsyslog-elasticsearch) is missing; .ci/run installs it")
	}
	sng := findSyslogNG(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startVigil(t, "vigil", data, "--max-pending", "1", "--workers", "1")
	authFile, authLines := datasetFile(t, dir, "auth")
	fwFile, fwLines := datasetFile(t, dir, "firewall")
	lines := append(append([]string(nil), authLines...), fwLines...)
	both := filepath.Join(dir, "both.log")
	var all bytes.Buffer
	for _, f := range []string{authFile, fwFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	writeFile(t, both, all.String())
	const docURL = "http://vigil.example:8080/v1/ingest/elastic/"

	// rsyslog, into org acme: the snippet is a file of /etc/rsyslog.d,
	// whose main configuration would name the work directory.
	rsProxy := startLossyProxy(t, p.base, 7, 3)
	rsKey := createAPIKey(t, ctx, p, mintToken(t, data, "acme", "admin"), "rsyslog")
	rsConf := filepath.Join(dir, "rsyslog.conf")
	writeFile(t, rsConf, fmt.Sprintf("global(workDirectory=%q)\n", dir)+docSnippet(t, "rsyslog (omelasticsearch)",
		docURL, rsProxy.base+"/v1/ingest/elastic/", "vgk_…", rsKey, "/var/log/auth.log", both,
		"/var/log/rsyslog-vigil-errors.json", filepath.Join(dir, "es-errors.json")))
	rs := exec.Command(rsyslogd, "-n", "-f", rsConf, "-i", filepath.Join(dir, "rsyslogd.pid"))
	var rsOut bytes.Buffer
	rs.Stdout, rs.Stderr = &rsOut, &rsOut

	// syslog-ng, into org globex: the snippet is a whole configuration;
	// include-path points scl.conf at the unpacked package.
	ngProxy := startLossyProxy(t, p.base, 7, 3)
	sngKey := createAPIKey(t, ctx, p, mintToken(t, data, "globex", "admin"), "syslog-ng")
	sngConf := filepath.Join(dir, "syslog-ng.conf")
	writeFile(t, sngConf, docSnippet(t, "syslog-ng (elasticsearch-http)",
		"@version: 3.38", "@version: "+sng.version,
		`@include "scl.conf"`, fmt.Sprintf("@define include-path %q\n@include \"scl.conf\"", sng.includePath()),
		docURL, ngProxy.base+"/v1/ingest/elastic/", "vgk_…", sngKey, "/var/log/auth.log", both))
	ng := sng.command(sngConf, dir)
	var ngOut bytes.Buffer
	ng.Stdout, ng.Stderr = &ngOut, &ngOut

	for name, cmd := range map[string]*exec.Cmd{"rsyslogd": rs, "syslog-ng": ng} {
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		out := cmd.Stdout.(*bytes.Buffer)
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("%s output:\n%s", name, out.String())
			}
		})
	}

	acme := newClient(p, mintToken(t, data, "acme", "signals:read"))
	globex := newClient(p, mintToken(t, data, "globex", "signals:read"))
	t.Logf("waiting for %d lines in acme (rsyslog) and in globex (syslog-ng)", len(lines))
	awaitTotal(t, ctx, acme, len(lines), "rsyslog's lines in acme")
	awaitTotal(t, ctx, globex, len(lines), "syslog-ng's lines in globex")
	// Every batch whose reply was lost sent again and taken, and the
	// queue drained: a second copy would be stored by now.
	awaitResent(t, ctx, p, rsProxy, "rsyslog")
	awaitResent(t, ctx, p, ngProxy, "syslog-ng")
	pollUntil(t, time.Minute, "empty queue", func() (float64, bool) {
		d, err := metric(ctx, p, "vigil_queue_depth")
		return d, err == nil && d == 0
	})
	awaitTotal(t, ctx, acme, len(lines), "no more in acme")
	awaitTotal(t, ctx, globex, len(lines), "no more in globex")

	sent := map[string]int{}
	for _, l := range lines {
		sent[l]++
	}
	for _, o := range []struct {
		name string
		c    *client.Client
	}{{"rsyslog", acme}, {"syslog-ng", globex}} {
		byRaw, sources := map[string]int{}, map[string]int{}
		for _, a := range allArtifacts(t, ctx, o.c) {
			byRaw[a.Raw]++
			sources[a.Source]++
		}
		for l, n := range sent {
			if byRaw[l] != n {
				t.Fatalf("%s: a dataset line stored %d times, sent %d: %q", o.name, byRaw[l], n, l)
			}
		}
		t.Logf("%s: sources %v", o.name, sources)
		if sources["auth"] < len(authLines)*85/100 || sources["firewall"] < len(fwLines)*95/100 {
			t.Errorf("%s: sources %v: want most of the %d auth and %d firewall lines recognised", o.name, sources, len(authLines), len(fwLines))
		}
	}

	throttled, err := metric(ctx, p, "vigil_ingest_throttled_total")
	if err != nil {
		t.Fatal(err)
	}
	retried := strings.Count(ngOut.String(), "status_code='429'")
	t.Logf("the queue refused %v batches; syslog-ng was answered 429 %d times", throttled, retried)
	if retried == 0 {
		t.Error("syslog-ng was never answered 429: the test did not exercise its retries")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "es-errors.json")); err == nil && len(b) > 0 {
		t.Errorf("rsyslog wrote failed items to its errorFile: %.500s", b)
	}
}

// awaitResent waits until the shipper behind lp has sent again every
// batch whose reply the proxy lost, and Vigil took it; it fails the test
// if no reply was lost (the shipper sent too few requests to exercise a
// resend).
func awaitResent(t *testing.T, ctx context.Context, p *proc, lp *lossyProxy, name string) {
	t.Helper()
	for {
		lost, resent := lp.resent()
		if lost == 0 {
			t.Fatalf("%s: no reply lost (%v): the test did not exercise a resend", name, lp)
		}
		if resent == lost {
			t.Logf("%s: %v; every lost batch sent again", name, lp)
			return
		}
		select {
		case <-lp.resentCh:
		case <-p.exited:
			t.Fatalf("%s exited: %v", p.name, p.err)
		case <-ctx.Done():
			t.Fatalf("%s: not every batch whose reply was lost was sent again: %v", name, lp)
		}
	}
}

// docSnippet returns the first code block under the heading "### "+heading
// of docs/ingest.md, with each pair of strings in repl replaced: each
// must occur exactly once, so that the test fails when the documentation
// changes under it.
func docSnippet(t *testing.T, heading string, repl ...string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/ingest.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n### "+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/ingest.md has no section %q", heading)
	}
	text = text[i:]
	start := strings.Index(text, "\n```\n")
	if start < 0 {
		t.Fatalf("docs/ingest.md: no code block under %q", heading)
	}
	text = text[start+5:]
	end := strings.Index(text, "\n```\n")
	if end < 0 {
		t.Fatalf("docs/ingest.md: the code block under %q does not end", heading)
	}
	text = text[:end+1]
	for i := 0; i+1 < len(repl); i += 2 {
		if n := strings.Count(text, repl[i]); n != 1 {
			t.Fatalf("docs/ingest.md, %q: %q occurs %d times in the snippet, want once", heading, repl[i], n)
		}
		text = strings.Replace(text, repl[i], repl[i+1], 1)
	}
	return text
}

// syslogNG is a syslog-ng installation: Debian's package, or its files
// unpacked under a root of their own (.ci/run does that, as Debian's
// syslog-ng conflicts with the rsyslog the other tests run).
type syslogNG struct {
	root, bin, modules, scl, version string
}

// findSyslogNG finds syslog-ng with its http module under
// $VIGIL_SYSLOG_NG_ROOT, /opt/vigil-ci/syslog-ng or /, failing when none
// has it.
func findSyslogNG(t *testing.T) *syslogNG {
	t.Helper()
	roots := []string{"/opt/vigil-ci/syslog-ng", "/"}
	if r := os.Getenv("VIGIL_SYSLOG_NG_ROOT"); r != "" {
		roots = []string{r}
	}
	for _, root := range roots {
		s := &syslogNG{root: root, bin: filepath.Join(root, "usr/sbin/syslog-ng"),
			scl: filepath.Join(root, "usr/share/syslog-ng/include/scl")}
		mods, _ := filepath.Glob(filepath.Join(root, "usr/lib/syslog-ng/3.*/libhttp.so"))
		if len(mods) == 0 {
			continue
		}
		s.modules = filepath.Dir(mods[0])
		s.version = filepath.Base(s.modules)
		if _, err := os.Stat(s.bin); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.scl, "elasticsearch", "elastic-http.conf")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "etc/syslog-ng/scl.conf")); err != nil {
			continue
		}
		return s
	}
	t.Fatalf("syslog-ng with its http module and SCL is not found under %v (Debian: syslog-ng-core, syslog-ng-mod-http, syslog-ng-scl); .ci/run unpacks them into /opt/vigil-ci/syslog-ng", roots)
	return nil
}

// includePath is where its configuration's @include looks: scl.conf in
// etc/syslog-ng, the SCL under usr/share/syslog-ng/include (syslog-ng's
// own default, under the root).
func (s *syslogNG) includePath() string {
	return filepath.Join(s.root, "etc/syslog-ng") + ":" + filepath.Join(s.root, "usr/share/syslog-ng/include")
}

// command runs syslog-ng in the foreground on conf, its state in dir.
func (s *syslogNG) command(conf, dir string) *exec.Cmd {
	cmd := exec.Command(s.bin, "-F", "-e", "--module-path="+s.modules, "-f", conf,
		"-R", filepath.Join(dir, "syslog-ng.persist"), "-c", filepath.Join(dir, "syslog-ng.ctl"),
		"-p", filepath.Join(dir, "syslog-ng.pid"))
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(s.root, "usr/lib/syslog-ng"))
	return cmd
}

// createAPIKey creates an ingest API key with an admin token and returns
// its secret.
func createAPIKey(t *testing.T, ctx context.Context, p *proc, admin, name string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/v1/api-keys", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct{ Key string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.Data.Key == "" {
		t.Fatalf("POST /v1/api-keys: %d %v", resp.StatusCode, err)
	}
	return out.Data.Key
}
