package parse

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/evtx"
)

// recordNodes parses the record of a real recording
// (../shared/datasets/windows/evtx) with event id and record id, as vigil
// import sends it, and returns its nodes as "Type=value".
func recordNodes(t *testing.T, file, eventID string, recordID int) []string {
	t.Helper()
	var out []string
	for _, n := range Nodes(recordEvent(t, file, eventID, recordID)) {
		out = append(out, n.Type+"="+n.Value)
	}
	return out
}

// recordEvent parses the record of a real recording with event id and
// record id, as vigil import sends it.
func recordEvent(t *testing.T, file, eventID string, recordID int) Event {
	t.Helper()
	docs, err := evtx.Documents(filepath.Join(datasetDir, "windows", "evtx", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		var doc struct {
			Winlog struct {
				EventID  string `json:"event_id"`
				RecordID int    `json:"record_id"`
			} `json:"winlog"`
		}
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Winlog.EventID != eventID || doc.Winlog.RecordID != recordID {
			continue
		}
		res := Parse("windows", d, time.Now())
		if !res.Parsed {
			t.Fatalf("%s record %d not parsed", file, recordID)
		}
		return res.Event
	}
	t.Fatalf("%s: no %s record %d", file, eventID, recordID)
	return nil
}

// TestWindowsRecordsJoinOneNode: real events name one account and one
// computer in different forms; each is one node whichever form the event
// gave. Failing before: a workstation name ("PC01", "PC01.example.corp"
// as a logon's WorkstationName or Sysmon's SourceHostname) was a Domain
// node only, never the Host node of the computer that logs as PC01.
func TestWindowsRecordsJoinOneNode(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		eventID  string
		recordID int
		want     []string
	}{
		// The account lgrove of threebeesco.com as a 4768 names it
		// (lgrove, threebeesco.com), as a 4769 does (the UPN
		// lgrove@THREEBEESCO.COM) and as a 4624 does (lgrove,
		// THREEBEESCO.COM): one User node.
		{"4768 lgrove of threebeesco.com", "Privilege Escalation/samaccount_spoofing_CVE-2021-42287_CVE-2021-42278_DC_securitylogs.evtx", "4768", 0,
			[]string{`User=threebeesco\lgrove`, "Host=01566s-win16-ir", "IP=172.16.66.19"}},
		{"4769 lgrove@THREEBEESCO.COM", "Privilege Escalation/samaccount_spoofing_CVE-2021-42287_CVE-2021-42278_DC_securitylogs.evtx", "4769", 0,
			[]string{`User=threebeesco\lgrove`, "Host=01566s-win16-ir", "IP=172.16.66.19"}},
		// PC02 logs a network logon from the workstation PC01; PC01 logs
		// its own connections (Sysmon 3) with its full name twice.
		{"4624 on PC02.example.corp from the workstation PC01", "Command and Control/DE_RDP_Tunneling_4624.evtx", "4624", 5322,
			[]string{"Host=pc02", "Host=pc01"}},
		{"Sysmon 3 on PC01.example.corp from PC01.example.corp", "Command and Control/DE_sysmon-3-rdp-tun.evtx", "3", 1940900,
			[]string{"Host=pc01"}},
		// A domain controller's NTLM validation names the workstation
		// that is itself in its short form.
		{"4776 on WIN-77LTAPHIQ1R.example.corp from WIN-77LTAPHIQ1R", "Discovery/dicovery_4661_net_group_domain_admins_target.evtx", "4776", 565645,
			[]string{"Host=win-77ltaphiq1r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recordID := tc.recordID
			if recordID == 0 {
				recordID = firstRecord(t, tc.file, tc.eventID)
			}
			got := recordNodes(t, tc.file, tc.eventID, recordID)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("nodes %v, want %s", got, w)
				}
			}
			for _, n := range got {
				if n == "Host=pc01.example.corp" || n == "Host=win-77ltaphiq1r.example.corp" {
					t.Errorf("nodes %v: a computer by its full name", got)
				}
			}
		})
	}
}

// firstRecord is the record id of a recording's first event of eventID.
func firstRecord(t *testing.T, file, eventID string) int {
	t.Helper()
	docs, err := evtx.Documents(filepath.Join(datasetDir, "windows", "evtx", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		var doc struct {
			Winlog struct {
				EventID  string `json:"event_id"`
				RecordID int    `json:"record_id"`
			} `json:"winlog"`
		}
		if json.Unmarshal(d, &doc) == nil && doc.Winlog.EventID == eventID {
			return doc.Winlog.RecordID
		}
	}
	t.Fatalf("%s: no %s", file, eventID)
	return 0
}

// TestWindowsHost: a computer name as one Host node.
func TestWindowsHost(t *testing.T) {
	for in, want := range map[string]string{
		"PC01": "pc01", "PC01.example.corp": "pc01", "IEWIN7..home": "iewin7", "dc01.corp.local.": "dc01",
		"-": "", "": "", "10.0.0.5": "", "::1": "",
	} {
		if got := WindowsHost(in); got != want {
			t.Errorf("WindowsHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWindowsSIDs: the real records that name one account in two forms
// give each form with the account's SID, so that the store can join them
// (parse.WindowsSIDs, NodeStore.JoinAccounts); a local account of the
// computer that logs the event gives none (the recordings' lab machines
// share their local accounts' SIDs: copies of one disk image).
func TestWindowsSIDs(t *testing.T) {
	const (
		spoofing   = "Privilege Escalation/samaccount_spoofing_CVE-2021-42287_CVE-2021-42278_DC_securitylogs.evtx"
		taskUpdate = "Lateral Movement/remote task update 4624 4702 same logonid.evtx"
		lgrove     = "S-1-5-21-308926384-506822093-3341789130-101606"
		jbrown     = "S-1-5-21-308926384-506822093-3341789130-1106"
	)
	tests := []struct {
		name     string
		file     string
		eventID  string
		recordID int
		want     []vigil.AccountSID
	}{
		{"4768 lgrove of threebeesco.com", spoofing, "4768", 2982082, []vigil.AccountSID{{SID: lgrove, Account: `threebeesco\lgrove`}}},
		{"4624 lgrove of THREEBEESCO.COM", spoofing, "4624", 2982084, []vigil.AccountSID{{SID: lgrove, Account: `threebeesco\lgrove`}}},
		{"4624 lgrove of 3B", spoofing, "4624", 2982089, []vigil.AccountSID{{SID: lgrove, Account: `3b\lgrove`}}},
		{"4624 a-jbrown of 3B", taskUpdate, "4624", 2171290, []vigil.AccountSID{{SID: jbrown, Account: `3b\a-jbrown`}}},
		{"4624 a-jbrown of THREEBEESCO.COM", taskUpdate, "4624", 2171291, []vigil.AccountSID{{SID: jbrown, Account: `threebeesco\a-jbrown`}}},
		// PC02's own ieuser, logged by PC02: a local account.
		{"4624 PC02's local ieuser", "Command and Control/DE_RDP_Tunneling_4624.evtx", "4624", 5308, nil},
		// A failed logon names the NULL SID.
		{"4625 of an account that failed", "Credential Access/CA_4624_4625_LogonType2_LogonProc_chrome.evtx", "4625", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recordID := tc.recordID
			if recordID == 0 {
				recordID = firstRecord(t, tc.file, tc.eventID)
			}
			got := WindowsSIDs(recordEvent(t, tc.file, tc.eventID, recordID))
			if !slices.Equal(got, tc.want) {
				t.Errorf("WindowsSIDs = %v, want %v", got, tc.want)
			}
		})
	}
}
