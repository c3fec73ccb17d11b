#!/bin/bash
# setup.sh: installs the lab's programs from Debian bookworm (Suricata from
# bookworm-backports: bookworm has none). Root. Pins bookworm's own
# versions where backports has newer ones (OpenSSH 10 logs as
# sshd-session, a different program name from bookworm's sshd).
set -euo pipefail
if ! apt-cache policy | grep -q bookworm-backports; then
	cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -q
# CrowdSec 1.4.6 must not try to register with its online API (no network).
mkdir -p /etc/crowdsec
[ -e /etc/crowdsec/online_api_credentials.yaml ] || echo '# no thanks' > /etc/crowdsec/online_api_credentials.yaml
DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold \
	openssh-server/bookworm openssh-client/bookworm openssh-sftp-server/bookworm \
	bind9/bookworm bind9-utils/bookworm bind9-libs/bookworm bind9-dnsutils/bookworm bind9-host/bookworm dnsutils/bookworm \
	nmap/bookworm nmap-common/bookworm curl/bookworm libcurl4/bookworm \
	hydra sshpass sudo rsyslog iptables tcpdump dnsmasq fail2ban crowdsec python3-pexpect jq gcc libc6-dev
DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports suricata
