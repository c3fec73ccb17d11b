#!/bin/bash
# portscan: nmap against a host whose iptables logs and drops every TCP
# SYN to a port it does not serve (LOG prefix "IPTABLES DROP: ", the
# kernel's line written by rsyslog to kern.log). Three cases:
#   portscan_syn: nmap -sS --top-ports 50 from 203.0.113.66;
#   portscan_connect: nmap -sT --top-ports 30 from 203.0.113.66;
#   portscan_loopback: nmap -sS --top-ports 30 127.0.0.1 on the host.
# Counted on the scanner's side: the ports from nmap's own output, the SYN
# packets by a tcpdump next to the scanner (a connect scan's kernel
# retransmits SYNs that nmap never lists).
source "$(dirname "$0")/lib.sh"
OPEN=53,80,2222

vx iptables -F INPUT
vx iptables -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
vx iptables -A INPUT -p tcp -m multiport --dports $OPEN -j ACCEPT
vx iptables -A INPUT -p udp --dport 53 -j ACCEPT
vx iptables -A INPUT -p tcp --syn -j LOG --log-prefix "IPTABLES DROP: "
vx iptables -A INPUT -p tcp --syn -j DROP

# scan NAME NS IFACE SRC DST NMAP_ARGS...
scan() {
	local name=$1 ns=$2 iface=$3 src=$4 dst=$5; shift 5
	local dir=$RS_CASES/$name
	mkdir -p "$dir"
	rsyslog_start "$dir"
	ip netns exec "$ns" tcpdump -i "$iface" -n -U -w "$RS_WORK/$name.pcap" \
		"src host $src and dst host $dst and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn" 2> "$RS_WORK/$name.tcpdump.err" &
	local tcpdump=$!
	for _ in $(seq 50); do grep -q listening "$RS_WORK/$name.tcpdump.err" && break; sleep 0.1; done
	ip netns exec "$ns" nmap -n --packet-trace "$@" -oN "$dir/nmap.out" -oX "$RS_WORK/$name.xml" "$dst" > "$RS_WORK/$name.trace" 2>&1
	sleep 2
	kill -INT "$tcpdump"; wait "$tcpdump" || true
	rsyslog_stop
	tcpdump -n -r "$RS_WORK/$name.pcap" 2>/dev/null > "$RS_WORK/$name.syns"
	python3 - "$name" "$src" "$dst" "$OPEN" "$dir/nmap.out" "$RS_WORK/$name.syns" "$RS_WORK/$name.xml" "$*" <<'PY' | "$RS_DIR/tools/truth.py" "$dir/truth.json"
import collections, json, re, sys
name, src, dst, open_, nmap_out, syns, xml, args = sys.argv[1:]
open_ports = {int(p) for p in open_.split(",")}
# nmap's own report: every port it scanned, by state.
out = open(nmap_out).read()
m = re.search(r'<scaninfo [^>]*numservices="(\d+)" services="([\d,\-]+)"', open(xml).read())
scanned = set()
for part in m.group(2).split(","):
    a, _, b = part.partition("-")
    scanned.update(range(int(a), int(b or a) + 1))
if len(scanned) != int(m.group(1)):
    sys.exit("nmap's port list does not add up")
per_port = collections.Counter()
for l in open(syns):
    m2 = re.search(r" > [\d.]+\.(\d+): Flags \[S\]", l)
    if m2:
        per_port[int(m2.group(1))] += 1
denied = {p: n for p, n in per_port.items() if p not in open_ports}
if set(per_port) != scanned:
    sys.exit("the SYNs captured are not to nmap's ports: %s" % sorted(set(per_port) ^ scanned))
states = collections.Counter(re.findall(r"^\d+/tcp\s+(\w+)", out, re.M))
filtered = re.search(r"Not shown: (\d+) filtered", out)
if filtered:
    states["filtered"] += int(filtered.group(1))
loop = src.startswith("127.")
print(json.dumps({
    "scenario": name,
    "what": "nmap %s %s from %s; iptables logs and drops SYNs to every port but %s" % (args, dst, src, open_),
    "logs": {"kern.log": "firewall", "rfc3339/kern.log": "firewall"},
    "host": "bookworm-lab", "source_ip": src, "destination_ip": dst,
    "ports_scanned": len(scanned), "open_ports_scanned": sorted(open_ports & scanned),
    "nmap_states": dict(states),
    "syn_packets": sum(per_port.values()),
    "denied_ports": len(denied), "denied_packets": sum(denied.values()),
    "observations": [
        {"detector": "port_scan", "key": src, "counts": {"packets": sum(denied.values()), "ports": len(denied)},
         "optional": loop}],
    "note": "the host scanning itself: whether loopback sources are reported is a policy (optional here); if reported, the counts must be these" if loop else "",
}))
PY
	log "$name: $(jq -r '"\(.denied_packets) SYNs denied on \(.denied_ports) ports"' "$dir/truth.json" 2>/dev/null || true)"
}

scan portscan_syn "$NET_NS" rs-a0 "$ATTACKER_IP" "$VICTIM_IP" -sS --top-ports 50
sleep 2
scan portscan_connect "$NET_NS" rs-a0 "$ATTACKER_IP" "$VICTIM_IP" -sT --top-ports 30
sleep 2
scan portscan_loopback "$VICTIM_NS" lo 127.0.0.1 127.0.0.1 -sS --top-ports 30
vx iptables -F INPUT
