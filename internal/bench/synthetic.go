package bench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// syntheticLines generates n realistic lines of the four known sources
// (about 35 % firewall, 35 % DNS, 20 % auth, 10 % Suricata EVE), dated in
// the hour before now, with a fixed seed.
func syntheticLines(n int, now time.Time) []line {
	r := rand.New(rand.NewPCG(7, 11))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	attacker := func() string {
		if r.IntN(5) == 0 {
			return "203.0.113.7" // a heavy hitter, as real attacks have
		}
		return fmt.Sprintf("%s.%d", pick("203.0.113", "198.51.100", "192.0.2"), 1+r.IntN(254))
	}
	internal := func() string { return fmt.Sprintf("10.0.%d.%d", r.IntN(4), 2+r.IntN(250)) }
	users := []string{"root", "admin", "ubuntu", "deploy", "alice", "bob", "oracle", "test", "git", "postgres"}
	domains := []string{"www.example.com", "api.example.org", "updates.vendor.example", "cdn.example.net",
		"login.example.com", "mail.example.org", "xj3k9q.badexample.biz", "time.example.net"}
	out := make([]line, 0, n)
	for i := 0; i < n; i++ {
		t := now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		sys := t.Format(time.Stamp)
		pid := 1000 + r.IntN(30000)
		var l line
		switch k := r.IntN(100); {
		case k < 35:
			l.Source = "firewall"
			src, dst := attacker(), internal()
			switch r.IntN(3) {
			case 0:
				l.Raw = fmt.Sprintf("%s fw-01 kernel: [%d.%06d] [UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=%s DST=%s LEN=60 TOS=0x00 PREC=0x00 TTL=%d ID=%d DF PROTO=TCP SPT=%d DPT=%s WINDOW=29200 RES=0x00 SYN URGP=0",
					sys, r.IntN(900000), r.IntN(1000000), src, dst, 40+r.IntN(20), r.IntN(65535), 1024+r.IntN(60000), pick("22", "23", "80", "443", "445", "3389", "8080"))
			case 1:
				l.Raw = fmt.Sprintf("%s gw kernel: [netfilter-INPUT] IN=eth0 OUT= MAC=08:00:27:aa:bb:cc:52:54:00:12:35:02:08:00 SRC=%s DST=%s LEN=%d TOS=0x00 PREC=0x00 TTL=64 ID=%d PROTO=UDP SPT=%d DPT=%s LEN=%d",
					sys, internal(), dst, 60+r.IntN(400), r.IntN(65535), 1024+r.IntN(60000), pick("53", "123", "161", "514"), 40+r.IntN(400))
			default:
				l.Raw = fmt.Sprintf("%s fw-02 filterlog[%d]: 5,,,1000000103,igb0,match,%s,in,4,0x0,,%d,%d,0,DF,6,tcp,60,%s,%s,%d,%s,0,S,%d,,64240,,mss;sackOK;TS;nop;wscale",
					sys, pid, pick("block", "block", "pass"), 40+r.IntN(20), r.IntN(65535), src, dst, 1024+r.IntN(60000), pick("22", "80", "443", "3306"), r.Uint32())
			}
		case k < 70:
			l.Source = "dns"
			d := pick(domains...)
			switch r.IntN(3) {
			case 0:
				l.Raw = fmt.Sprintf("%s dnsmasq[%d]: query[%s] %s from %s", sys, pid, pick("A", "AAAA", "HTTPS"), d, internal())
			case 1:
				l.Raw = fmt.Sprintf("%s dnsmasq[%d]: reply %s is 93.184.%d.%d", sys, pid, d, r.IntN(256), r.IntN(256))
			default:
				l.Raw = fmt.Sprintf("%s ns1 named[%d]: client @0x7f3c2c0a8b60 %s#%d (%s): query: %s IN %s +E(0)K (10.0.0.53)",
					sys, pid, internal(), 1024+r.IntN(60000), d, d, pick("A", "AAAA", "MX", "TXT"))
			}
		case k < 90:
			l.Source = "auth"
			host := fmt.Sprintf("web-%02d", 1+r.IntN(8))
			ip, u := attacker(), pick(users...)
			switch r.IntN(6) {
			case 0, 1:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Failed password for %s from %s port %d ssh2", sys, host, pid, u, ip, 1024+r.IntN(60000))
			case 2:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Failed password for invalid user %s from %s port %d ssh2", sys, host, pid, u, ip, 1024+r.IntN(60000))
			case 3:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Accepted publickey for %s from %s port %d ssh2: ED25519 SHA256:Xq1s8mJd0pW2f7mF1xV7s1y0c9r4h3g2k6j5l8n7b3Q", sys, host, pid, u, internal(), 1024+r.IntN(60000))
			case 4:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s  user=%s", sys, host, pid, ip, u)
			default:
				l.Raw = fmt.Sprintf("%s %s sudo: %8s : TTY=pts/%d ; PWD=/home/%s ; USER=root ; COMMAND=/usr/bin/systemctl restart %s", sys, host, u, r.IntN(4), u, pick("nginx", "postgresql", "sshd"))
			}
		default:
			l.Source = "suricata"
			ts := t.UTC().Format("2006-01-02T15:04:05.000000-0700")
			flow := r.Int64N(1 << 50)
			src, dst := attacker(), internal()
			switch r.IntN(3) {
			case 0:
				sig := pick(`"signature_id":2001219,"rev":20,"signature":"ET SCAN Potential SSH Scan","category":"Attempted Information Leak","severity":2`,
					`"signature_id":2024897,"rev":3,"signature":"ET USER_AGENTS Go HTTP Client User-Agent","category":"Potentially Bad Traffic","severity":2`,
					`"signature_id":2210045,"rev":2,"signature":"SURICATA STREAM Packet with invalid ack","category":"Generic Protocol Command Decode","severity":3`)
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"alert","src_ip":"%s","src_port":%d,"dest_ip":"%s","dest_port":%s,"proto":"TCP","alert":{"action":"allowed","gid":1,%s}}`,
					ts, flow, src, 1024+r.IntN(60000), dst, pick("22", "80", "443"), sig)
			case 1:
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"dns","src_ip":"%s","src_port":%d,"dest_ip":"10.0.0.53","dest_port":53,"proto":"UDP","dns":{"type":"query","id":%d,"rrname":"%s","rrtype":"A","tx_id":0}}`,
					ts, flow, internal(), 1024+r.IntN(60000), r.IntN(65535), pick(domains...))
			default:
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"flow","src_ip":"%s","src_port":%d,"dest_ip":"%s","dest_port":443,"proto":"TCP","app_proto":"tls","flow":{"pkts_toserver":%d,"pkts_toclient":%d,"bytes_toserver":%d,"bytes_toclient":%d,"start":"%s","end":"%s","age":%d,"state":"closed","reason":"timeout","alerted":false}}`,
					ts, flow, internal(), 1024+r.IntN(60000), src, 1+r.IntN(50), 1+r.IntN(50), 60+r.IntN(90000), 60+r.IntN(900000), ts, ts, r.IntN(120))
			}
		}
		out = append(out, l)
	}
	return out
}
