package detect

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// The WindowsChange kinds of attack tools at work on a host, from Sysmon:
// a thread created in another process (process injection), and the named
// pipes remote-execution services and attack tools open.

// sysmon is Sysmon's channel.
const sysmon = "Microsoft-Windows-Sysmon/Operational"

// threadCreators are the Windows processes that create threads in others
// as part of their work (csrss.exe a console program's Ctrl+C handler,
// the session and service managers their children's first threads), by
// path in lower case: not injection when they do. Sysmon's own sample
// configurations leave them out the same way.
var threadCreators = map[string]bool{}

func init() {
	for _, dir := range []string{`c:\windows\system32\`, `c:\windows\syswow64\`} {
		for _, name := range []string{"csrss.exe", "wininit.exe", "winlogon.exe", "services.exe", "smss.exe",
			"lsass.exe", "svchost.exe", "dwm.exe", "audiodg.exe", `wbem\wmiprvse.exe`} {
			threadCreators[dir+name] = true
		}
	}
	threadCreators["system"] = true
}

// remoteThread matches a Sysmon 8 (CreateRemoteThread) of one process in
// another that is not a Windows process's own work: the source and
// target, keyed by the host.
func remoteThread(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, sysmon, "8") {
		return "", "", nil, false
	}
	source := str(f, "process.executable")
	target := str(f, "winlog.event_data.TargetImage")
	if source == "" || strings.EqualFold(source, target) || threadCreators[strings.ToLower(source)] ||
		installed(source) || strings.EqualFold(str(f, "winlog.event_data.StartFunction"), "CtrlRoutine") {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, baseName(source) + " into " + baseName(target), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false),
		node(vigil.NodeHash, str(f, "process.hash.sha256"), false)), true
}

// installed reports whether a program is one installed on the host, in
// Program Files or Defender's folder: antivirus, virtualization tools and
// debuggers create threads in other processes as their work, and the
// tools an attacker brings run from a user's folder, a download, a share
// or Windows' own folders (PowerShell).
func installed(exe string) bool {
	lower := strings.ToLower(exe)
	for _, dir := range []string{`c:\program files\`, `c:\program files (x86)\`, `c:\programdata\microsoft\windows defender\`} {
		if strings.HasPrefix(lower, dir) {
			return true
		}
	}
	return false
}

// broughtIn reports whether a program is one brought to the host: named,
// and outside Windows' folder and the installed programs' — a user's
// folder, a download or a share.
func broughtIn(exe string) bool {
	return exe != "" && !strings.HasPrefix(strings.ToLower(exe), `c:\windows\`) && !installed(exe)
}

// runnable reports whether a path, in lower case, names a file Windows
// runs: a program, a library or a script (executableExts).
func runnable(lower string) bool {
	return slices.ContainsFunc(executableExts, func(ext string) bool { return strings.HasSuffix(lower, ext) })
}

// baseName returns what follows a Windows path's last backslash.
func baseName(p string) string { return p[strings.LastIndexByte(p, '\\')+1:] }

// pipeEvent returns the name of the pipe a Sysmon 17 (created) or 18
// (connected) names, in lower case, and whether f is one.
func pipeEvent(f parse.Event) (string, bool) {
	if !code(f, sysmon, "17", "18") {
		return "", false
	}
	return strings.ToLower(str(f, "winlog.event_data.PipeName")), true
}

// remoteExecPipe reports whether a pipe is one a remote-execution service
// opens for the commands it runs: PsExec's service (`\PSEXESVC`, and the
// `\<service>-<computer>-<number>-stdin` of each command's streams, which
// keep that form when the service is renamed), PAExec, RemCom and
// CSExec.
func remoteExecPipe(name string) bool {
	for _, p := range []string{`\psexesvc`, `\paexec`, `\remcom_`, `\csexecsvc`} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range []string{"-stdin", "-stdout", "-stderr"} {
		if strings.HasSuffix(name, s) && strings.Count(name, "-") >= 3 {
			return true
		}
	}
	return false
}

// attackToolPipe reports whether a pipe is one attack tools open under
// their default names, or the pipe within a pipe's path by which the
// "potato" privilege escalations (RoguePotato, PrintSpoofer) make a
// service connect to them (`\RoguePotato\pipe\epmapper`).
func attackToolPipe(name string) bool {
	for _, p := range []string{`\kekeo_tsssp_endpoint`, `\msagent_`, `\postex_`, `\msse-`} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.Contains(name, `\pipe\`)
}

// pipeKind matches the pipe events whose pipe is, by is: keyed by the
// host, the pipe its member.
func pipeKind(is func(string) bool) func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	return func(f parse.Event) (string, string, []vigil.NodeRef, bool) {
		name, ok := pipeEvent(f)
		if !ok || !is(name) {
			return "", "", nil, false
		}
		key, refs := hostKey(f)
		return key, str(f, "winlog.event_data.PipeName"), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false),
			node(vigil.NodeHash, str(f, "process.hash.sha256"), false)), true
	}
}

// executableExts are the extensions of files Windows runs, a service's
// binary, a DLL or a script, in lower case.
var executableExts = []string{".exe", ".dll", ".sys", ".scr", ".com", ".pif", ".cpl", ".bat", ".cmd", ".ps1", ".vbs", ".vbe",
	".js", ".jse", ".wsf", ".hta", ".msi"}

// adminShareWrite matches a Security 5145 that opens an executable in an
// administrative share (C$, ADMIN$: a name ending in $, not IPC$) for
// writing (%%4417, WriteData or AddFile) from another computer: how
// PsExec, RemCom, smbexec and their kind copy what they then run as a
// service, and how a file is staged on a host before it runs. Keyed by
// the address it came from, so that it is one incident with what the
// firewall or Suricata saw of that address.
func adminShareWrite(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Security", "5145") {
		return "", "", nil, false
	}
	share := strings.ToLower(str(f, "winlog.event_data.ShareName"))
	file := str(f, "winlog.event_data.RelativeTargetName")
	lower := strings.ToLower(file)
	if !strings.HasSuffix(share, "$") || strings.HasSuffix(share, `\ipc$`) ||
		!strings.Contains(str(f, "winlog.event_data.AccessList"), "%%4417") || !runnable(lower) {
		return "", "", nil, false
	}
	ip := str(f, "source.ip")
	if a, err := netip.ParseAddr(ip); err != nil || a.IsLoopback() || a.IsUnspecified() {
		return "", "", nil, false // the host's own
	}
	return ip, str(f, "winlog.event_data.ShareName") + `\` + file, nodes(node(vigil.NodeIP, ip, true),
		node(vigil.NodeUser, windowsAccount(f, "user"), false), node(vigil.NodeHost, str(f, "host.name"), false)), true
}

// debugPrivilege matches a Security 4703 that enables SeDebugPrivilege —
// the right to open any process, LSASS's memory among them, which
// Mimikatz asks for first (`privilege::debug`) — in a program outside
// Windows' and the installed programs' folders: the tools an attacker
// brings run from a user's folder, a download or a share. Keyed by the
// host.
func debugPrivilege(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	if !code(f, "Security", "4703") || !strings.Contains(str(f, "winlog.event_data.EnabledPrivilegeList"), "SeDebugPrivilege") {
		return "", "", nil, false
	}
	exe := str(f, "process.executable")
	if !broughtIn(exe) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, exe, nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

var windowsToolKinds = []windowsChangeKind{
	{name: "windows_debug_privilege", codes: []string{"4703"}, severity: vigil.SeverityHigh, title: "Debug privilege enabled by an unusual program",
		match: debugPrivilege},
	{name: "windows_admin_share_write", codes: []string{"5145"}, severity: vigil.SeverityHigh, title: "Lateral movement: executable written to an admin share",
		match: adminShareWrite},
	{name: "windows_remote_thread", codes: []string{"8"}, severity: vigil.SeverityHigh, title: "Process injection: remote thread created", match: remoteThread},
	{name: "windows_remote_exec_pipe", codes: []string{"17", "18"}, severity: vigil.SeverityMedium, title: "Remote execution service pipe (PsExec style)",
		match: pipeKind(remoteExecPipe)},
	{name: "windows_attack_tool_pipe", codes: []string{"17", "18"}, severity: vigil.SeverityHigh, title: "Attack tool named pipe", match: pipeKind(attackToolPipe)},
}
