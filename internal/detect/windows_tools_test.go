package detect

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/parse"
)

// TestToolPipes: the pipe names of the real recordings (Sysmon 17 and 18
// of ../shared/datasets/windows/evtx) sorted into remote-execution
// services, attack tools and Windows' own.
func TestToolPipes(t *testing.T) {
	for _, tc := range []struct {
		pipe       string
		exec, tool bool
	}{
		// PsExec, as itself and with its service renamed
		// (sysmon_privesc_psexec_dwell, DE_renamed_psexec_service).
		{pipe: `\PSEXESVC`, exec: true},
		{pipe: `\svchost-MSEDGEWIN10-8116-stdin`, exec: true},
		{pipe: `\svchost-MSEDGEWIN10-8116-stdout`, exec: true},
		{pipe: `\svchost-MSEDGEWIN10-8116-stderr`, exec: true},
		// Attack tools' default pipes (kekeo, RoguePotato).
		{pipe: `\kekeo_tsssp_endpoint`, tool: true},
		{pipe: `\RoguePotato\pipe\epmapper`, tool: true},
		// Windows' own, connected to by the same attacks.
		{pipe: `\svchost`},
		{pipe: `\lsass`},
		{pipe: `\srvsvc`},
		{pipe: `\wkssvc`},
		{pipe: `\eventlog`},
		{pipe: `\browser`},
		{pipe: `\InitShutdown`},
		{pipe: `\LSM_API_service`},
		{pipe: `\atsvc`},
		{pipe: `\epmapper`},
		// A stream's name needs PsExec's <service>-<computer>-<n>.
		{pipe: `\my-stdin`},
	} {
		name := strings.ToLower(tc.pipe)
		if got := remoteExecPipe(name); got != tc.exec {
			t.Errorf("remoteExecPipe(%s) = %v, want %v", tc.pipe, got, tc.exec)
		}
		if got := attackToolPipe(name); got != tc.tool {
			t.Errorf("attackToolPipe(%s) = %v, want %v", tc.pipe, got, tc.tool)
		}
	}
}

// TestRemoteThread: a thread created in another process is injection,
// but when Windows' own processes do it as part of their work.
func TestRemoteThread(t *testing.T) {
	ev := func(source, target, start string) parse.Event {
		return parse.Event{"winlog.channel": sysmon, "event.code": "8", "host.name": "pc01",
			"process.executable": source, "winlog.event_data.TargetImage": target, "winlog.event_data.StartFunction": start}
	}
	for _, tc := range []struct {
		name   string
		ev     parse.Event
		want   bool
		member string
	}{
		{"into explorer", ev(`\\vboxsrv\HTools\m.exe`, `C:\Windows\explorer.exe`, ""), true, "m.exe into explorer.exe"},
		{"into lsass", ev(`C:\Windows\System32\rdrleakdiag.exe`, `C:\Windows\System32\lsass.exe`, ""), true, "rdrleakdiag.exe into lsass.exe"},
		{"into an unknown process", ev(`C:\Users\a\AppData\Roaming\WINWORD.exe`, "<unknown process>", ""), true, "WINWORD.exe into <unknown process>"},
		{"into itself", ev(`C:\Users\a\AppData\Roaming\WINWORD.exe`, `C:\Users\a\AppData\Roaming\winword.exe`, ""), false, ""},
		{"csrss's Ctrl+C handler", ev(`C:\Windows\System32\csrss.exe`, `C:\Windows\System32\cmd.exe`, "CtrlRoutine"), false, ""},
		{"the service manager", ev(`C:\Windows\System32\services.exe`, `C:\Windows\System32\svchost.exe`, ""), false, ""},
		{"Ctrl+C from elsewhere", ev(`C:\Tools\x.exe`, `C:\Windows\System32\cmd.exe`, "CtrlRoutine"), false, ""},
		{"a system name elsewhere", ev(`C:\Users\Public\csrss.exe`, `C:\Windows\explorer.exe`, ""), true, "csrss.exe into explorer.exe"},
		{"an installed program", ev(`C:\Program Files\VMware\VMware Tools\vmtoolsd.exe`, `C:\Windows\explorer.exe`, ""), false, ""},
		{"PowerShell", ev(`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, `C:\Program Files\KeePass Password Safe 2\KeePass.exe`, ""), true, "powershell.exe into KeePass.exe"},
		{"no source", ev("", `C:\Windows\explorer.exe`, ""), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, member, _, ok := remoteThread(tc.ev)
			if ok != tc.want || member != tc.member {
				t.Fatalf("remoteThread = %q, %q, %v; want member %q, %v", key, member, ok, tc.member, tc.want)
			}
			if ok && key != "pc01" {
				t.Errorf("key %q, want the host pc01", key)
			}
		})
	}
	other := ev(`C:\Tools\x.exe`, `C:\Windows\explorer.exe`, "")
	other["event.code"] = "10"
	if _, _, _, ok := remoteThread(other); ok {
		t.Error("a Sysmon 10 matched as a remote thread")
	}
}

// TestAdminShareWrite: of the 5145 records of the two lateral-movement
// recordings, exactly the executables opened for writing in C$ or ADMIN$
// from another computer match — RemCom's service binary (six records)
// and the files copied to C$ (malwr.exe, setup.bat) — keyed by the
// address they came from, the account that wrote them a node.
func TestAdminShareWrite(t *testing.T) {
	for _, tc := range []struct {
		file    string
		members map[string]int
		key     string
		user    string
	}{
		{"Lateral Movement/LM_REMCOM_5145_TargetHost.evtx", map[string]int{`\\*\ADMIN$\System32\RemComSvc.exe`: 6}, "10.0.2.16", `PC01\IEUser`},
		{"Lateral Movement/LM_5145_Remote_FileCopy.evtx", map[string]int{`\\*\C$\malwr.exe`: 2, `\\*\C$\Windows\Temp\setup.bat`: 2}, "10.0.2.15", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := map[string]int{}
			for _, f := range parsedRecords(t, tc.file) {
				key, member, refs, ok := adminShareWrite(f)
				if !ok {
					continue
				}
				got[member]++
				if key != tc.key {
					t.Errorf("%s: key %q, want %q", member, key, tc.key)
				}
				if tc.user != "" && !slices.ContainsFunc(refs, func(r vigil.NodeRef) bool {
					return r.Type == vigil.NodeUser && strings.EqualFold(r.Value, tc.user)
				}) {
					t.Errorf("%s: nodes %v name no user %s", member, refs, tc.user)
				}
			}
			if !maps.Equal(got, tc.members) {
				t.Errorf("matched %v, want %v", got, tc.members)
			}
		})
	}
}

// TestDebugPrivilege: of the 4703 records of the recordings, the two that
// enable SeDebugPrivilege in a program brought to the host (mimikatz.exe
// on a desktop, MalSeclogon.exe on a share) match; svchost.exe enabling
// other rights does not, nor would a program of Windows' own folders.
func TestDebugPrivilege(t *testing.T) {
	got := map[string]string{}
	for _, file := range []string{"Privilege Escalation/win10_4703_SeDebugPrivilege_enabled.evtx", "Credential Access/tutto_malseclogon.evtx"} {
		for _, f := range parsedRecords(t, file) {
			if key, member, _, ok := debugPrivilege(f); ok {
				got[member] = key
			}
			if str(f, "event.code") == "4703" && str(f, "event.action") != "token-right-adjusted" {
				t.Errorf("a 4703 parsed as %q", str(f, "event.action"))
			}
		}
	}
	want := map[string]string{
		`C:\Users\IEUser\Desktop\x64\mimikatz.exe`:                                               "msedgewin10",
		`\Device\Mup\VBoxSvr\Users\bouss\Downloads\MalSeclogon-master\x64\Debug\MalSeclogon.exe`: "msedgewin10",
	}
	if !maps.Equal(got, want) {
		t.Errorf("matched %v, want %v", got, want)
	}
	own := parse.Event{"winlog.channel": "Security", "event.code": "4703", "host.name": "pc01",
		"winlog.event_data.EnabledPrivilegeList": "SeDebugPrivilege", "process.executable": `C:\Windows\System32\Taskmgr.exe`}
	if _, _, _, ok := debugPrivilege(own); ok {
		t.Error("Task Manager enabling debug rights matched")
	}
}

// recordedDocs reads a recording of ../shared/datasets/windows/evtx as
// the documents vigil import sends.
func recordedDocs(tb testing.TB, file string) [][]byte {
	tb.Helper()
	docs, err := evtx.Documents(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx", file))
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// parsedRecords reads a recording of ../shared/datasets/windows/evtx as
// vigil import sends it and parses each record as the pipeline does.
func parsedRecords(t *testing.T, file string) []parse.Event {
	t.Helper()
	docs := recordedDocs(t, file)
	out := make([]parse.Event, len(docs))
	for i, doc := range docs {
		out[i] = parse.Parse("windows", doc, time.Time{}).Event
	}
	return out
}
