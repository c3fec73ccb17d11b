package parse

import (
	"strings"

	"github.com/vigil-soc/vigil"
)

// Windows event ids the parser maps to ECS, by channel. The actions are
// Winlogbeat's event.action names where it has them.
const (
	chanSecurity   = "security"
	chanSystem     = "system"
	chanSysmon     = "microsoft-windows-sysmon/operational"
	chanPowerShell = "microsoft-windows-powershell/operational"
	chanDefender   = "microsoft-windows-windows defender/operational"
)

// mapWindows sets the ECS fields of the events a SOC reads. Every other
// event keeps its identity and its winlog.event_data.* items.
func mapWindows(ev Event, d *windowsDoc) {
	g := d.get
	channel := strings.ToLower(d.channel)
	switch channel {
	case chanSecurity:
		mapSecurity(ev, d.eventID, g)
	case chanSystem:
		if d.eventID == "7045" {
			ev.act("service-installed", "configuration", "")
			ev.set("service.name", g("ServiceName"))
			ev.set("service.type", g("ServiceType"))
			ev.setProcess("process", "", g("ImagePath"))
			ev.setWindowsUser("user", g("AccountName"), "")
		}
	case chanSysmon:
		mapSysmon(ev, d.eventID, g)
	case chanDefender:
		mapDefender(ev, d.eventID, g)
	case "windows powershell":
		ev.set("windows.category", map[string]string{"400": "ps_classic_start", "600": "ps_classic_provider_start"}[d.eventID])
	case chanPowerShell:
		ev.set("windows.category", map[string]string{"4103": "ps_module", "4104": "ps_script"}[d.eventID])
		if d.eventID == "4104" {
			ev.act("execute-remote-command", "process", "")
			ev.set("powershell.file.script_block_text", capString(g("ScriptBlockText")))
			ev.set("powershell.file.script_block_id", g("ScriptBlockId"))
			ev.set("file.path", g("Path"))
		}
	}
}

// accessRights are the names Windows gives the access rights an object
// access event lists by message number (AccessList: "%%1538 %%4417"), as
// its rendered message and Event Viewer show them (msobjs.dll): the
// standard rights and a file's or a pipe's.
var accessRights = map[string]string{
	"%%1537": "DELETE", "%%1538": "READ_CONTROL", "%%1539": "WRITE_DAC", "%%1540": "WRITE_OWNER",
	"%%1541": "SYNCHRONIZE", "%%1542": "ACCESS_SYS_SEC",
	"%%4416": "ReadData (or ListDirectory)", "%%4417": "WriteData (or AddFile)",
	"%%4418": "AppendData (or AddSubdirectory or CreatePipeInstance)", "%%4419": "ReadEA",
	"%%4420": "WriteEA", "%%4421": "Execute/Traverse", "%%4422": "DeleteChild",
	"%%4423": "ReadAttributes", "%%4424": "WriteAttributes",
}

// nameAccessRights writes each right of an AccessList with its name
// after its number, one a line ("%%4417 WriteData (or AddFile)"), so
// that a Sigma rule finds it by either (SigmaHQ's rules ask for
// `AccessList|contains: '%%4417'` and for `'WriteData'` alike); a number
// it does not know stays alone. The raw line keeps the list as it came.
func nameAccessRights(list string) string {
	if !strings.Contains(list, "%%") {
		return list
	}
	var b strings.Builder
	for _, code := range strings.Fields(list) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(code)
		if name, ok := accessRights[code]; ok {
			b.WriteString(" " + name)
		}
	}
	return b.String()
}

// mapSecurity maps the Security log's events.
func mapSecurity(ev Event, id string, g func(string) string) {
	if v, ok := ev["winlog.event_data.AccessList"].(string); ok {
		ev["winlog.event_data.AccessList"] = capString(nameAccessRights(v))
	}
	subject := func() {
		ev.setWindowsUser("user", g("SubjectUserName"), g("SubjectDomainName"))
		ev.setSID("user.id", g("SubjectUserSid"))
	}
	target := func(prefix string) {
		ev.setWindowsUser(prefix, g("TargetUserName"), g("TargetDomainName"))
		ev.setSID(prefix+".id", g("TargetUserSid"))
		ev.setSID(prefix+".id", g("TargetSid"))
	}
	logonAddr := func() {
		ev.setWindowsAddr("source.ip", g("IpAddress"))
		ev.setWindowsPort("source.port", g("IpPort"))
		ev.setWorkstation(g("WorkstationName"))
	}
	switch id {
	case "4624", "4625":
		target("user")
		logonAddr()
		ev.set("winlog.logon.type", g("LogonType"))
		ev.set("winlog.logon.id", g("TargetLogonId"))
		ev.setProcess("process", g("ProcessName"), "")
		if id == "4624" {
			ev.act("logged-in", "authentication", "success")
			return
		}
		ev.act("logon-failed", "authentication", "failure")
		ev.set("event.reason", windowsStatus(g("SubStatus"), g("Status")))
		ev.attempt("attempt", 1)
	case "4648":
		subject()
		ev.setWindowsUser("user.target", g("TargetUserName"), g("TargetDomainName"))
		ev.act("logged-in-explicit", "authentication", "success")
		ev.set("destination.domain", g("TargetServerName"))
		logonAddr()
		ev.setProcess("process", g("ProcessName"), "")
	case "4634", "4647":
		target("user")
		ev.act("logged-out", "authentication", "success")
		ev.set("winlog.logon.type", g("LogonType"))
	case "4672":
		subject()
		ev.act("logged-in-special", "iam", "success")
	case "4688":
		ev["windows.category"] = "process_creation"
		subject()
		ev.act("created-process", "process", "success")
		ev.setProcess("process", g("NewProcessName"), g("CommandLine"))
		ev.setWindowsPID("process.pid", g("NewProcessId"))
		ev.setProcess("process.parent", g("ParentProcessName"), "")
		ev.setWindowsPID("process.parent.pid", g("ProcessId"))
	case "4697":
		subject()
		ev.act("service-installed", "configuration", "success")
		ev.set("service.name", g("ServiceName"))
		ev.setProcess("process", "", g("ServiceFileName"))
	case "4698":
		subject()
		ev.act("scheduled-task-created", "configuration", "success")
		ev.set("winlog.task_name", g("TaskName"))
	case "4720":
		subject()
		target("user.target")
		ev.act("added-user-account", "iam", "success")
	case "4728", "4732", "4756":
		subject()
		ev.act("added-member-to-group", "iam", "success")
		ev.set("group.name", g("TargetUserName"))
		ev.set("group.domain", g("TargetDomainName"))
		ev.setWindowsUser("user.target", memberName(g("MemberName")), "")
		ev.set("user.target.id", g("MemberSid"))
	case "4740":
		subject()
		ev.setWindowsUser("user.target", g("TargetUserName"), "")
		ev.setSID("user.target.id", g("TargetSid"))
		ev.act("locked-out-user-account", "iam", "success")
		// TargetDomainName of a lockout is the computer the logons came from.
		ev.setWorkstation(g("TargetDomainName"))
	case "4768", "4769", "4771":
		target("user")
		if _, ok := ev["user.domain"]; !ok && id == "4771" {
			// A 4771 names no domain: the account is one of the realm
			// the domain controller that logs it serves, its own domain
			// (as its 4768s name it), so that one account is one node.
			if d, ok := ev["host.domain"].(string); ok {
				ev.set("user.domain", d)
			}
		}
		ev.setWindowsAddr("source.ip", g("IpAddress"))
		ev.setWindowsPort("source.port", g("IpPort"))
		ev.set("service.name", g("ServiceName"))
		status := strings.ToLower(strings.TrimSpace(g("Status")))
		if status == "" {
			status = strings.ToLower(strings.TrimSpace(g("FailureCode")))
		}
		ev.set("winlog.event_data.Status", status)
		action := map[string]string{"4768": "kerberos-authentication-ticket-requested",
			"4769": "kerberos-service-ticket-requested", "4771": "kerberos-preauth-failed"}[id]
		if id == "4771" || (status != "" && status != "0x0") {
			ev.act(action, "authentication", "failure")
			ev.set("event.reason", kerberosStatus(status))
			if kerberosGuess(id, status) {
				ev.attempt("attempt", 1)
			}
			return
		}
		ev.act(action, "authentication", "success")
	case "4776":
		ev.setWindowsUser("user", g("TargetUserName"), "")
		ev.setWorkstation(g("Workstation"))
		status := strings.ToLower(strings.TrimSpace(g("Status")))
		if status != "" && status != "0x0" {
			ev.act("credential-validated", "authentication", "failure")
			ev.set("event.reason", windowsStatus(status, ""))
			ev.attempt("attempt", 1)
			return
		}
		ev.act("credential-validated", "authentication", "success")
	case "1102":
		subject()
		ev.act("audit-log-cleared", "configuration", "success")
	case "4703":
		// A token right enabled or disabled: by whom, in which process
		// (the rights stay in winlog.event_data: EnabledPrivilegeList).
		subject()
		ev.setProcess("process", g("ProcessName"), "")
		ev.setWindowsPID("process.pid", g("ProcessId"))
		ev.act("token-right-adjusted", "iam", "success")
	case "5140", "5145":
		// A network share (5140) or a file or pipe in one (5145) opened
		// from an address: who, from where (the share stays in
		// winlog.event_data: ShareName, RelativeTargetName, AccessList).
		subject()
		ev.setWindowsAddr("source.ip", g("IpAddress"))
		ev.setWindowsPort("source.port", g("IpPort"))
		ev.act(map[string]string{"5140": "network-share-object-accessed", "5145": "network-share-object-access-checked"}[id], "file", "success")
	}
}

// mapDefender maps Microsoft Defender Antivirus's detections: 1006 and
// 1116 (malware detected), 1015 (suspicious behaviour detected), 1117
// (action taken on a detection, the same Detection ID as its 1116): the
// file the threat was found in, the process that touched it and the user
// it ran as (the threat's name stays winlog.event_data.Threat Name).
func mapDefender(ev Event, id string, g func(string) string) {
	switch id {
	case "1006", "1015", "1116":
		ev.act("malware-detected", "malware", "")
	case "1117":
		ev.act("malware-action-taken", "malware", "")
	default:
		return
	}
	ev.setWindowsUser("user", g("Detection User"), "")
	ev.setProcess("process", g("Process Name"), "")
	// Path is "file:_C:\dir\x.ps1" (or containerfile:_, and several
	// joined by ';' when one detection names more).
	path := g("Path")
	if _, p, ok := strings.Cut(path, ":_"); ok {
		path = p
	}
	if i := strings.IndexByte(path, ';'); i >= 0 {
		path = path[:i]
	}
	ev.set("file.path", capString(path))
}

// kerberosGuess says whether a failed Kerberos request is one guess of a
// password or an account name: pre-authentication failed (4771) and the
// failures of a ticket request (4768) that log no 4771 of their own. A
// failed service ticket (4769) is no guess.
func kerberosGuess(id, status string) bool {
	switch id {
	case "4771":
		return true
	case "4768":
		// 0x18 (bad password) of a 4768 is logged with a 4771 for the
		// same request where both are audited: it counts once, there.
		return status != "0x18"
	}
	return false
}

// memberName takes the account name of a group member's distinguished
// name ("CN=John,OU=…" → John); another form is kept whole.
func memberName(dn string) string {
	dn = strings.TrimSpace(dn)
	if strings.HasPrefix(strings.ToUpper(dn), "CN=") {
		v := dn[3:]
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' {
				i++
				continue
			}
			if v[i] == ',' {
				return strings.ReplaceAll(v[:i], `\`, "")
			}
		}
		return v
	}
	return dn
}

// windowsStatus names an NTSTATUS of a failed logon.
func windowsStatus(sub, status string) string {
	for _, s := range []string{strings.ToLower(strings.TrimSpace(sub)), strings.ToLower(strings.TrimSpace(status))} {
		if s == "" || s == "0x0" {
			continue
		}
		if r, ok := ntStatus[s]; ok {
			return r
		}
		return s
	}
	return ""
}

var ntStatus = map[string]string{
	"0xc0000064": "user name does not exist",
	"0xc000006a": "wrong password",
	"0xc000006d": "bad user name or password",
	"0xc000006f": "outside authorized hours",
	"0xc0000070": "unauthorized workstation",
	"0xc0000071": "password expired",
	"0xc0000072": "account disabled",
	"0xc0000193": "account expired",
	"0xc0000224": "password must change",
	"0xc0000234": "account locked out",
	"0xc000015b": "logon type not granted",
	"0xc0000133": "clocks out of sync",
}

// kerberosStatus names a Kerberos result code.
func kerberosStatus(s string) string {
	if r, ok := kerberosCodes[s]; ok {
		return r
	}
	return s
}

var kerberosCodes = map[string]string{
	"0x6":  "client not found in Kerberos database",
	"0x12": "client credentials revoked (disabled, locked out or expired)",
	"0x17": "password expired",
	"0x18": "pre-authentication failed (bad password)",
	"0x25": "clock skew too great",
}

// sysmonCategories are the Sigma categories of Sysmon's events, by id
// (SigmaHQ's sysmon mapping); registry events are sorted by their type.
var sysmonCategories = map[string]string{
	"1": "process_creation", "2": "file_change", "3": "network_connection", "4": "sysmon_status",
	"5": "process_termination", "6": "driver_load", "7": "image_load", "8": "create_remote_thread",
	"9": "raw_access_thread", "10": "process_access", "11": "file_event", "13": "registry_set",
	"14": "registry_rename", "15": "create_stream_hash", "16": "sysmon_status", "17": "pipe_created",
	"18": "pipe_created", "19": "wmi_event", "20": "wmi_event", "21": "wmi_event", "22": "dns_query",
	"23": "file_delete", "24": "clipboard_change", "25": "process_tampering", "26": "file_delete",
	"255": "sysmon_error",
}

// mapSysmon maps Sysmon's events.
func mapSysmon(ev Event, id string, g func(string) string) {
	cat := sysmonCategories[id]
	if id == "12" {
		cat = "registry_add"
		if strings.HasPrefix(strings.ToLower(g("EventType")), "delete") {
			cat = "registry_delete"
		}
	}
	ev.set("windows.category", cat)
	ev.setProcess("process", g("Image"), g("CommandLine"))
	ev.setWindowsPID("process.pid", g("ProcessId"))
	ev.set("process.entity_id", g("ProcessGuid"))
	ev.setWindowsUser("user", g("User"), "")
	ev.set("rule.name", g("RuleName"))
	switch id {
	case "1":
		ev.act("process-created", "process", "")
		ev.setProcess("process.parent", g("ParentImage"), g("ParentCommandLine"))
		ev.setWindowsPID("process.parent.pid", g("ParentProcessId"))
		ev.set("process.working_directory", g("CurrentDirectory"))
		ev.set("process.pe.original_file_name", g("OriginalFileName"))
		ev.setHashes("process", g("Hashes"))
	case "3":
		ev.act("network-connection", "network", "")
		ev.setWindowsAddr("source.ip", g("SourceIp"))
		ev.setWindowsPort("source.port", g("SourcePort"))
		ev.setWindowsAddr("destination.ip", g("DestinationIp"))
		ev.setWindowsPort("destination.port", g("DestinationPort"))
		ev.set("destination.domain", g("DestinationHostname"))
		ev.setWorkstation(g("SourceHostname"))
		ev.set("network.transport", strings.ToLower(g("Protocol")))
	case "7":
		ev.act("image-loaded", "process", "")
		ev.set("file.path", g("ImageLoaded"))
		ev.setHashes("file", g("Hashes"))
	case "8":
		ev.act("create-remote-thread", "process", "")
		ev.setProcess("process", g("SourceImage"), "")
		ev.setWindowsPID("process.pid", g("SourceProcessId"))
		ev.set("winlog.event_data.TargetImage", g("TargetImage"))
	case "10":
		ev.act("process-accessed", "process", "")
		ev.setProcess("process", g("SourceImage"), "")
		ev.setWindowsPID("process.pid", g("SourceProcessId"))
		ev.setWindowsUser("user", g("SourceUser"), "")
	case "11", "23", "26":
		ev.act(map[string]string{"11": "file-created", "23": "file-deleted", "26": "file-deleted"}[id], "file", "")
		ev.set("file.path", g("TargetFilename"))
		ev.setHashes("file", g("Hashes"))
	case "12", "13", "14":
		ev.act("registry-"+strings.ToLower(strings.TrimSpace(g("EventType"))), "registry", "")
		ev.set("registry.path", g("TargetObject"))
		ev.set("registry.data.strings", g("Details"))
	case "22":
		ev.act("dns-query", "network", "")
		ev.set("dns.question.name", strings.TrimSuffix(g("QueryName"), "."))
		var ips []string
		for _, tok := range strings.Split(g("QueryResults"), ";") {
			tok = strings.TrimPrefix(strings.TrimSpace(tok), "::ffff:")
			if _, v := NodeOf(vigil.NodeIP, tok); v != "" && len(ips) < 32 {
				ips = append(ips, v)
			}
		}
		if len(ips) > 0 {
			ev["dns.resolved_ip"] = ips
		}
	}
	if f := ev["file.path"]; f != nil {
		p := f.(string)
		ev["file.name"] = p[strings.LastIndexAny(p, `\/`)+1:]
	}
}
