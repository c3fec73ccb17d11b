package sigma

import "strings"

// windowsSources are the sources of Windows events (internal/parse,
// windows.go): Winlogbeat's documents and vigil import's.
var windowsSources = []string{"windows", "winlogbeat", "wineventlog", "evtx"}

// windowsServices maps a Sigma windows service to the event log channel
// it names (SigmaHQ's windows-services.yml).
var windowsServices = map[string]string{
	"security":                             "Security",
	"system":                               "System",
	"application":                          "Application",
	"sysmon":                               "Microsoft-Windows-Sysmon/Operational",
	"powershell":                           "Microsoft-Windows-PowerShell/Operational",
	"powershell-classic":                   "Windows PowerShell",
	"taskscheduler":                        "Microsoft-Windows-TaskScheduler/Operational",
	"wmi":                                  "Microsoft-Windows-WMI-Activity/Operational",
	"windefend":                            "Microsoft-Windows-Windows Defender/Operational",
	"bits-client":                          "Microsoft-Windows-Bits-Client/Operational",
	"ntlm":                                 "Microsoft-Windows-NTLM/Operational",
	"dns-server":                           "DNS Server",
	"driver-framework":                     "Microsoft-Windows-DriverFrameworks-UserMode/Operational",
	"codeintegrity-operational":            "Microsoft-Windows-CodeIntegrity/Operational",
	"firewall-as":                          "Microsoft-Windows-Windows Firewall With Advanced Security/Firewall",
	"terminalservices-localsessionmanager": "Microsoft-Windows-TerminalServices-LocalSessionManager/Operational",
	"appxdeployment-server":                "Microsoft-Windows-AppXDeploymentServer/Operational",
	"smbclient-security":                   "Microsoft-Windows-SmbClient/Security",
	"openssh":                              "OpenSSH/Operational",
	"shell-core":                           "Microsoft-Windows-Shell-Core/Operational",
	"applocker":                            "Microsoft-Windows-AppLocker/EXE and DLL",
	"msexchange-management":                "MSExchange Management",
	"printservice-admin":                   "Microsoft-Windows-PrintService/Admin",
	"printservice-operational":             "Microsoft-Windows-PrintService/Operational",
	"diagnosis-scripted":                   "Microsoft-Windows-Diagnosis-Scripted/Operational",
	"ldap_debug":                           "Microsoft-Windows-LDAP-Client/Debug",
	"sysmon/operational":                   "Microsoft-Windows-Sysmon/Operational",
}

// windowsCategories maps a Sigma windows category to the values of
// windows.category, which the parser sets from the channel and event id
// (Sysmon 1 and Security 4688 are process_creation, …).
var windowsCategories = map[string][]string{
	"process_creation":          {"process_creation"},
	"network_connection":        {"network_connection"},
	"process_access":            {"process_access"},
	"image_load":                {"image_load"},
	"file_event":                {"file_event"},
	"file_delete":               {"file_delete"},
	"file_change":               {"file_change"},
	"dns_query":                 {"dns_query"},
	"create_remote_thread":      {"create_remote_thread"},
	"create_stream_hash":        {"create_stream_hash"},
	"driver_load":               {"driver_load"},
	"pipe_created":              {"pipe_created"},
	"process_termination":       {"process_termination"},
	"raw_access_thread":         {"raw_access_thread"},
	"wmi_event":                 {"wmi_event"},
	"sysmon_status":             {"sysmon_status"},
	"sysmon_error":              {"sysmon_error"},
	"process_tampering":         {"process_tampering"},
	"clipboard_change":          {"clipboard_change"},
	"registry_add":              {"registry_add"},
	"registry_delete":           {"registry_delete"},
	"registry_set":              {"registry_set"},
	"registry_rename":           {"registry_rename"},
	"registry_event":            {"registry_add", "registry_delete", "registry_set", "registry_rename"},
	"ps_script":                 {"ps_script"},
	"ps_module":                 {"ps_module"},
	"ps_classic_start":          {"ps_classic_start"},
	"ps_classic_provider_start": {"ps_classic_provider_start"},
}

// resolveWindows maps a windows log source: a service is a channel, a
// category the events of its kind, neither every Windows event.
func resolveWindows(t *target, ls LogSource) error {
	cat := strings.ToLower(ls.Category)
	svc := strings.ToLower(ls.Service)
	switch {
	case cat != "" && svc != "":
		return fail("logsource", "windows with both a category and a service: give one")
	case cat != "":
		values, ok := windowsCategories[cat]
		if !ok {
			return fail("logsource.category", "windows category %q: no Windows event maps to it (supported: %s)", ls.Category, strings.Join(sortedKeys(windowsCategories), ", "))
		}
		t.add(windowsSources, &requirement{field: "windows.category", values: values})
	case svc != "":
		channel, ok := windowsServices[svc]
		if !ok {
			return fail("logsource.service", "windows service %q: no channel known for it", ls.Service)
		}
		// Requirements compare with lower-case values.
		t.add(windowsSources, &requirement{field: "winlog.channel", values: []string{strings.ToLower(channel)}})
	default:
		t.add(windowsSources, nil)
	}
	return nil
}

// windowsFields maps the Sigma field names of Windows rules whose event
// data Vigil's parser also maps to ECS under one name for both events that
// carry them (Sysmon 1's Image and Security 4688's NewProcessName are both
// process.executable). Any other field is the event's own data item,
// winlog.event_data.<name>, as Windows names it.
var windowsFields = map[string]string{
	"EventID":           "event.code",
	"Channel":           "winlog.channel",
	"Provider_Name":     "winlog.provider_name",
	"Computer":          "winlog.computer_name",
	"ComputerName":      "winlog.computer_name",
	"Image":             "process.executable",
	"ParentImage":       "process.parent.executable",
	"CommandLine":       "process.command_line",
	"ParentCommandLine": "process.parent.command_line",
	"OriginalFileName":  "process.pe.original_file_name",
	"CurrentDirectory":  "process.working_directory",
	"NewProcessName":    "process.executable",
	"ParentProcessName": "process.parent.executable",
}

// mapWindowsField returns the field a Windows rule's field name means.
func mapWindowsField(name string) (string, bool) {
	if f, ok := windowsFields[name]; ok {
		return f, true
	}
	if strings.IndexByte(name, '.') > 0 {
		return mapField(name)
	}
	if !dataName(name) {
		return "", false
	}
	return "winlog.event_data." + name, true
}

// dataName reports whether name can be an EventData item's name.
func dataName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// mapCorrelationField maps a field a correlation rule groups or counts
// by. The rule names no log source of its own: a field Vigil maps for
// every source keeps that mapping, and a name in Windows' event data
// style (capitalized: TargetUserName, IpAddress) is the Windows events'
// data item, as their rules name it.
func mapCorrelationField(name string) (string, bool) {
	if f, ok := mapField(name); ok {
		return f, true
	}
	if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		return mapWindowsField(name)
	}
	return "", false
}
