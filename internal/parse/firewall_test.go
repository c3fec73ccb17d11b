package parse

import "testing"

func TestFirewallGolden(t *testing.T) { checkGolden(t, "firewall", "firewall") }

func TestDatasetCoverage_firewall(t *testing.T) {
	datasetCoverage(t, "firewall", func(ev Event) bool {
		_, src := ev["source.ip"]
		_, dst := ev["destination.ip"]
		return src || dst
	})
}

func TestParseFirewall(t *testing.T) {
	tests := []struct {
		name string
		line string
		time string
		want map[string]any
	}{
		{
			name: "ufw block",
			line: "Oct 30 10:09:23 vm-1 kernel: [UFW BLOCK] IN=lo OUT= MAC=00:00:00:00:00:00:00:00:00:00:00:00:08:00 SRC=127.0.0.2 DST=127.0.0.53 LEN=104 TOS=0x00 PREC=0x00 TTL=64 ID=16820 DF PROTO=TCP SPT=50616 DPT=66 LEN=84",
			want: map[string]any{"rule.name": "UFW BLOCK", "event.action": "block", "event.outcome": "failure",
				"source.ip": "127.0.0.2", "destination.ip": "127.0.0.53", "source.port": int64(50616), "destination.port": int64(66),
				"network.transport": "tcp", "network.type": "ipv4", "network.bytes": int64(104),
				"observer.ingress.interface.name": "lo", "observer.egress.interface.name": nil, "host.name": "vm-1"},
		},
		{
			name: "iptables with uptime prefix",
			line: "Feb 20 10:47:14 gw kernel: [  341.493787] [netfilter-INPUT] IN=eth0 OUT= MAC=08:00:27:aa:bb:cc:52:54:00:12:35:02:08:00 SRC=192.0.2.53 DST=192.0.2.235 LEN=72 TOS=0x00 PREC=0x00 TTL=64 ID=25053 DF PROTO=UDP SPT=53 DPT=43648 LEN=52",
			time: "2026-02-20T10:47:14Z",
			want: map[string]any{"rule.name": "netfilter-INPUT", "event.action": "log", "event.outcome": nil,
				"source.ip": "192.0.2.53", "destination.port": int64(43648), "network.transport": "udp",
				"source.mac": "52-54-00-12-35-02", "destination.mac": "08-00-27-AA-BB-CC", "ip.ttl": int64(64)},
		},
		{
			name: "icmp error keeps the outer addresses",
			line: "Jan  8 03:37:09 DENY: IN=eth0 OUT= MAC=02:00:5e:10:00:05:02:00:5e:10:00:06:08:00 SRC=192.0.2.71 DST=192.0.2.83 LEN=88 TOS=0x00 PREC=0x00 TTL=118 ID=21684 PROTO=ICMP TYPE=3 CODE=3 [SRC=192.0.2.83 DST=198.51.100.191 LEN=60 TOS=0x00 PREC=0x00 TTL=54 ID=0 DF PROTO=UDP SPT=21458 DPT=62936 LEN=40 ]",
			want: map[string]any{"source.ip": "192.0.2.71", "destination.ip": "192.0.2.83", "network.transport": "icmp",
				"icmp.type": int64(3), "icmp.code": int64(3), "source.port": nil, "destination.port": nil,
				"network.bytes": int64(88), "rule.name": "DENY", "event.action": "block", "process.name": nil},
		},
		{
			name: "ubiquiti rule",
			line: "Jan  5 20:17:01 edge1 kernel: [WAN_OUT-2000-A]IN=eth1 OUT=eth0 MAC=02:00:5e:10:00:01:02:00:5e:10:00:0c:08:00 SRC=10.4.0.9 DST=198.51.100.25 LEN=265 TOS=0x00 PREC=0x00 TTL=63 ID=51768 DF PROTO=TCP SPT=43189 DPT=443 WINDOW=159 RES=0x00 ACK PSH URGP=0",
			want: map[string]any{"rule.name": "WAN_OUT-2000-A", "rule.id": "2000", "event.action": "accept", "event.outcome": "success",
				"tcp.flags": []string{"ACK", "PSH"}, "observer.egress.interface.name": "eth0"},
		},
		{
			name: "filterlog ipv4 tcp",
			line: "Sep 28 10:38:09 pfSense filterlog: 53,,,1000000301,em0,match,block,in,4,0x0,,64,420,0,none,6,tcp,460,10.0.2.2,10.0.2.15,53742,22,420,PA,29633380:29633800,3617062173,65535,,",
			want: map[string]any{"event.action": "block", "event.outcome": "failure", "rule.id": "1000000301",
				"source.ip": "10.0.2.2", "destination.ip": "10.0.2.15", "source.port": int64(53742), "destination.port": int64(22),
				"network.transport": "tcp", "network.type": "ipv4", "tcp.flags": []string{"PSH", "ACK"},
				"observer.ingress.interface.name": "em0", "network.direction": "ingress", "network.bytes": int64(460)},
		},
		{
			name: "filterlog ipv6 udp rfc5424",
			line: `<134>1 2022-09-06T19:00:06+02:00 opnsense filterlog 57126 - [meta sequenceId="2667099"] 98,,,881dd59a3e942966c90498ac104715a0,re0,match,pass,in,6,0x00,0x0ea87,51,udp,17,73,2008:8a0:702e:ce00:acc6:c7ee:fa01:2f8a,2c02:2454:ada:d900::1738,6881,51918,73`,
			time: "2022-09-06T17:00:06Z",
			want: map[string]any{"event.action": "pass", "event.outcome": "success", "rule.id": "881dd59a3e942966c90498ac104715a0",
				"source.ip": "2008:8a0:702e:ce00:acc6:c7ee:fa01:2f8a", "destination.ip": "2c02:2454:ada:d900::1738",
				"source.port": int64(6881), "destination.port": int64(51918), "network.transport": "udp", "network.type": "ipv6",
				"ip.ttl": int64(51), "host.name": "opnsense", "process.name": "filterlog", "process.pid": int64(57126)},
		},
		{
			name: "filterlog icmp",
			line: "Feb 27 10:47:16 pfSense filterlog[555]: 60,,,1000000103,igb0,match,block,in,4,0x0,,64,12345,0,none,1,icmp,84,203.0.113.77,192.0.2.1,request,4242,1",
			want: map[string]any{"network.transport": "icmp", "icmp.type": int64(8), "source.ip": "203.0.113.77",
				"destination.ip": "192.0.2.1", "source.port": nil},
		},
		{
			name: "proxmox",
			line: "0 3 PVEFW-HOST-IN 20/Jun/2022:13:09:14 +0200 policy DROP: IN=vmbr0.94 MAC=24:8a:07:9a:2a:f2:24:8a:07:50:2c:9e:08:00 SRC=10.3.94.11 DST=10.3.94.12 LEN=52 TOS=0x00 PREC=0xC0 TTL=255 ID=64317 DF PROTO=UDP SPT=49152 DPT=3784 LEN=32",
			time: "2022-06-20T11:09:14Z",
			want: map[string]any{"rule.name": "PVEFW-HOST-IN", "event.action": "drop", "event.outcome": "failure",
				"source.ip": "10.3.94.11", "destination.port": int64(3784), "observer.ingress.interface.name": "vmbr0.94"},
		},
		{
			name: "proxmox ipv6 reject",
			line: "101 1 tap101i0-IN 20/Jun/2022:13:13:32 +0200 PVEFW-reject: IN=fwbr101i0 OUT=fwbr101i0 PHYSIN=fwln101i0 PHYSOUT=tap101i0 MAC=24:8a:07:50:2c:ef:5e:29:c3:7c:13:a3:86:dd SRC=2a0a:1580::a DST=2a0a:1580::17 LEN=40 TC=0 FLOWLBL=634336 HOPLIMIT=64 PROTO=TCP SPT=59368 DPT=22 SEQ=3146558957 ACK=0 WINDOW=64800 SYN",
			want: map[string]any{"rule.name": "tap101i0-IN", "event.action": "reject", "network.type": "ipv6",
				"tcp.flags": []string{"SYN"}, "ip.ttl": int64(64)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ts, ok := parseFirewall([]byte(tt.line), goldenRef)
			if !ok {
				t.Fatal("not parsed")
			}
			if tt.time != "" && !ts.Equal(mustTime(t, tt.time)) {
				t.Errorf("time = %v, want %s", ts, tt.time)
			}
			wantFields(t, ev, tt.want)
			checkEventValues(t, ev)
		})
	}
	for _, line := range []string{
		"May  5 20:46:45 office-gw user.info kernel: TTL=126 ID=15317 DF PROTO=TCP SPT=59344 DPT=443 WINDOW=8212 RES=0x00 ACK PSH URGP=0",
		"Feb 27 10:47:18 gw kernel: [UFW BLOCK] IN=eth0 OUT= MAC=08:00:27:aa:bb",
		"1,,,2,em0,match,block,in,9,x",
		"",
	} {
		if _, _, ok := parseFirewall([]byte(line), goldenRef); ok {
			t.Errorf("fragment %q parsed", line)
		}
	}
}

func FuzzParseFirewall(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, _, ok := parseFirewall(line, goldenRef)
		if ok && ev == nil {
			t.Fatal("ok with a nil event")
		}
		checkEventValues(t, ev)
	})
}

func BenchmarkParseFirewall(b *testing.B) { benchmarkParse(b, "firewall") }
