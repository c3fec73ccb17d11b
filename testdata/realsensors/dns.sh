#!/bin/bash
# dns: DGA-like and tunnel-like look-ups (dig) against BIND and dnsmasq.
# Two cases:
#   dns_bind: BIND logs queries through syslog (the syslog file) and to
#     its own file (named-queries.log). 203.0.113.66, refused by an ACL,
#     looks up 20 DGA names (A) and 30 tunnel names (TXT);
#     203.0.113.67, allowed, 10 DGA names of which 5 twice, and 20 tunnel
#     names of which 5 twice; 203.0.113.20 normal names of the lab zone.
#   dns_dnsmasq: dnsmasq (log-queries, through syslog) forwarding to BIND
#     (query log off): 203.0.113.66 looks up 20 DGA names of which 5 twice
#     (the second answered from dnsmasq's cache) and 30 tunnel names;
#     203.0.113.20 normal names.
# Counted from the names dig was asked for and dig's own status lines.
source "$(dirname "$0")/lib.sh"

named_start() { # QUERYLOG QUERYFILE
	rm -rf "$RS_WORK/named"; mkdir -p "$RS_WORK/named"
	cp "$RS_DIR"/conf/named/*.db "$RS_WORK/named/"
	sed -e "s|@WORK@|$RS_WORK|g" -e "s|@QUERYLOG@|$1|g" -e "s|@QUERYFILE@|$2|g" \
		"$RS_DIR/conf/named.conf" > "$RS_WORK/named.conf"
	named-checkconf "$RS_WORK/named.conf"
	(cd "$RS_WORK" && vx named -c "$RS_WORK/named.conf" -f) &
	# Ready when it listens: no look-up of ours besides the scenario's.
	for _ in $(seq 100); do [ "$(vx ss -Hlun 'sport = :53' | wc -l)" -ge 2 ] && break; sleep 0.1; done
	sleep 0.5
}
named_stop() { [ -f "$RS_WORK/named.pid" ] && kill "$(cat "$RS_WORK/named.pid")" 2>/dev/null || true; sleep 1; }

# ask SRC SERVER TYPE NAME...: one dig per name; one JSON line each.
ask() {
	local src=$1 server=$2 type=$3 name status; shift 3
	for name in "$@"; do
		status=$(ax dig +tries=1 +time=2 -b "$src" "@$server" "$name" "$type" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
		printf '{"client":"%s","name":"%s","type":"%s","status":"%s"}\n' "$src" "$name" "$type" "${status:-TIMEOUT}" >> "$RS_WORK/lookups.jsonl"
	done
}

truth() { # CASE_DIR NAME WHAT LOGS_JSON
	python3 - "$2" "$3" "$4" "$RS_WORK/lookups.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$1/truth.json"
import collections, json, sys
name, what, logs, path = sys.argv[1:]
look = [json.loads(l) for l in open(path)]
def kind(n):
    return "tunnel" if n.endswith(".t.xfer-lab.net") else "normal" if n.endswith(".lab.example") else "dga"
clients = {}
for l in look:
    c = clients.setdefault(l["client"], {})
    k = c.setdefault(kind(l["name"]), {"lookups": 0, "names": set(), "status": collections.Counter()})
    k["lookups"] += 1
    k["names"].add(l["name"])
    k["status"][l["status"]] += 1
obs = []
for client, kinds in sorted(clients.items()):
    for k, d in sorted(kinds.items()):
        if k == "dga":
            obs.append({"detector": "dns_dga", "key": client, "counts": {"lookups": d["lookups"], "names": len(d["names"])}})
        if k == "tunnel" and len(d["names"]) >= 20:
            obs.append({"detector": "dns_tunnel", "key": client + "|xfer-lab.net", "counts": {"lookups": d["lookups"], "names": len(d["names"])}})
        d["names"] = len(d["names"])
        d["status"] = dict(d["status"])
print(json.dumps({"scenario": name, "what": what, "logs": json.loads(logs), "host": "bookworm-lab",
                  "clients": clients, "lookups": len(look), "distinct_names": len({l["name"] for l in look}),
                  "lookup_list": look, "observations": obs,
                  "note": "a look-up is one question asked by the client (dig), however many lines the server writes about it; a refused look-up is still a look-up"}))
PY
}

N=$RS_DIR/tools/names.py
mapfile -t dga66 < <($N dga 20 66); mapfile -t tun66 < <($N tunnel 30 660)
mapfile -t dga67 < <($N dga 10 67); mapfile -t tun67 < <($N tunnel 20 670)
mapfile -t normal < <($N normal 6 20)

dir=$RS_CASES/dns_bind
mkdir -p "$dir"; rm -f "$RS_WORK/lookups.jsonl" "$dir/named-queries.log"
rsyslog_start "$dir"
named_start yes "$dir/named-queries.log"
ask "$USER_IP" "$VICTIM_IP" A "${normal[@]}"
ask "$ATTACKER_IP" "$VICTIM_IP" A "${dga66[@]}"
ask "$ATTACKER2_IP" "$VICTIM_IP" A "${dga67[@]}" "${dga67[@]:0:5}"
ask "$ATTACKER_IP" "$VICTIM_IP" TXT "${tun66[@]}"
ask "$ATTACKER2_IP" "$VICTIM_IP" TXT "${tun67[@]}" "${tun67[@]:0:5}"
named_stop
rsyslog_stop
truth "$dir" dns_bind "dig against BIND 9.18 (query log through syslog and to a file); 203.0.113.66 refused by allow-query" \
	'{"syslog": "dns", "rfc3339/syslog": "dns", "named-queries.log": "dns"}'

dir=$RS_CASES/dns_dnsmasq
mkdir -p "$dir"; rm -f "$RS_WORK/lookups.jsonl"
rsyslog_start "$dir"
named_start no "$RS_WORK/named-queries.log"
vx dnsmasq -k --conf-file=/dev/null --no-resolv --no-hosts --server="$VICTIM_IP" --listen-address="$DNSMASQ_IP" \
	--bind-interfaces --log-queries --pid-file="$RS_WORK/dnsmasq.pid" &
sleep 1
ask "$USER_IP" "$DNSMASQ_IP" A "${normal[@]}"
ask "$ATTACKER_IP" "$DNSMASQ_IP" A "${dga66[@]}" "${dga66[@]:0:5}"
ask "$ATTACKER_IP" "$DNSMASQ_IP" TXT "${tun66[@]}"
kill "$(cat "$RS_WORK/dnsmasq.pid")" 2>/dev/null || true
named_stop
rsyslog_stop
truth "$dir" dns_dnsmasq "dig against dnsmasq 2.90 (log-queries, through syslog) forwarding to BIND" \
	'{"syslog": "dns", "rfc3339/syslog": "dns"}'
log "dns: done"
