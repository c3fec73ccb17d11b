package detect_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/evtx"
)

// evtxRecords reads a recording of ../shared/datasets/windows/evtx as the
// documents vigil import sends, in the file's order.
func evtxRecords(tb testing.TB, rel string) [][]byte {
	tb.Helper()
	docs, err := evtx.Documents(filepath.Join(datasets(tb), "windows", "evtx", rel))
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// windowsArtifacts wraps documents as artifacts of source windows.
func windowsArtifacts(docs [][]byte) []*vigil.Artifact {
	lines := make([]string, len(docs))
	for i, d := range docs {
		lines[i] = string(d)
	}
	return artifacts("windows", lines...)
}

// kerberosGuesses counts, from the records themselves, the guesses of a
// Kerberos spray: every 4771, and every failed 4768 but a bad password's
// (0x18, which a 4771 logs too); and the accounts and sources they name.
func kerberosGuesses(tb testing.TB, docs [][]byte) (attempts int, accounts, sources map[string]bool) {
	accounts, sources = map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		var doc struct {
			Winlog struct {
				EventID  string            `json:"event_id"`
				Computer string            `json:"computer_name"`
				Data     map[string]string `json:"event_data"`
			} `json:"winlog"`
		}
		if err := json.Unmarshal(d, &doc); err != nil {
			tb.Fatal(err)
		}
		st := doc.Winlog.Data["Status"]
		if doc.Winlog.EventID == "4771" || (doc.Winlog.EventID == "4768" && st != "0x0" && st != "0x18") {
			attempts++
			// The account as DOMAIN\user: a 4768 names its domain, a
			// 4771 none, its account being of the domain controller's
			// own domain (the computer's name after its first label).
			domain := doc.Winlog.Data["TargetDomainName"]
			if domain == "" {
				_, domain, _ = strings.Cut(doc.Winlog.Computer, ".")
			}
			domain, _, _ = strings.Cut(domain, ".")
			accounts[strings.ToLower(domain+`\`+doc.Winlog.Data["TargetUserName"])] = true
			sources[strings.TrimPrefix(doc.Winlog.Data["IpAddress"], "::ffff:")] = true
		}
	}
	return attempts, accounts, sources
}

// TestWindowsKerberosSpray: the real recording of a Kerberos password
// spray gives one spray observation from its source with exactly the
// file's attempts and accounts, and the log clearing it holds.
func TestWindowsKerberosSpray(t *testing.T) {
	docs := evtxRecords(t, "Credential Access/kerberos_pwd_spray_4771.evtx")
	attempts, accounts, sources := kerberosGuesses(t, docs)
	if attempts == 0 || len(sources) != 1 {
		t.Fatalf("the file holds %d guesses from %v", attempts, sources)
	}
	var src string
	for s := range sources {
		src = s
	}
	e := newEnv(t, detect.Config{})
	e.process(t, "acme", 50, windowsArtifacts(docs))
	incs := e.incidents(t, "acme")
	spray := titled(incs, "Windows password spray from "+src)
	if len(spray) != 1 {
		t.Fatalf("spray incidents: %d of %d (%v)", len(spray), len(incs), incidentTitles(incs))
	}
	var desc string
	for _, o := range spray[0].Observations {
		if strings.Contains(o.Description, "Password spray") {
			desc = o.Description
		}
	}
	want := fmt.Sprintf("%d failed Windows logon attempts from %s", attempts, src)
	if !strings.Contains(desc, want) || !strings.Contains(desc, fmt.Sprintf("on %d accounts", len(accounts))) {
		t.Errorf("observation %q, want %q on %d accounts", desc, want, len(accounts))
	}
	// Each account by name, once: the 4771s' Administrator and backdoor
	// are threebeesco's as the 4768s' accounts are (before, they were
	// "administrator" and "backdoor", other nodes than the same
	// accounts' 4768 and 4624 forms).
	for a := range accounts {
		if !strings.Contains(desc, a+",") && !strings.Contains(desc, a+")") {
			t.Errorf("observation %q does not name the account %s", desc, a)
		}
	}
	// The attempts' own time (2020-07-22), not the time of processing.
	if !strings.Contains(desc, "2020-07-22T20:29:36Z") {
		t.Errorf("observation %q does not give the events' time", desc)
	}
	if cleared := titled(incs, "Windows security log cleared"); len(cleared) != 1 {
		t.Errorf("log cleared incidents: %v", incidentTitles(incs))
	}
}

// TestWindowsBruteForceReplayed: the recordings hold one failed logon
// (4625) only; replayed with new record ids and times, as a brute force
// replays one guess, it makes a brute force once it reaches the threshold,
// never below, and the recording's own logon of the account after it
// (replayed after the failures) is a success after them.
func TestWindowsBruteForceReplayed(t *testing.T) {
	var failed []byte
	var succeeded [][]byte // the recording's logons after the failure
	for _, d := range evtxRecords(t, "Credential Access/CA_4624_4625_LogonType2_LogonProc_chrome.evtx") {
		if strings.Contains(string(d), `"event_id":"4625"`) {
			failed = d
		}
		if strings.Contains(string(d), `"event_id":"4624"`) {
			succeeded = append(succeeded, d)
		}
	}
	if failed == nil {
		t.Fatal("no 4625 in the recording")
	}
	var doc map[string]any
	if err := json.Unmarshal(failed, &doc); err != nil {
		t.Fatal(err)
	}
	base, _ := time.Parse(time.RFC3339Nano, doc["@timestamp"].(string))
	replay := func(n int) [][]byte {
		var out [][]byte
		for i := 0; i < n; i++ {
			doc["@timestamp"] = base.Add(time.Duration(i) * 10 * time.Second).Format(time.RFC3339Nano)
			doc["winlog"].(map[string]any)["record_id"] = 1000 + i
			b, _ := json.Marshal(doc)
			out = append(out, b)
		}
		// The recording's own logons (SYSTEM's, then the user's), a
		// minute after the last failure.
		for i, d := range succeeded {
			var ok map[string]any
			if err := json.Unmarshal(d, &ok); err != nil {
				t.Fatal(err)
			}
			ok["@timestamp"] = base.Add(time.Duration(n)*10*time.Second + time.Minute + time.Duration(i)*time.Second).Format(time.RFC3339Nano)
			ok["winlog"].(map[string]any)["record_id"] = 2000 + i
			b, _ := json.Marshal(ok)
			out = append(out, b)
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		want int
	}{{4, 0}, {5, 1}, {12, 1}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			e := newEnv(t, detect.Config{})
			e.process(t, "acme", 50, windowsArtifacts(replay(tc.n)))
			var incs []incident
			for _, inc := range e.incidents(t, "acme") {
				for _, o := range inc.Observations {
					if strings.HasPrefix(o.Description, "Brute force: ") {
						incs = append(incs, inc)
						break
					}
				}
			}
			if len(incs) != tc.want {
				t.Fatalf("%d replayed failures: %d brute force incidents, want %d", tc.n, len(incs), tc.want)
			}
			if tc.want == 0 {
				return
			}
			var descs []string
			for _, o := range incs[0].Observations {
				descs = append(descs, o.Description)
			}
			all := strings.Join(descs, "\n")
			if !strings.Contains(all, fmt.Sprintf("%d failed Windows logon attempts", tc.n)) {
				t.Errorf("observations %q", all)
			}
			// The user's logon after the failures, in the same incident
			// and heading it; SYSTEM's service logon (type 5) is none.
			if !strings.HasPrefix(incs[0].Title, "Successful Windows logon after failed logons from msedgewin10") {
				t.Errorf("incident titled %q", incs[0].Title)
			}
			if !strings.Contains(all, `Successful Windows logon after failed logons: 2 successful logons from msedgewin10 as msedgewin10\ieuser`) {
				t.Errorf("no success after the failures among %q", all)
			}
		})
	}
}

func incidentTitles(incs []incident) []string {
	var out []string
	for _, i := range incs {
		out = append(out, i.Title)
	}
	return out
}
