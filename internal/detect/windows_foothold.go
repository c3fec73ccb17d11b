package detect

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// The WindowsChange kinds of a foothold being made on a host, from Sysmon
// and the Security log: a program put where Windows starts it at logon,
// registry settings that persist or lift a defence, commands run through
// WinRM, a program in a user's folder started by a script or a document,
// and a host's privileged groups listed from another computer. Each is
// one event that is a finding on its own, whatever tool made it, so that
// a recording of a technique no Sigma rule of the starter set names still
// gives one.

// processCreated reports whether f is a process creation: Sysmon 1, or
// Security 4688 (whose parent Windows 10 and later name).
func processCreated(f parse.Event) bool {
	return code(f, sysmon, "1") || code(f, "Security", "4688")
}

// startupFolder matches a Sysmon 11 (file created) of a program or script
// in a Startup folder, the user's or all users': Windows runs it at the
// next logon (ATT&CK T1547.001). Installers (msiexec, programs in
// Program Files) put shortcuts there, not programs, and are left out.
func startupFolder(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	return fileWritten(f, func(lower, exe string) bool {
		return strings.Contains(lower, `\start menu\programs\startup\`) && runnable(lower) &&
			!installed(exe) && !strings.EqualFold(baseName(exe), "msiexec.exe")
	})
}

// fileWritten matches a Sysmon 11 (file created) whose path (in lower
// case) and writing program is accepts: keyed by the host, the file its
// member.
func fileWritten(f parse.Event, is func(lower, exe string) bool) (string, string, []vigil.NodeRef, bool) {
	if !code(f, sysmon, "11") {
		return "", "", nil, false
	}
	path := str(f, "file.path")
	if !is(strings.ToLower(path), str(f, "process.executable")) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, path, nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false),
		node(vigil.NodeHash, str(f, "file.hash.sha256"), false)), true
}

// registrySetting reports whether a registry change (Sysmon 12, 13, 14)
// is one a registry kind fires on: the key or value path and its new data
// in lower case, and what was done ("registry-setvalue",
// "registry-createkey", "registry-deletevalue").
type registrySetting func(path, data, action string) bool

// setTo returns a registrySetting of a value whose path ends with one of
// suffixes, set to data holding one of values (any data if none).
func setTo(suffixes []string, values ...string) registrySetting {
	return func(path, data, action string) bool {
		if action != "registry-setvalue" || !slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(path, s) }) {
			return false
		}
		return len(values) == 0 || slices.ContainsFunc(values, func(v string) bool { return strings.Contains(data, v) })
	}
}

// under returns a registrySetting of a key or value created or set below
// the key path that ends with parent, one level down when direct.
func under(parent, action string, direct bool) registrySetting {
	return func(path, _, act string) bool {
		i := strings.Index(path, parent)
		if i < 0 || act != action {
			return false
		}
		rest := path[i+len(parent):]
		return rest != "" && (!direct || !strings.Contains(rest, `\`))
	}
}

// persistenceSettings are registry changes that make something run, or an
// account or share exist, that will outlast the attacker's session:
// an account created in the SAM (a key under Names, written by LSASS
// whatever tool asked), a share added, a pending IEAK group policy (an
// INF Windows runs at the next logon), a debugger or exit monitor of a
// program (Image File Execution Options, SilentProcessExit), Winlogon's
// shell or user-init program replaced, and LSA packages (loaded into
// LSASS) changed.
var persistenceSettings = []registrySetting{
	under(`\sam\domains\account\users\names\`, "registry-createkey", true),
	under(`\services\lanmanserver\shares\`, "registry-setvalue", true),
	under(`\ieak\grouppolicy\pendinggpos\`, "registry-setvalue", true),
	setTo([]string{`\debugger`}),
	setTo([]string{`\monitorprocess`}),
	func(path, data, action string) bool {
		return action == "registry-setvalue" && strings.Contains(path, `\winlogon\`) &&
			(strings.HasSuffix(path, `\winlogon\shell`) && strings.TrimSpace(data) != "explorer.exe" ||
				strings.HasSuffix(path, `\winlogon\userinit`) && strings.TrimRight(strings.TrimSpace(data), ",") != `c:\windows\system32\userinit.exe`)
	},
	setTo([]string{`\control\lsa\security packages`, `\control\lsa\authentication packages`, `\control\lsa\notification packages`}),
}

// defenceSettings are registry changes that turn a defence off: WDigest
// made to keep clear-text passwords in LSASS's memory (what Mimikatz then
// reads), and Microsoft Defender turned off by policy.
var defenceSettings = []registrySetting{
	setTo([]string{`\securityproviders\wdigest\uselogoncredential`}, "0x00000001"),
	setTo([]string{`\windows defender\disableantispyware`, `\real-time protection\disablerealtimemonitoring`,
		`\windows defender\disableantivirus`}, "0x00000001"),
}

// powershellSettings are registry changes that lift PowerShell's
// restrictions: the execution policy set to Bypass or Unrestricted, and
// the Constrained Language Mode policy (__PSLockdownPolicy) removed or
// set to anything but enforcing (4).
var powershellSettings = []registrySetting{
	setTo([]string{`\shellids\microsoft.powershell\executionpolicy`, `\policies\microsoft\windows\powershell\executionpolicy`},
		"bypass", "unrestricted"),
	func(path, data, action string) bool {
		return strings.HasSuffix(path, `\environment\__pslockdownpolicy`) &&
			(strings.HasPrefix(action, "registry-delete") || action == "registry-setvalue" && !strings.Contains(data, "0x00000004"))
	},
}

// registryKind matches the Sysmon registry events of one of settings:
// keyed by the host, the key or value its member.
func registryKind(settings []registrySetting) func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	return func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
		if !code(f, sysmon, "12", "13", "14") {
			return "", "", nil, false
		}
		path := str(f, "registry.path")
		lower, data, action := strings.ToLower(path), strings.ToLower(str(f, "registry.data.strings")), str(f, "event.action")
		if !slices.ContainsFunc(settings, func(is registrySetting) bool { return is(lower, data, action) }) {
			return "", "", nil, false
		}
		key, refs := hostKey(f)
		return key, path, nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
	}
}

// winrmCommand matches a process started by WinRM's remote shell
// (winrshost.exe, what `winrs -r:host command` runs) or by a PowerShell
// remoting session (wsmprovhost.exe): a command run on the host from
// another computer. Keyed by the host, the command line its member.
func winrmCommand(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !processCreated(f) {
		return "", "", nil, false
	}
	parent := strings.ToLower(baseName(str(f, "process.parent.executable")))
	exe := str(f, "process.executable")
	if parent != "winrshost.exe" && parent != "wsmprovhost.exe" || exe == "" || strings.EqualFold(baseName(exe), "conhost.exe") {
		return "", "", nil, false
	}
	member := str(f, "process.command_line")
	if member == "" {
		member = exe
	}
	key, refs := hostKey(f)
	return key, capMember(member), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// userFolders are the folders, in lower case, a user (and malware that
// runs as one) can write to and downloads land in.
var userFolders = []string{`\appdata\local\temp\`, `\appdata\roaming\`, `\downloads\`, `c:\users\public\`, `c:\windows\temp\`}

// scriptHosts are the programs, by name in lower case, that run the
// scripts and documents that download and start malware: PowerShell, the
// Windows Script Host, HTML applications and Office.
var scriptHosts = map[string]bool{
	"powershell.exe": true, "pwsh.exe": true, "wscript.exe": true, "cscript.exe": true, "mshta.exe": true,
	"winword.exe": true, "excel.exe": true, "powerpnt.exe": true, "outlook.exe": true, "msaccess.exe": true, "mspub.exe": true,
}

// droppedProgram matches a program in a user's folder (a temporary
// folder, a download, the public profile) started by a script host or an
// Office program: a script or document that wrote a program and ran it,
// as Emotet's PowerShell and macro droppers do. Keyed by the host.
func droppedProgram(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !processCreated(f) || !scriptHosts[strings.ToLower(baseName(str(f, "process.parent.executable")))] {
		return "", "", nil, false
	}
	exe := str(f, "process.executable")
	lower := strings.ToLower(exe)
	if !strings.HasSuffix(lower, ".exe") && !strings.HasSuffix(lower, ".scr") && !strings.HasSuffix(lower, ".com") ||
		!slices.ContainsFunc(userFolders, func(d string) bool { return strings.Contains(lower, d) }) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, baseName(str(f, "process.parent.executable")) + " started " + exe, nodes(refs,
		node(vigil.NodeUser, windowsAccount(f, "user"), false), node(vigil.NodeHash, str(f, "process.hash.sha256"), false)), true
}

// remoteGroupListing matches a Security 4799 (a local group's members
// listed) of a privileged group by an account over the network — no
// process of the host asked (CallerProcessName "-"), as BloodHound,
// PowerView and `net localgroup /domain` queries over SAMR do — and not
// by a computer account. Keyed by the host, the group its member.
func remoteGroupListing(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Security", "4799") || str(f, "winlog.event_data.CallerProcessName") != "-" {
		return "", "", nil, false
	}
	group := str(f, "winlog.event_data.TargetUserName")
	subject := str(f, "winlog.event_data.SubjectUserName")
	if !privilegedGroups[strings.ToLower(group)] || subject == "" || strings.HasSuffix(subject, "$") {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	account := parse.WindowsAccount(subject, str(f, "winlog.event_data.SubjectDomainName"))
	return key, group, nodes(refs, node(vigil.NodeUser, account, false)), true
}

// registrySymlink matches a registry symbolic link made by a program
// outside Windows' folder (Sysmon 13 of a SymbolicLinkValue): a key that
// redirects a privileged service's writes to another, the way
// registry-symlink escalations (CVE-2020-1377 and its kind) make SYSTEM
// write where a user cannot. Keyed by the host, the link and its target
// its member.
func registrySymlink(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, sysmon, "13") || !strings.HasSuffix(strings.ToLower(str(f, "registry.path")), `\symboliclinkvalue`) {
		return "", "", nil, false
	}
	if !broughtIn(str(f, "process.executable")) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, str(f, "registry.path") + " → " + str(f, "registry.data.strings"), nodes(refs,
		node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// spoolDriverWrite matches a library written into the print spooler's
// driver folder (Sysmon 11 under spool\drivers\) by a program other than
// Windows' own: the spooler then loads it as SYSTEM, as PrintNightmare
// (CVE-2021-34527) and SpoolFool (CVE-2022-21999) make it do. Keyed by
// the host, the library its member.
func spoolDriverWrite(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	return fileWritten(f, func(lower, exe string) bool {
		return strings.Contains(lower, `\spool\drivers\`) && strings.HasSuffix(lower, ".dll") && broughtIn(exe)
	})
}

// webServers are the processes, by name in lower case, that serve web
// applications on Windows: IIS's worker, Apache, Tomcat and the PHP
// and Java hosts behind them.
var webServers = map[string]bool{
	"w3wp.exe": true, "httpd.exe": true, "nginx.exe": true, "tomcat.exe": true, "tomcat8.exe": true, "tomcat9.exe": true,
	"php-cgi.exe": true, "java.exe": true, "node.exe": true,
}

// adminPorts are the ports of Windows' remote administration: SMB, RPC's
// endpoint mapper, RDP and WinRM.
var adminPorts = map[int64]bool{445: true, 135: true, 3389: true, 5985: true, 5986: true}

// webTunnel matches a web server's process connecting to an
// administration port (Sysmon 3): a web shell tunnelling RDP or SMB
// through the site (Tunna, reGeorg, Neo-reGeorg), which a web
// application never does. Keyed by the host, the process and the
// destination its member.
func webTunnel(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, sysmon, "3") {
		return "", "", nil, false
	}
	exe := str(f, "process.executable")
	port, _ := num(f, "destination.port")
	if !webServers[strings.ToLower(baseName(exe))] || !adminPorts[port] {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, baseName(exe) + " to " + str(f, "destination.ip") + ":" + strconv.FormatInt(port, 10), nodes(refs,
		node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// wmiOwnConsumers are the event consumers Windows and its components
// register themselves, by name in lower case.
var wmiOwnConsumers = []string{"scm event log consumer", "bvtconsumer"}

// wmiSubscription matches a permanent WMI event subscription made: an
// event consumer that runs a command or a script created (Sysmon 20), a
// filter bound to a consumer (Sysmon 21), or the subscription Windows
// logs itself (WMI-Activity 5861) — what runs a payload on an event,
// such as some minutes after boot, with no file in a startup place
// (ATT&CK T1546.003). Windows' own consumers are left out. Keyed by the
// host, the consumer its member.
func wmiSubscription(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	unquote := func(k string) string { return strings.Trim(str(f, "winlog.event_data."+k), ` "`) }
	var member string
	switch {
	case code(f, sysmon, "20"):
		typ := strings.ToLower(unquote("Type"))
		if unquote("Operation") != "Created" || typ != "command line" && typ != "script" {
			return "", "", nil, false
		}
		member = unquote("Name") + ": " + unquote("Destination")
	case code(f, sysmon, "21"):
		if unquote("Operation") != "Created" {
			return "", "", nil, false
		}
		member = unquote("Consumer")
	case code(f, "Microsoft-Windows-WMI-Activity/Operational", "5861"):
		// Its items are the event's UserData.
		member = strings.Trim(str(f, "winlog.user_data.CONSUMER"), ` "`)
		if member == "" {
			member = unquote("CONSUMER")
		}
	default:
		return "", "", nil, false
	}
	lower := strings.ToLower(member)
	if slices.ContainsFunc(wmiOwnConsumers, func(own string) bool { return strings.Contains(lower, own) }) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, capMember(member), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// capMember shortens a member (a command line) to what a finding's list
// shows.
func capMember(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

var windowsFootholdKinds = []windowsChangeKind{
	{name: "windows_startup_folder_write", codes: []string{"11"}, severity: vigil.SeverityHigh, title: "Persistence: program written to a Startup folder",
		match: startupFolder},
	{name: "windows_registry_persistence", codes: []string{"12", "13", "14"}, severity: vigil.SeverityMedium, title: "Persistence set in the registry",
		match: registryKind(persistenceSettings)},
	{name: "windows_registry_defence_off", codes: []string{"12", "13", "14"}, severity: vigil.SeverityHigh, title: "Defence turned off in the registry",
		match: registryKind(defenceSettings)},
	{name: "windows_powershell_policy_lifted", codes: []string{"12", "13", "14"}, severity: vigil.SeverityMedium, title: "PowerShell restrictions lifted",
		match: registryKind(powershellSettings)},
	{name: "windows_winrm_command", codes: []string{"1", "4688"}, severity: vigil.SeverityMedium, title: "Command run through WinRM", match: winrmCommand},
	{name: "windows_dropped_program", codes: []string{"1", "4688"}, severity: vigil.SeverityHigh, title: "Program in a user folder started by a script or document",
		match: droppedProgram},
	{name: "windows_obfuscated_powershell", codes: []string{"4104", "800", "1", "4688"}, severity: vigil.SeverityHigh, title: "Obfuscated PowerShell", match: obfuscatedPowerShell},
	{name: "windows_registry_symlink", codes: []string{"13"}, severity: vigil.SeverityHigh, title: "Registry symbolic link made by a program",
		match: registrySymlink},
	{name: "windows_spool_driver_write", codes: []string{"11"}, severity: vigil.SeverityHigh, title: "Library written to the print spooler's drivers",
		match: spoolDriverWrite},
	{name: "windows_web_tunnel", codes: []string{"3"}, severity: vigil.SeverityHigh, title: "Web server connecting to an administration port",
		match: webTunnel},
	{name: "windows_wmi_subscription", codes: []string{"20", "21", "5861"}, severity: vigil.SeverityHigh,
		title: "Persistence: WMI event subscription", match: wmiSubscription},
	{name: "windows_remote_group_listing", codes: []string{"4799"}, severity: vigil.SeverityLow, title: "Privileged local groups listed from another computer",
		match: remoteGroupListing},
}
