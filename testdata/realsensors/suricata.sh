#!/bin/bash
# suricata: web requests to a local HTTP server (python3 -m http.server),
# captured with tcpdump, then read by Suricata (Debian's suricata.yaml,
# its engine-event rules from /etc/suricata/rules and our
# conf/local.rules), which writes EVE JSON. Two cases:
#   suricata_loopback: the client is 127.0.0.1, captured on lo;
#   suricata_net: the scanner is 203.0.113.66 and a normal user
#     203.0.113.20, captured on the server's interface.
# Each: 3 normal requests (a browser's user agent), 4 with Nikto's user
# agent, 3 that ask for /etc/passwd by path traversal. The alerts expected
# are counted from the requests made.
#
# Checksums: lo and veth offload them, so every captured TCP packet has a
# checksum the kernel never filled in. Read with Debian's suricata.yaml
# (checksum validation "auto", which only gives up after 1000 packets),
# Suricata discards them all: one "SURICATA TCPv4 invalid checksum" alert
# per packet and no HTTP at all. That EVE is kept as it came, for the
# net capture, as a third case:
#   suricata_checksum_noise: suricata_net's capture.pcap, Debian defaults.
# The two attack cases are read with -k none, as Suricata's documentation
# advises for captures made where checksums are offloaded.
source "$(dirname "$0")/lib.sh"
NIKTO='Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:000001)'
BROWSER='Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0'

mkdir -p "$RS_WORK/www"
echo '<html><body>lab</body></html>' > "$RS_WORK/www/index.html"
printf 'User-agent: *\nDisallow:\n' > "$RS_WORK/www/robots.txt"
cat /etc/suricata/rules/*.rules "$RS_DIR/conf/local.rules" > "$RS_WORK/all.rules"

vx python3 -m http.server 80 --bind 0.0.0.0 --directory "$RS_WORK/www" > "$RS_WORK/http.log" 2>&1 &
httpd=$!
sleep 1

# requests NS ATTACKER USER HOST: the three kinds of request, the normal
# ones from USER; appends one JSON line each.
requests() {
	local ns=$1 attacker=$2 user=$3 host=$4 p
	req() { # CLASS UA PATH [curl args]
		local class=$1 ua=$2 path=$3; shift 3
		local src=$attacker; [ "$class" != normal ] || src=$user
		local code
		code=$(ip netns exec "$ns" curl -s -o /dev/null -w '%{http_code}' --interface "$src" -A "$ua" "$@" "http://$host$path")
		printf '{"class":"%s","source":"%s","path":"%s","status":%s}\n' "$class" "$src" "$path" "$code" >> "$RS_WORK/requests.jsonl"
		sleep 0.3
	}
	for p in / /index.html /robots.txt; do req normal "$BROWSER" "$p"; done
	for p in / /admin/ /phpinfo.php /.git/config; do req scanner "$NIKTO" "$p"; done
	req traversal "$BROWSER" /../../../../etc/passwd --path-as-is
	req traversal "$BROWSER" '/download?file=../../../../etc/passwd' --path-as-is
	req traversal "$BROWSER" '/index.php?page=/etc/passwd'
}

# capture NAME NS IFACE -- then the request commands
run_case() {
	local name=$1 ns=$2 iface=$3; shift 3
	local dir=$RS_CASES/$name
	mkdir -p "$dir"; rm -f "$RS_WORK/requests.jsonl" "$dir/eve.json"
	ip netns exec "$ns" tcpdump -i "$iface" -n -U -s 0 -w "$dir/capture.pcap" 'tcp port 80' 2> "$RS_WORK/$name.tcpdump.err" &
	local tcpdump=$!
	for _ in $(seq 50); do grep -q listening "$RS_WORK/$name.tcpdump.err" && break; sleep 0.1; done
	"$@"
	sleep 1
	kill -INT "$tcpdump"; wait "$tcpdump" || true
	rm -rf "$RS_WORK/suricata-$name"; mkdir -p "$RS_WORK/suricata-$name"
	suricata -c /etc/suricata/suricata.yaml -S "$RS_WORK/all.rules" -k none -r "$dir/capture.pcap" -l "$RS_WORK/suricata-$name" \
		> "$RS_WORK/suricata-$name/stdout" 2>&1
	cp "$RS_WORK/suricata-$name/eve.json" "$dir/eve.json"
	cp "$RS_WORK/requests.jsonl" "$RS_WORK/requests-$name.jsonl"
	python3 - "$name" "$RS_WORK/requests.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$dir/truth.json"
import collections, json, sys
name, path = sys.argv[1:]
reqs = [json.loads(l) for l in open(path)]
by = collections.Counter((r["class"], r["source"]) for r in reqs)
sids = {"scanner": ("9000001", "LAB SCAN Nikto web scanner user agent"),
        "traversal": ("9000002", "LAB WEB_SERVER /etc/passwd in URI (path traversal)")}
alerts, obs = [], []
for (cls, src), n in sorted(by.items()):
    if cls in sids:
        alerts.append({"sid": sids[cls][0], "signature": sids[cls][1], "source_ip": src, "count": n})
        obs.append({"detector": "suricata_alert", "key": sids[cls][0] + "|" + src, "counts": {"alerts": n}})
print(json.dumps({
    "scenario": name,
    "what": "HTTP requests captured with tcpdump and read by Suricata: normal (browser user agent), Nikto's user agent, /etc/passwd by path traversal",
    "logs": {"eve.json": "suricata"},
    "requests": {"%s from %s" % k: n for k, n in sorted(by.items())},
    "request_list": reqs,
    "expected_alerts": alerts,
    "observations": obs,
    "note": "Suricata's engine events (SURICATA ... checksum, stream) that the capture gives are capture noise, not an attack: no observation is expected for them",
}))
PY
	log "$name: $(grep -c '"event_type":"alert"' "$dir/eve.json") alerts in $(wc -l < "$dir/eve.json") EVE lines"
}

run_case suricata_loopback "$VICTIM_NS" lo requests "$VICTIM_NS" 127.0.0.1 127.0.0.1 127.0.0.1
run_case suricata_net "$VICTIM_NS" rs-v0 requests "$NET_NS" "$ATTACKER_IP" "$USER_IP" "$VICTIM_IP"
kill "$httpd" 2>/dev/null || true

dir=$RS_CASES/suricata_checksum_noise
mkdir -p "$dir"
rm -rf "$RS_WORK/suricata-noise"; mkdir -p "$RS_WORK/suricata-noise"
suricata -c /etc/suricata/suricata.yaml -S "$RS_WORK/all.rules" -r "$RS_CASES/suricata_net/capture.pcap" -l "$RS_WORK/suricata-noise" \
	> "$RS_WORK/suricata-noise/stdout" 2>&1
cp "$RS_WORK/suricata-noise/eve.json" "$dir/eve.json"
python3 - "$RS_WORK/requests-suricata_net.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$dir/truth.json"
import collections, json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
print(json.dumps({
    "scenario": "suricata_checksum_noise",
    "what": "suricata_net's capture.pcap read with Debian's suricata.yaml as shipped (checksum validation auto, no -k none): every packet's TCP checksum was offloaded, so Suricata discards them",
    "pcap": "../suricata_net/capture.pcap",
    "logs": {"eve.json": "suricata"},
    "requests": {"%s from %s" % k: n for k, n in sorted(collections.Counter((r["class"], r["source"]) for r in reqs).items())},
    "expected_alerts": [],
    "observations": [],
    "note": "only engine events (SURICATA TCPv4 invalid checksum, severity 3): capture noise, no attack is visible to Suricata; no observation is expected",
}))
PY
log "suricata_checksum_noise: $(grep -c '"event_type":"alert"' "$dir/eve.json") alerts in $(wc -l < "$dir/eve.json") EVE lines"
