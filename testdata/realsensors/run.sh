#!/bin/bash
# run.sh [SCENARIO...]: regenerates the corpus (all scenarios by default)
# in a lab of network namespaces. Root; the packages of setup.sh.
source "$(dirname "$0")/lib.sh"
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(ssh_bruteforce ssh_loopback ssh_typos ssh_probe sudo portscan suricata dns)
trap lab_down EXIT
lab_up
for s in "${scenarios[@]}"; do
	log "== $s"
	bash "$RS_DIR/$s.sh"
done
for d in "$RS_CASES"/*/; do prune "${d%/}"; done
versions "$RS_DIR/versions.txt" openssh-server openssh-client hydra sshpass sudo rsyslog iptables nmap \
	suricata libhtp2 tcpdump bind9 bind9-dnsutils dnsmasq-base curl python3-pexpect fail2ban crowdsec
