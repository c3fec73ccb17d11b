#!/bin/bash
# peers.sh [CASE...]: runs the peers on the corpus's logs and writes, per
# case, peers.json: what fail2ban 1.0.2 (fail2ban-regex with the filters
# that apply: sshd, pam-generic, named-refused) and CrowdSec 1.4.6 (its
# offline hub: syslog-logs, sshd, iptables, suricata, bind9 parsers and
# scenarios, run in time-machine mode over the file) count and decide.
# Traditional-format files only (the rfc3339 copies hold the same lines).
# CrowdSec runs from a private copy of /etc/crowdsec under $RS_WORK; the
# system's configuration is left alone.
source "$(dirname "$0")/lib.sh"
CS=$RS_WORK/crowdsec
HUB=/var/lib/crowdsec/hub
CS_PORT=18089

crowdsec_setup() {
	rm -rf "$CS"; mkdir -p "$CS/data" "$CS/dump"
	cp -a /etc/crowdsec "$CS/etc"
	rm -f "$CS/etc/acquis.yaml" "$CS/etc/local_api_credentials.yaml" "$CS/etc/online_api_credentials.yaml"
	: > "$CS/etc/acquis.yaml"
	cp /var/lib/crowdsec/data/* "$CS/data/" 2>/dev/null || true
	rm -f "$CS/data/crowdsec.db"*
	local c p s
	for c in crowdsecurity/iptables crowdsecurity/suricata mstilkerich/bind9; do
		ln -sf "$HUB/collections/$c.yaml" "$CS/etc/collections/${c#*/}.yaml"
	done
	for p in crowdsecurity/iptables-logs crowdsecurity/suricata-logs mstilkerich/bind9-logs; do
		ln -sf "$HUB/parsers/s01-parse/$p.yaml" "$CS/etc/parsers/s01-parse/${p#*/}.yaml"
	done
	for s in crowdsecurity/iptables-scan-multi_ports crowdsecurity/suricata-alerts mstilkerich/bind9-refused; do
		ln -sf "$HUB/scenarios/$s.yaml" "$CS/etc/scenarios/${s#*/}.yaml"
	done
	python3 - "$CS" "$CS_PORT" <<'PY'
import re, sys
cs, port = sys.argv[1:]
p = cs + "/etc/config.yaml"
s = open(p).read()
for a, b in [("daemonize: true", "daemonize: false"), ("log_media: file", "log_media: stdout"),
             ("/etc/crowdsec/", cs + "/etc/"), ("/var/lib/crowdsec/data/", cs + "/data/"),
             ("127.0.0.1:8080", "127.0.0.1:" + port), ("prometheus:\n  enabled: true", "prometheus:\n  enabled: false")]:
    s = s.replace(a, b)
s = re.sub(r"    online_client:.*\n      credentials_path: .*\n", "", s)  # no Central API
open(p, "w").write(s)
PY
}

# crowdsec_run LOG TYPE OUT_PREFIX: one time-machine run on a fresh database.
crowdsec_run() {
	rm -f "$CS/data/crowdsec.db"*; rm -rf "$CS/dump"; mkdir -p "$CS/dump"
	cscli --branch master -c "$CS/etc/config.yaml" machines add rs-lab --auto --force \
		-f "$CS/etc/local_api_credentials.yaml" --url "http://127.0.0.1:$CS_PORT" > /dev/null 2>&1
	timeout 300 crowdsec -c "$CS/etc/config.yaml" -dsn "file://$1" -type "$2" -dump-data "$CS/dump" > "$3.log" 2>&1 || true
	cp "$CS/dump/parser-dump.yaml" "$3.parser-dump.yaml" 2>/dev/null || : > "$3.parser-dump.yaml"
}

crowdsec_setup
cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(cd "$RS_CASES" && ls)
for c in "${cases[@]}"; do
	dir=$RS_CASES/$c
	out=$RS_WORK/peers/$c; rm -rf "$out"; mkdir -p "$out"
	for f in $(jq -r '.logs | keys[]' "$dir/truth.json" | grep -v '^rfc3339/'); do
		tag=${f//\//_}
		case $f in
		auth.log) filters="sshd pam-generic"; type=syslog ;;
		kern.log) filters=""; type=syslog ;;
		syslog) filters="named-refused"; type=syslog ;;
		named-queries.log) filters="named-refused"; type=named ;;
		eve.json) filters=""; type=suricata-evelogs ;;
		esac
		for flt in $filters; do
			fail2ban-regex "$dir/$f" "$flt" > "$out/$tag.f2b-$flt.txt" 2>&1 || true
			fail2ban-regex -o ip "$dir/$f" "$flt" > "$out/$tag.f2b-$flt.ips" 2>/dev/null || true
		done
		crowdsec_run "$dir/$f" "$type" "$out/$tag.crowdsec"
	done
	python3 "$RS_DIR/tools/peers.py" "$dir" "$out" > "$dir/peers.json"
	log "peers $c: $(jq -c . "$dir/peers.json" | cut -c1-200)"
done
