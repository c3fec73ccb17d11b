package detect

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// TestFootholdKindsOnRecordings runs the foothold and Application log kinds over every record
// of the real recordings (../shared/datasets/windows/evtx): each fires on
// exactly the records of the techniques it is for — a program written to
// a Startup folder (a .ps1 by cmd.exe, cmd.exe copied by mstsc from the
// RDP client's drive), the registry's persistence (accounts created in the
// SAM, a share, a pending IEAK policy, Image File Execution Options
// debuggers and a silent-exit monitor, Winlogon's shell, an LSA
// notification package), PowerShell's policies lifted, commands of WinRM's
// shell and a PowerShell remoting session, programs in user folders
// started by Word, cscript or PowerShell, Emotet's obfuscated PowerShell in
// its three logs, privileged groups listed over the network, a registry
// symbolic link made by an exploit, SpoolFool's library in the spooler's
// drivers, IIS's worker tunnelling RDP and SMB (Tunna), Atomic Red Team's
// WMI subscription (its command-line consumer and its binding), and of the
// Application log's kinds ntds.dit opened from a snapshot and a copy,
// LSASS's silent-exit dump, xp_cmdshell turned on and called, an MSI
// installed from a URL, bitsadmin's two jobs of a local cmd.exe, an RDP
// logon from 127.0.0.1, a WinRM shell — and on no
// record of any other recording. The real Winlogbeat documents (routine
// logons, process creations, script blocks) match none.
func TestFootholdKindsOnRecordings(t *testing.T) {
	want := map[string]int{
		"Command and Control/DE_RDP_Tunneling_TerminalServices-RemoteConnectionManagerOperational_1149.evtx windows_rdp_tunnel": 1,
		"Execution/rogue_msi_url_1040_1042.evtx windows_msi_from_url":                                                           1,
		"Lateral Movement/LM_winrm_target_wrmlogs_91_wsmanShellStarted_poorLog.evtx windows_winrm_shell":                        1,
		"Persistence/persist_bitsadmin_Microsoft-Windows-Bits-Client-Operational.evtx windows_bits_job":                         2,
		"Credential Access/LsassSilentProcessExit_process_exit_monitor_3001_lsass.evtx windows_lsass_exit_dump":                 2,
		"Credential Access/dc_applog_ntdsutil_dfir_325_326_327.evtx windows_ntds_copy":                                          4,
		"Defense Evasion/DE_xp_cmdshell_enabled_MSSQL_EID_15457.evtx windows_mssql_xp_cmdshell":                                 1,
		"Lateral Movement/LM_xp_cmdshell_MSSQL_Events.evtx windows_mssql_xp_cmdshell":                                           1,
		"Lateral Movement/MSSQL_15281_xp_cmdshell_exec_failed_attempt.evtx windows_mssql_xp_cmdshell":                           1,
		"AutomatedTestingTools/PanacheSysmon_vs_AtomicRedTeam01.evtx windows_wmi_subscription":                                  2,
		"Command and Control/tunna_iis_rdp_smb_tunneling_sysmon_3.evtx windows_web_tunnel":                                      4,
		"Privilege Escalation/privesc_registry_symlink_CVE-2020-1377.evtx windows_registry_symlink":                             1,
		"Privilege Escalation/privesc_spoolfool_mahdihtm_sysmon_1_11_7_13.evtx windows_spool_driver_write":                      1,
		"AutomatedTestingTools/Malware/sideloading_uacbypass_rundll32_injection_c2.evtx windows_dropped_program":                1,
		"AutomatedTestingTools/PanacheSysmon_vs_AtomicRedTeam01.evtx windows_registry_persistence":                              8,
		"Defense Evasion/DE_Powershell_CLM_Disabled_Sysmon_12.evtx windows_powershell_policy_lifted":                            1,
		"Defense Evasion/de_powershell_execpolicy_changed_sysmon_13.evtx windows_powershell_policy_lifted":                      1,
		"Defense Evasion/sysmon_2_11_evasion_timestomp_MACE.evtx windows_startup_folder_write":                                  1,
		"Discovery/4799_remote_local_groups_enumeration.evtx windows_remote_group_listing":                                      3,
		"Execution/sysmon_zipexec.evtx windows_dropped_program":                                                                 1,
		"Lateral Movement/LM_NewShare_Added_Sysmon_12_13.evtx windows_registry_persistence":                                     1,
		"Lateral Movement/LM_PowershellRemoting_sysmon_1_wsmprovhost.evtx windows_winrm_command":                                1,
		"Lateral Movement/LM_tsclient_startup_folder.evtx windows_startup_folder_write":                                         1,
		"Lateral Movement/LM_winrm_exec_sysmon_1_winrshost.evtx windows_winrm_command":                                          1,
		"Other/emotet/exec_emotet_ps_4104.evtx windows_obfuscated_powershell":                                                   1,
		"Other/emotet/exec_emotet_ps_800_get-item.evtx windows_obfuscated_powershell":                                           1,
		"Other/emotet/exec_emotet_ps_800_invoke-item.evtx windows_obfuscated_powershell":                                        1,
		"Other/emotet/exec_emotet_sysmon_1.evtx windows_dropped_program":                                                        1,
		"Persistence/persistence_SilentProcessExit_ImageHijack_sysmon_13_1.evtx windows_registry_persistence":                   1,
		"Persistence/persistence_pendingGPO_sysmon_13.evtx windows_registry_persistence":                                        3,
		"Persistence/sysmon_13_1_persistence_via_winlogon_shell.evtx windows_registry_persistence":                              1,
		"Persistence/sysmon_local_account_creation_and_added_admingroup_12_13.evtx windows_registry_persistence":                5,
		"Privilege Escalation/sysmon_privesc_psexec_dwell.evtx windows_dropped_program":                                         1,
	}
	got := map[string]int{}
	eachRecorded(t, func(rel string, ev parse.Event) {
		for _, k := range slices.Concat(windowsFootholdKinds, windowsAppLogKinds) {
			if key, _, _, ok := k.match(ev); ok {
				got[rel+" "+k.name]++
				if key == "" {
					t.Errorf("%s: %s fired with no key", rel, k.name)
				}
			}
		}
	})
	if !maps.Equal(got, want) {
		for k, n := range got {
			if want[k] != n {
				t.Errorf("%s: %d matches, want %d", k, n, want[k])
			}
		}
		for k, n := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no match, want %d", k, n)
			}
		}
	}

	docs, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "winlogbeat", "*", "collection", "*.json"))
	if len(docs) == 0 {
		t.Fatal("no Winlogbeat documents (../shared/datasets beside the checkout)")
	}
	for _, file := range docs {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, doc := range list {
			ev := parse.Parse("windows", doc, time.Time{}).Event
			for _, k := range slices.Concat(windowsFootholdKinds, windowsAppLogKinds) {
				if _, member, _, ok := k.match(ev); ok {
					t.Errorf("%s document %d: %s fired (%s)", filepath.Base(file), i, k.name, member)
				}
			}
		}
	}
}

// eachRecorded calls f with every record of the 167 real recordings,
// parsed, and the recording's path under windows/evtx.
func eachRecorded(t *testing.T, f func(rel string, ev parse.Event)) {
	t.Helper()
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	if len(files)+len(deeper) != 167 {
		t.Fatalf("%d recordings under %s, want 167 (../shared/datasets beside the checkout)", len(files)+len(deeper), root)
	}
	for _, file := range append(files, deeper...) {
		rel, err := filepath.Rel(root, file)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		for _, ev := range parsedRecords(t, rel) {
			f(rel, ev)
		}
	}
}

// TestWindowsChangeGroup: the kinds read as one group (an event passed
// only to the kinds of its event id) draw from every record of the
// recordings exactly the signals each kind draws reading every event, and
// each detector alone (ScopedSignals) the same: no kind misses an event id
// it fires on.
func TestWindowsChangeGroup(t *testing.T) {
	dets := WindowsChanges(0)
	fired := 0
	eachRecorded(t, func(rel string, f parse.Event) {
		ev := &Event{Fields: f}
		if !dets[0].(Scoped).InScope(ev) {
			t.Fatalf("%s: a record out of the Windows scope", rel)
		}
		grouped := map[int][]vigil.Signal{}
		g, _ := dets[0].(Grouped).Group()
		g.GroupSignals(ev, func(m int, sigs []vigil.Signal) { grouped[m] = sigs })
		for i, d := range dets {
			want := windowsKinds[i].signals(f)
			if !reflect.DeepEqual(grouped[i], want) {
				t.Errorf("%s: %s grouped %v, alone reading every event %v", rel, d.Name(), grouped[i], want)
			}
			if got := d.Signals(ev); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s Signals %v, want %v", rel, d.Name(), got, want)
			}
			if m := d.(WindowsChange).member; m != i {
				t.Errorf("%s is member %d of the group, want %d", d.Name(), m, i)
			}
			fired += len(want)
		}
	})
	if fired == 0 {
		t.Fatal("no kind fired on any record")
	}
}

// TestRegistrySettings: which registry changes each registry kind takes,
// and the values and actions it leaves (synthetic paths and data, as
// Sysmon writes them).
func TestRegistrySettings(t *testing.T) {
	ev := func(id, eventType, path, details string) parse.Event {
		return parse.Event{"winlog.channel": sysmon, "event.code": id, "host.name": "pc01", "registry.path": path,
			"registry.data.strings": details, "event.action": "registry-" + strings.ToLower(eventType)}
	}
	const winlogon = `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon\`
	for _, tc := range []struct {
		name string
		ev   parse.Event
		kind string // "" when none fires
	}{
		{"winlogon shell replaced", ev("13", "SetValue", winlogon+"Shell", `explorer.exe, C:\Users\a\x.exe`), "windows_registry_persistence"},
		{"winlogon shell set to the default", ev("13", "SetValue", winlogon+"Shell", "explorer.exe"), ""},
		{"userinit set to the default", ev("13", "SetValue", winlogon+"Userinit", `C:\Windows\system32\userinit.exe,`), ""},
		{"userinit with another program", ev("13", "SetValue", winlogon+"Userinit", `C:\Windows\system32\userinit.exe,C:\x.exe`), "windows_registry_persistence"},
		{"an account's key read back", ev("13", "SetValue", `HKLM\SAM\SAM\Domains\Account\Users\Names\bob\(Default)`, "Binary Data"), ""},
		{"an account deleted", ev("12", "DeleteKey", `HKLM\SAM\SAM\Domains\Account\Users\Names\bob`, ""), ""},
		{"an account created", ev("12", "CreateKey", `HKLM\SAM\SAM\Domains\Account\Users\Names\bob`, ""), "windows_registry_persistence"},
		{"a share's security", ev("13", "SetValue", `HKLM\System\CurrentControlSet\Services\LanmanServer\Shares\Security\data`, "Binary Data"), ""},
		{"wdigest on", ev("13", "SetValue", `HKLM\System\CurrentControlSet\Control\SecurityProviders\WDigest\UseLogonCredential`, "DWORD (0x00000001)"), "windows_registry_defence_off"},
		{"wdigest off", ev("13", "SetValue", `HKLM\System\CurrentControlSet\Control\SecurityProviders\WDigest\UseLogonCredential`, "DWORD (0x00000000)"), ""},
		{"defender off by policy", ev("13", "SetValue", `HKLM\SOFTWARE\Policies\Microsoft\Windows Defender\DisableAntiSpyware`, "DWORD (0x00000001)"), "windows_registry_defence_off"},
		{"execution policy restricted", ev("13", "SetValue", `HKLM\SOFTWARE\Microsoft\PowerShell\1\ShellIds\Microsoft.PowerShell\ExecutionPolicy`, "RemoteSigned"), ""},
		{"execution policy bypassed", ev("13", "SetValue", `HKCU\SOFTWARE\Policies\Microsoft\Windows\PowerShell\ExecutionPolicy`, "Bypass"), "windows_powershell_policy_lifted"},
		{"language mode enforced", ev("13", "SetValue", `HKLM\System\CurrentControlSet\Control\Session Manager\Environment\__PSLockdownPolicy`, "DWORD (0x00000004)"), ""},
		{"language mode policy deleted", ev("12", "DeleteValue", `HKLM\System\CurrentControlSet\Control\Session Manager\Environment\__PSLockdownPolicy`, ""), "windows_powershell_policy_lifted"},
		{"a debugger of notepad", ev("13", "SetValue", `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Image File Execution Options\notepad.exe\Debugger`, `C:\x.exe`), "windows_registry_persistence"},
		{"not Sysmon", parse.Event{"winlog.channel": "Security", "event.code": "13", "host.name": "pc01", "event.action": "registry-setvalue",
			"registry.path": winlogon + "Shell", "registry.data.strings": "x.exe"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fired []string
			for _, k := range windowsFootholdKinds {
				if key, _, _, ok := k.match(tc.ev); ok {
					fired = append(fired, k.name)
					if key != "pc01" {
						t.Errorf("%s: key %q, want the host", k.name, key)
					}
				}
			}
			if want := []string{tc.kind}; tc.kind == "" && len(fired) > 0 || tc.kind != "" && (len(fired) != 1 || fired[0] != tc.kind) {
				t.Errorf("fired %v, want %v", fired, want)
			}
		})
	}
}

// TestObfuscated: the marks of obfuscation counted in PowerShell code
// (synthetic snippets: ordinary code that joins, escapes and casts a few
// times, and the same statements as Invoke-Obfuscation writes them).
func TestObfuscated(t *testing.T) {
	for _, tc := range []struct {
		name string
		code string
		want bool
	}{
		{"plain script", `Get-ChildItem -Path C:\Logs -Filter *.log | Where-Object { $_.Length -gt 1MB } | Remove-Item -WhatIf`, false},
		{"a few joins and escapes", `Write-Host ("Disk " + $d.Name + ": " + "free") ; "line one` + "`n" + `line two` + "`t" + `tabbed" + "end"`, false},
		{"joined fragments", strings.Repeat(`&('ne'+'w-'+'ob'+'ject') ; `, 6), true},
		{"fragments in parentheses", strings.Repeat(`(('h'+'ttp')+(':'+'//')) ; `, 6), true},
		{"backticks that escape nothing", `[Net.ServicePointManager]::"SecURi` + "`T`" + `ypRO` + "`T`" + `oCOL" = 'tls12'`, true},
		{"chars cast", strings.Repeat(`[char]73+[CHAR]69+[Char]88+`, 5) + `''`, true},
		{"too short to judge", `'a'+'b'+'c'`, false},
	} {
		if got := obfuscated(tc.code); got != tc.want {
			t.Errorf("%s: obfuscated = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzObfuscated: any text — a script block is whatever a host logged —
// is judged without a panic, and more text never takes the marks away (a
// prefix that is obfuscated stays so when more is appended).
func FuzzObfuscated(f *testing.F) {
	f.Add(strings.Repeat(`&('ne'+'w-'+'ob'+'ject') ; `, 6))
	f.Add("SecURi`T`ypRO`T`oCOL and some more text to pass the length")
	f.Add(strings.Repeat("[char]65+", 16))
	f.Add("'\"+`")
	f.Fuzz(func(t *testing.T, s string) {
		if obfuscated(s) && !obfuscated(s+" Write-Host done") {
			t.Errorf("obfuscated(%q) but not with more appended", s)
		}
	})
}

// FuzzWindowsKinds: whatever document a shipper or a hostile client sends
// as a Windows event, the built-in Windows kinds read its parsed fields
// without a panic, and every signal they draw has a key. The seeds are
// records of the recordings each kind fires on.
func FuzzWindowsKinds(f *testing.F) {
	for _, file := range []string{
		"Other/emotet/exec_emotet_ps_4104.evtx",
		"Lateral Movement/LM_tsclient_startup_folder.evtx",
		"Persistence/sysmon_local_account_creation_and_added_admingroup_12_13.evtx",
		"Discovery/4799_remote_local_groups_enumeration.evtx",
		"Command and Control/tunna_iis_rdp_smb_tunneling_sysmon_3.evtx",
	} {
		for _, d := range recordedDocs(f, file) {
			f.Add(d)
		}
	}
	dets := WindowsChanges(0)
	g, _ := dets[0].(Grouped).Group()
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev := &Event{Fields: parse.Parse("windows", raw, time.Time{}).Event}
		if !dets[0].(Scoped).InScope(ev) {
			return
		}
		g.GroupSignals(ev, func(m int, sigs []vigil.Signal) {
			for _, s := range sigs {
				if s.Key == "" {
					t.Errorf("%s drew a signal with no key", dets[m].Name())
				}
			}
		})
	})
}

// TestWMISubscription: which WMI subscription events make one (synthetic
// fields, as Sysmon and the WMI-Activity log write them).
func TestWMISubscription(t *testing.T) {
	sysmonEv := func(id, op, name, typ string) parse.Event {
		return parse.Event{"winlog.channel": sysmon, "event.code": id, "host.name": "pc01",
			"winlog.event_data.Operation": op, "winlog.event_data.Name": ` "` + name + `"`,
			"winlog.event_data.Type": typ, "winlog.event_data.Destination": ` "C:\\x.exe"`,
			"winlog.event_data.Consumer": ` "\\.\ROOT\subscription:CommandLineEventConsumer.Name=\"` + name + `\""`}
	}
	for _, tc := range []struct {
		name string
		ev   parse.Event
		want bool
	}{
		{"a command-line consumer created", sysmonEv("20", "Created", "Updater", "Command Line"), true},
		{"a script consumer created", sysmonEv("20", "Created", "Updater", "Script"), true},
		{"a log-file consumer", sysmonEv("20", "Created", "Updater", "Log File"), false},
		{"a consumer deleted", sysmonEv("20", "Deleted", "Updater", "Command Line"), false},
		{"a binding created", sysmonEv("21", "Created", "Updater", ""), true},
		{"Windows' own consumer bound", sysmonEv("21", "Created", "SCM Event Log Consumer", ""), false},
		{"WMI-Activity's record of a subscription", parse.Event{"winlog.channel": "Microsoft-Windows-WMI-Activity/Operational",
			"event.code": "5861", "host.name": "pc01", "winlog.user_data.CONSUMER": `CommandLineEventConsumer="Updater"`}, true},
		{"WMI-Activity's record of Windows' own", parse.Event{"winlog.channel": "Microsoft-Windows-WMI-Activity/Operational",
			"event.code": "5861", "host.name": "pc01", "winlog.user_data.CONSUMER": `NTEventLogEventConsumer="SCM Event Log Consumer"`}, false},
	} {
		if key, _, _, ok := wmiSubscription(tc.ev); ok != tc.want || ok && key != "pc01" {
			t.Errorf("%s: fired %v (key %q), want %v", tc.name, ok, key, tc.want)
		}
	}
}

// TestNTDSCopy: the domain controller's own database opened where it
// lives is no copy; a snapshot's or another folder's is (synthetic
// ESENT data, in the form the recordings hold).
func TestNTDSCopy(t *testing.T) {
	ev := func(param string) parse.Event {
		return parse.Event{"winlog.channel": "Application", "winlog.provider_name": "ESENT", "event.code": "326",
			"host.name": "dc1", "winlog.event_data.param1": param}
	}
	for _, tc := range []struct {
		param string
		want  bool
	}{
		{`NTDS,612,,1,C:\Windows\NTDS\ntds.dit,0,[1] 0.000.,1 0`, false},
		{`NTDS,612,,1,D:\Windows\NTDS\ntds.dit,0,[1] 0.000.,1 0`, false},
		{`NTDS,3392,,1,C:\$SNAP_201911270054_VOLUMEC$\Windows\NTDS\ntds.dit,0,[1] 0.000.,1 0`, true},
		{`NTDS,3392,,2,C:\Temp\ifm\Active Directory\ntds.dit,0,[1] 0.000.`, true},
		{`svchost,1234,,1,C:\Windows\SoftwareDistribution\DataStore\DataStore.edb,0`, false},
	} {
		if _, _, _, ok := ntdsCopy(ev(tc.param)); ok != tc.want {
			t.Errorf("%s: fired %v, want %v", tc.param, ok, tc.want)
		}
	}
}

// TestBareAddress: which BITS sources name their server by address.
func TestBareAddress(t *testing.T) {
	for url, want := range map[string]bool{
		"http://10.0.0.5/a.exe":                      true,
		"https://203.0.113.9:8443/x":                 true,
		"http://[2001:db8::1]/x":                     true,
		"http://user@198.51.100.7/x":                 true,
		"http://download.windowsupdate.com/c/msdl/x": false,
		"https://dl.google.com/update2/x.exe":        false,
		"http://1.2.3.4.example.com/x":               false,
	} {
		if got := bareAddress(url); got != want {
			t.Errorf("bareAddress(%s) = %v, want %v", url, got, want)
		}
	}
}
