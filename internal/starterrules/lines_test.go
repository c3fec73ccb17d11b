package starterrules

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
)

// lineFiles are the real logs each starter rule runs over, with the
// Vigil source each is ingested as: every file of ../shared/datasets
// (Zeek's dns.log as zeek) and the lines real programs wrote here
// (testdata/generate.sh).
func lineFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{
		"generated/auth.log":    "auth",
		"generated/syslog.log":  "syslog",
		"generated/dnsmasq.log": "dnsmasq",
	}
	root := filepath.Join("..", "..", "..", "shared", "datasets")
	for _, dir := range []string{"auth", "dns", "firewall", "suricata"} {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("the datasets (../shared/datasets) are needed: %v", err)
		}
		for _, e := range ents {
			src := dir
			if strings.Contains(e.Name(), "zeek") {
				src = "zeek"
			}
			files["datasets/"+dir+"/"+e.Name()] = src
		}
	}
	return files
}

func openLineFile(name string) (*os.File, error) {
	if rest, ok := strings.CutPrefix(name, "datasets/"); ok {
		return os.Open(filepath.Join("..", "..", "..", "shared", "datasets", rest))
	}
	return os.Open(filepath.Join("testdata", name))
}

// TestStarterRulesOnRealLines runs every starter detection rule over
// every line of lineFiles and checks that it matches exactly the lines
// testdata/ground-truth.tsv lists for it: those it should match, and no
// other (every other line is one it should not). The rules that no real
// line matches are listed in untested, each with why; docs/sigma.md
// says so too.
func TestStarterRulesOnRealLines(t *testing.T) {
	want := readGroundTruth(t)
	type rc struct {
		file string
		c    *sigma.Compiled
	}
	var rules []rc
	set := sigma.NewFieldSet()
	for _, r := range All() {
		p, err := sigma.Parse([]byte(r.Rule))
		if err != nil {
			t.Fatal(err)
		}
		if p.Correlation != nil || r.Origin != "SigmaHQ" {
			continue // Vigil's are TestSigmaBruteForceCorrelation's (internal/api)
		}
		if strings.HasPrefix(r.Path, "rules/windows/") {
			continue // read Windows events: TestWindowsStarterSet's
		}
		c, err := sigma.CompileIn(p, set)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, rc{path.Base(r.Path), c})
	}
	got := map[string][]string{}
	ref := time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	prep := sigma.NewPrepared(set)
	for name, src := range lineFiles(t) {
		f, err := openLineFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if line == "" {
				continue
			}
			ev := &sigma.Event{Source: src, Fields: parse.Parse(src, []byte(line), ref).Event, Raw: line}
			prep.Reset(*ev)
			for _, r := range rules {
				if matchBoth(t, r.c, ev, prep) {
					got[r.file] = append(got[r.file], name+":"+strconv.Itoa(n))
				}
			}
		}
		f.Close()
	}
	for _, r := range rules {
		g, w := got[r.file], want[r.file]
		sort.Strings(g)
		sort.Strings(w)
		if strings.Join(g, " ") != strings.Join(w, " ") {
			t.Errorf("%s matches %v, want %v", r.file, g, w)
		}
		if reason, ok := untested[r.file]; ok == (len(w) > 0) {
			t.Errorf("%s: %d real lines it should match, untested says %q", r.file, len(w), reason)
		}
	}
}

// readGroundTruth reads testdata/ground-truth.tsv: rule file, log file,
// line number, why (comments start with #).
func readGroundTruth(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ground-truth.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			t.Fatalf("ground truth line %q: want rule, file, line, why", l)
		}
		out[f[0]] = append(out[f[0]], f[1]+":"+f[2])
	}
	return out
}

// untested are the starter rules that no real line matches here, and
// why (docs/sigma.md, Starter set): each is still run over every line
// above, which it must not match.
var untested = map[string]string{
	"lnx_clamav_relevant_message.yml":                            "needs clamd reporting a trojan, virtool, webshell, rootkit or Htran; no such file or signature database here",
	"lnx_guacamole_susp_guacamole.yml":                           "needs a Guacamole server with two users in one session",
	"lnx_susp_jexboss.yml":                                       "sudo logs the command with its argument quoted (bash -c '/bin/bash …'), which the rule's 'bash -c /bin/bash' does not match; no other program here logs a shell's command line",
	"lnx_buffer_overflows.yml":                                   "glibc writes 'stack smashing detected' to the terminal, not to syslog; no kernel log in this container",
	"lnx_potential_susp_ebpf_activity.yml":                       "needs the kernel's bpf_probe_write_user warning; no kernel log in this container",
	"lnx_shell_susp_log_entries.yml":                             "needs kernel (promiscuous mode) or OSSEC lines; no kernel log in this container",
	"lnx_sshd_susp_ssh.yml":                                      "needs sshd to see a corrupt or hostile key exchange",
	"lnx_syslog_security_tools_disabling_syslog.yml":             "needs an init system stopping iptables/firewalld/EDR services",
	"lnx_syslog_susp_named.yml":                                  "BIND 9.18 logs a refused transfer as \"zone transfer '…/AXFR/IN' denied\", not the older \"denied AXFR from\"",
	"lnx_vsftpd_susp_error_messages.yml":                         "needs vsftpd failing (sandbox, ptrace, overlong input)",
	"net_dns_susp_txt_exec_strings.yml":                          "needs a TXT answer in the log; dnsmasq logs no TXT data",
	"zeek_dns_kerberos_coercion_via_dns_object_spn_spoofing.yml": "Zeek is not packaged for Debian 12; no Zeek line with such a query",
	"zeek_dns_mining_pools.yml":                                  "Zeek is not packaged for Debian 12; no Zeek line with such a query",
	"zeek_dns_nkn.yml":                                           "Zeek is not packaged for Debian 12; no Zeek line with such a query",
	"zeek_dns_torproxy.yml":                                      "Zeek is not packaged for Debian 12; no Zeek line with such a query",
}

// matchBoth is c.Match(ev), failing t unless the pipeline's way gives the
// same: the rule's fields read through prep (bound to ev), shared with
// the rules compiled into the same set.
func matchBoth(t *testing.T, c *sigma.Compiled, ev *sigma.Event, prep *sigma.Prepared) bool {
	t.Helper()
	m := c.Match(ev)
	if mp := c.InScopePrepared(prep) && c.MatchPrepared(prep); mp != m {
		t.Errorf("%s on %.200s: Match %v, MatchPrepared %v", c.Rule.Title, ev.Raw, m, mp)
	}
	return m
}
