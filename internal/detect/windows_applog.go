package detect

import (
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// The WindowsChange kinds of the Application log and of Windows' service
// logs: what a server's own programs log of an attack on them — the
// Active Directory database copied, LSASS dumped through Windows' silent
// process exit, SQL Server's xp_cmdshell turned on or called, an MSI
// package installed from a URL, a BITS job that fetches a local program
// or from a bare address, an RDP logon from the host's own loopback (a
// tunnel), a WinRM shell opened.

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

// msiFromURL matches Windows Installer beginning a transaction (1040) on
// a package named by a URL: `msiexec /i http://…` runs what it downloads
// (ATT&CK T1218.007). The transaction's end (1042) is the same install,
// not counted again. Keyed by the host, the URL its member.
func msiFromURL(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	p, ok := appEvent(f, "MsiInstaller", "1040")
	lower := strings.ToLower(p)
	if !ok || !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return "", "", nil, false
	}
	url, _, _ := strings.Cut(p, ",")
	key, refs := hostKey(f)
	return key, url, nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// bitsJob matches a BITS transfer begun (BITS-Client 59) whose source is
// a file of the host or a share, not a web address — the trick by which
// `bitsadmin /addfile` with a program as its "remote" file and a notify
// command keeps a program running (ATT&CK T1197) — or a web address by a
// bare IP address, where Windows' own and updaters' jobs name their
// servers. Keyed by the host, the job and its source its member.
func bitsJob(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Microsoft-Windows-Bits-Client/Operational", "59") {
		return "", "", nil, false
	}
	url := str(f, "winlog.event_data.url")
	lower := strings.ToLower(url)
	web := strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
	if url == "" || web && !bareAddress(lower) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, str(f, "winlog.event_data.name") + ": " + url, refs, true
}

// bareAddress reports whether a web address, in lower case, names its
// server by an IP address.
func bareAddress(url string) bool {
	_, rest, _ := strings.Cut(url, "://")
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if strings.HasPrefix(host, "[") {
		return true
	}
	host, _, _ = strings.Cut(host, ":")
	_, v := parse.NodeOf(vigil.NodeIP, host)
	return v != ""
}

// rdpTunnel matches a Remote Desktop logon (TerminalServices
// RemoteConnectionManager 1149, user authentication succeeded) whose
// client address is the host's own loopback: RDP brought in through a
// tunnel (plink, ngrok, a web shell's) that ends on the host (ATT&CK
// T1572). Keyed by the host, the account its member.
func rdpTunnel(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Microsoft-Windows-TerminalServices-RemoteConnectionManager/Operational", "1149") {
		return "", "", nil, false
	}
	addr := strings.TrimSpace(str(f, "winlog.user_data.Param3"))
	if !strings.HasPrefix(addr, "127.") && addr != "::1" {
		return "", "", nil, false
	}
	account := parse.WindowsAccount(str(f, "winlog.user_data.Param1"), str(f, "winlog.user_data.Param2"))
	key, refs := hostKey(f)
	return key, account + " from " + addr, nodes(refs, node(vigil.NodeUser, account, false)), true
}

// winrmShell matches WinRM creating a shell (WinRM 91): a remote shell or
// PowerShell session opened on the host, what the process-creation kinds
// see only where Sysmon or process auditing runs. Keyed by the host.
func winrmShell(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Microsoft-Windows-WinRM/Operational", "91") {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	member := "WinRM shell opened"
	if uri := str(f, "winlog.event_data.resourceUri"); uri != "" {
		member += ": " + uri
	}
	return key, member, nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

var windowsAppLogKinds = []windowsChangeKind{
	{name: "windows_ntds_copy", codes: []string{"325", "326", "327"}, severity: vigil.SeverityHigh,
		title: "Credential theft: Active Directory database copied", match: ntdsCopy},
	{name: "windows_lsass_exit_dump", codes: []string{"3001"}, severity: vigil.SeverityHigh,
		title: "Credential theft: LSASS dumped on a silent exit", match: lsassExitDump},
	{name: "windows_mssql_xp_cmdshell", codes: []string{"15457", "15281"}, severity: vigil.SeverityHigh,
		title: "SQL Server xp_cmdshell turned on or called", match: xpCmdshell},
	{name: "windows_msi_from_url", codes: []string{"1040"}, severity: vigil.SeverityHigh,
		title: "MSI package installed from a URL", match: msiFromURL},
	{name: "windows_bits_job", codes: []string{"59"}, severity: vigil.SeverityMedium,
		title: "BITS job fetching a local program or from a bare address", match: bitsJob},
	{name: "windows_rdp_tunnel", codes: []string{"1149"}, severity: vigil.SeverityHigh,
		title: "Remote Desktop logon through a tunnel", match: rdpTunnel},
	{name: "windows_winrm_shell", codes: []string{"91"}, severity: vigil.SeverityMedium,
		title: "WinRM shell opened", match: winrmShell},
}
