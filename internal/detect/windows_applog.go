package detect

import (
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// The WindowsChange kinds of the Application log: what a server's own
// programs log of an attack on them — the Active Directory database
// copied, LSASS dumped through Windows' silent process exit, SQL Server's
// xp_cmdshell turned on or called.

// appEvent returns the first data item (param1) of an Application log
// event of the provider whose name starts with provider, and whether f is
// one of ids.
func appEvent(f parse.Event, provider string, ids ...string) (string, bool) {
	if !code(f, "Application", ids...) || !strings.HasPrefix(str(f, "winlog.provider_name"), provider) {
		return "", false
	}
	return str(f, "winlog.event_data.param1"), true
}

// ntdsCopy matches the database engine (ESENT 325, 326, 327: a database
// created, attached, detached) opening an Active Directory database
// (`NTDS,…`) anywhere but the domain controller's own `\Windows\NTDS\`
// of a live volume: a copy, made by `ntdsutil "ac i ntds" ifm` or from a
// volume shadow copy (`\$SNAP_…`), to take every account's password
// hash offline (ATT&CK T1003.003). Keyed by the host, the file its member.
func ntdsCopy(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	p, ok := appEvent(f, "ESENT", "325", "326", "327")
	if !ok || !strings.HasPrefix(p, "NTDS,") {
		return "", "", nil, false
	}
	var file string
	for _, part := range strings.Split(p, ",") {
		if strings.HasSuffix(strings.ToLower(part), `\ntds.dit`) {
			file = part
		}
	}
	lower := strings.ToLower(file)
	if file == "" || strings.HasSuffix(lower, `:\windows\ntds\ntds.dit`) && !strings.Contains(lower, `$snap_`) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, file, refs, true
}

// lsassExitDump matches Windows' process exit monitor (Application 3001)
// reporting LSASS: a dump of its memory taken through the silent process
// exit mechanism (a SilentProcessExit setting made for lsass.exe and the
// process told to report its own exit), which reads credentials without
// opening LSASS as Sysmon 10 would show. Keyed by the host, the program
// that caused it its member.
func lsassExitDump(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	p, ok := appEvent(f, "Microsoft-Windows-ProcessExitMonitor", "3001")
	if !ok || !strings.HasSuffix(strings.ToLower(p), `\lsass.exe`) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, str(f, "winlog.event_data.param2"), refs, true
}

// xpCmdshell matches SQL Server turning xp_cmdshell on (15457, a
// configuration option changed from 0 to 1: `xp_cmdshell,0,1`) or a call
// to it while it is off (15281): an attacker in the database making it
// run operating-system commands. Keyed by the host, the event its member.
func xpCmdshell(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	p, ok := appEvent(f, "MSSQL", "15457", "15281")
	switch {
	case !ok:
		return "", "", nil, false
	case str(f, "event.code") == "15457" && p != "xp_cmdshell,0,1":
		return "", "", nil, false
	case str(f, "event.code") == "15281" && !strings.Contains(strings.ToLower(p), "xp_cmdshell"):
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, str(f, "winlog.provider_name") + ": " + p, refs, true
}

var windowsAppLogKinds = []windowsChangeKind{
	{name: "windows_ntds_copy", codes: []string{"325", "326", "327"}, severity: vigil.SeverityHigh,
		title: "Credential theft: Active Directory database copied", match: ntdsCopy},
	{name: "windows_lsass_exit_dump", codes: []string{"3001"}, severity: vigil.SeverityHigh,
		title: "Credential theft: LSASS dumped on a silent exit", match: lsassExitDump},
	{name: "windows_mssql_xp_cmdshell", codes: []string{"15457", "15281"}, severity: vigil.SeverityHigh,
		title: "SQL Server xp_cmdshell turned on or called", match: xpCmdshell},
}
