package bench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The internet-edge mix (--files internet-edge): what a sensor facing the
// internet logs. Every line is generated, in the shapes of the real
// sensors' logs (the UFW and sshd lines of internetLines, and Suricata
// 6.0's EVE alerts as testdata/realsensors holds them), with generated
// addresses; the signatures are real Emerging Threats Open rules (ET Open,
// BSD licence: their sid and message as the rules files write them, the
// category and EVE severity of their classtype in Suricata's
// classification.config).
//
// The scanners are new on every firewall block and failed login, as in
// internet-unique, and 3 % of the lines are Suricata alerts of edgeScans,
// each from the source of the block or failed login just before (one
// alert a scanner). Planted among
// them, the same on every pass, are sources that do something worse — a
// brute force, a success after one, a severity-1 alert, a threat-intel hit
// — each of which should have an incident of its own (plantedSources).

// edgeSignature is one Emerging Threats signature: its sid and message,
// the protocol and port of the traffic it matches, and its classtype's
// category and priority (EVE's "severity").
type edgeSignature struct {
	sid       int
	msg       string
	proto     string // TCP, UDP or ICMP
	port      int
	category  string
	severity  int
	appProto  string
	userAgent string
}

// Categories of the classtypes used (classification.config).
const (
	catRecon      = "Attempted Information Leak"  // attempted-recon, 2
	catMiscAttack = "Misc Attack"                 // misc-attack, 2
	catScan       = "Detection of a Network Scan" // network-scan, 3
	catMisc       = "Misc activity"               // misc-activity, 3
	catAdmin      = "Attempted Administrator Privilege Gain"
)

// edgeScans are the signatures scanners trip: ET SCAN rules and the IP
// reputation rules (CINS, DShield, compromised hosts) an edge sensor sees
// fire all day, 32 of them.
var edgeScans = []edgeSignature{
	{2001219, "ET SCAN Potential SSH Scan", "TCP", 22, catRecon, 2, "", ""},
	{2002910, "ET SCAN Potential VNC Scan 5800-5820", "TCP", 5800, catRecon, 2, "", ""},
	{2002911, "ET SCAN Potential VNC Scan 5900-5920", "TCP", 5900, catRecon, 2, "", ""},
	{2008578, "ET SCAN Sipvicious Scan", "UDP", 5060, catRecon, 2, "", ""},
	{2011716, "ET SCAN Sipvicious User-Agent Detected (friendly-scanner)", "UDP", 5060, catRecon, 2, "", ""},
	{2008094, "ET SCAN External to Internal UPnP Request udp port 1900", "UDP", 1900, catRecon, 2, "", ""},
	{2009832, "ET SCAN DCERPC rpcmgmt ifids Unauthenticated BIND", "TCP", 135, catRecon, 2, "", ""},
	{2018489, "ET SCAN NMAP OS Detection Probe", "UDP", 161, catRecon, 2, "", ""},
	{2015754, "ET SCAN Nessus Netbios Scanning", "UDP", 137, catRecon, 2, "", ""},
	{2023510, "ET SCAN Redis SSH Key Overwrite Probing", "TCP", 6379, catMiscAttack, 2, "", ""},
	{2010494, "ET SCAN Multiple MySQL Login Failures Possible Brute Force Attempt", "TCP", 3306, catRecon, 2, "", ""},
	{2018317, "ET SCAN NMAP SIP Version Detect OPTIONS Scan", "TCP", 5060, catRecon, 2, "", ""},
	{2008093, "ET SCAN External to Internal UPnP Request tcp port 2555", "TCP", 2555, catRecon, 2, "", ""},
	{2010371, "ET SCAN Amap TCP Service Scan Detected", "TCP", 21, catRecon, 2, "", ""},
	{2008414, "ET SCAN Cisco Torch TFTP Scan", "UDP", 69, catRecon, 2, "", ""},
	{2010960, "ET SCAN WhatWeb Web Application Fingerprint Scanner Default User-Agent Detected", "TCP", 80, catRecon, 2, "http", "WhatWeb/0.4.7"},
	{2012726, "ET SCAN OpenVAS User-Agent Inbound", "TCP", 80, catRecon, 2, "http", "Mozilla/5.0 [en] (X11, U; OpenVAS 8.0.9)"},
	{2002664, "ET SCAN Nessus User Agent", "TCP", 80, catRecon, 2, "http", "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 5.1; Trident/4.0) (Nessus)"},
	{2018782, "ET SCAN Internet Scanning Project HTTP scan", "TCP", 80, catRecon, 2, "http", "Mozilla/5.0 zgrab/0.x"},
	{2010088, "ET SCAN Suspicious User-Agent Containing Web Scan/er Likely Web Scanner", "TCP", 80, catRecon, 2, "http", "Web Scanner"},
	{2019963, "ET SCAN Acunetix Accept HTTP Header detected scan in progress", "TCP", 80, catRecon, 2, "http", "Mozilla/5.0"},
	{2012754, "ET SCAN Possible SQLMAP Scan", "TCP", 80, catRecon, 2, "http", "sqlmap/1.7.2#stable (https://sqlmap.org)"},
	{2011914, "ET SCAN DirBuster Scan in Progress", "TCP", 80, catRecon, 2, "http", "DirBuster-1.0-RC1"},
	{2026464, "ET SCAN Hello Peppa! Scan Activity", "TCP", 80, catRecon, 2, "http", "Mozilla/5.0"},
	{2030272, "ET SCAN UPnP SUBSCRIBE Inbound - Possible CallStranger Scan (CVE-2020-12695)", "TCP", 2869, catRecon, 2, "http", "Mozilla/5.0"},
	{2403300, "ET CINS Active Threat Intelligence Poor Reputation IP group 1", "TCP", 23, catMiscAttack, 2, "", ""},
	{2403301, "ET CINS Active Threat Intelligence Poor Reputation IP group 2", "TCP", 445, catMiscAttack, 2, "", ""},
	{2402000, "ET DROP Dshield Block Listed Source group 1", "TCP", 3389, catMiscAttack, 2, "", ""},
	{2500000, "ET COMPROMISED Known Compromised or Hostile Host Traffic group 1", "TCP", 8080, catMiscAttack, 2, "", ""},
	{2500002, "ET COMPROMISED Known Compromised or Hostile Host Traffic group 2", "TCP", 1433, catMiscAttack, 2, "", ""},
	{2007802, "ET SCAN Grim's Ping ftp scanning tool", "TCP", 21, catScan, 3, "", ""},
	{2000575, "ET SCAN ICMP PING IPTools", "ICMP", 0, catMisc, 3, "", ""},
}

// edgeExploit is the severity-1 signature the planted exploiters trip.
var edgeExploit = edgeSignature{2034649, "ET EXPLOIT Apache log4j RCE Attempt (tcp ldap) (CVE-2021-44228)", "TCP", 389, catAdmin, 1, "", ""}

// edgeSensor is the address every alert and block is against.
const edgeSensor = "203.0.113.10"

// planted is a source that does something worse than scanning.
type planted struct {
	addr string
	n    int    // its number among them
	what string // brute force, brute force and login, severity-1 alert, threat intel
}

// plantedSources are the sources of the internet-edge mix that do
// something worse, each of which should stand apart from the roll-ups
// with an incident of its own: 4 that brute-force SSH, 3 that then log
// in, 3 that trip a severity-1 alert, 3 that a threat-intel feed lists
// (the bench gives the embedded server that feed).
func plantedSources() []planted {
	var out []planted
	for i, k := range []struct {
		what string
		n    int
	}{{"brute force", 4}, {"brute force and login", 3}, {"severity-1 alert", 3}, {"threat intel", 3}} {
		for j := range k.n {
			out = append(out, planted{addr: fmt.Sprintf("198.51.100.%d", 10*(i+1)+j+1), n: len(out), what: k.what})
		}
	}
	return out
}

// edgeLines generates n lines of the internet-edge mix (and the planted
// sources' lines on top), dated in the hour before now, with a fixed
// seed: 45 % UFW BLOCK, 35 % BIND queries, 17 % failed sshd logins (new
// sources, as internet-unique), 3 % Suricata alerts, each from the source
// of the block or failed login before it.
func edgeLines(n int, now time.Time) []line {
	r := rand.New(rand.NewPCG(23, 29))
	g := newInternetGen(r, true)
	out := make([]line, 0, n+200)
	last := "" // the newest scanner that no alert named yet
	for range n {
		t := now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		switch k := r.IntN(100); {
		case k < 3:
			if last == "" {
				// Alerts in a row: each from a scanner of its own (one
				// that trips three signatures is one that stands
				// apart), its block first.
				last = g.public()
				out = append(out, g.block(t, last))
			}
			out = append(out, edgeAlert(r, t, last, edgeScans[r.IntN(len(edgeScans))]))
			last = ""
		case k < 48:
			last = g.public()
			out = append(out, g.block(t, last))
		case k < 83:
			out = append(out, g.query(t))
		default:
			last = g.public()
			out = append(out, g.failed(t, last))
		}
	}
	for _, p := range plantedSources() {
		t := now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		out = append(out, g.block(t, p.addr), g.block(t, p.addr), edgeAlert(r, t, p.addr, edgeScans[r.IntN(len(edgeScans))]))
		switch p.what {
		case "brute force", "brute force and login":
			for range 8 {
				out = append(out, g.failed(t, p.addr))
			}
			if p.what == "brute force and login" {
				// Each into an account of its own: one account taken by
				// several sources would make them one incident.
				out = append(out, line{Source: "auth", Raw: fmt.Sprintf("%s edge-01 sshd[%d]: Accepted password for %s from %s port %d ssh2",
					t.Format(time.Stamp), 1000+r.IntN(30000), internetUsers[p.n%len(internetUsers)], p.addr, 1024+r.IntN(64000))})
			}
		case "severity-1 alert":
			out = append(out, edgeAlert(r, t, p.addr, edgeExploit))
		}
	}
	return out
}

// edgeAlert is Suricata's EVE alert of sig from src against the sensor,
// in the shape of Suricata 6.0's (testdata/realsensors).
func edgeAlert(r *rand.Rand, t time.Time, src string, sig edgeSignature) line {
	stamp := t.UTC().Format("2006-01-02T15:04:05.000000+0000")
	flow := 100000000000000 + r.Int64N(900000000000000)
	ports := ""
	if sig.proto != "ICMP" {
		ports = fmt.Sprintf(`"src_port":%d,`, 1024+r.IntN(64000))
	}
	dst := ""
	if sig.proto != "ICMP" {
		dst = fmt.Sprintf(`"dest_port":%d,`, sig.port)
	}
	icmp := ""
	if sig.proto == "ICMP" {
		icmp = `"icmp_type":8,"icmp_code":0,`
	}
	http := ""
	if sig.appProto == "http" {
		http = fmt.Sprintf(`,"http":{"hostname":"%s","url":"/","http_user_agent":"%s","http_method":"GET","protocol":"HTTP/1.1","length":0},"app_proto":"http"`,
			edgeSensor, sig.userAgent)
	}
	raw := fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"alert","src_ip":"%s",%s"dest_ip":"%s",%s"proto":"%s",%s"pkt_src":"wire/pcap",`+
		`"alert":{"action":"allowed","gid":1,"signature_id":%d,"rev":%d,"signature":"%s","category":"%s","severity":%d}%s,`+
		`"direction":"to_server","flow":{"pkts_toserver":%d,"pkts_toclient":0,"bytes_toserver":%d,"bytes_toclient":0,"start":"%s","src_ip":"%s","dest_ip":"%s"}}`,
		stamp, flow, src, ports, edgeSensor, dst, sig.proto, icmp, sig.sid, 2+r.IntN(20), sig.msg, sig.category, sig.severity, http,
		1+r.IntN(3), 60+r.IntN(400), stamp, src, edgeSensor)
	return line{Source: "suricata", Raw: raw}
}

// edgeIntelFeed is the threat-intel feed of the planted sources that one
// lists: a plain list, one address a line.
func edgeIntelFeed() string {
	s := "# vigil bench internet-edge: the planted sources a feed lists\n"
	for _, p := range plantedSources() {
		if p.what == "threat intel" {
			s += p.addr + "\n"
		}
	}
	return s
}
