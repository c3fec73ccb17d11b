# lib.sh: what every scenario script shares. Sourced, never run.
#
# The lab: a victim network namespace (rs-victim, the "server": sshd,
# named, dnsmasq, a web server, iptables, tcpdump) joined by one veth pair
# to an attacker namespace (rs-net) holding the other actors' addresses.
# Only TEST-NET-3 addresses (RFC 5737) are used, and only inside these
# namespaces: nothing leaves the machine.
#
# Logging is Debian's: one rsyslogd per case, started with Debian's
# /etc/rsyslog.conf rules (imuxsock on /dev/log, imklog) pointed at the
# case's directory, writing each file twice: in the traditional format
# (auth.log, kern.log, syslog) and in the format bookworm's rsyslog writes
# by default, RFC 3339 with microseconds (rfc3339/auth.log, ...).

set -euo pipefail

RS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RS_CASES=$RS_DIR/cases # one directory per case: its logs and truth.json
RS_WORK=${RS_WORK:-/tmp/realsensors}
RS_HOST=${RS_HOST:-bookworm-lab} # the hostname rsyslog writes
VICTIM_NS=rs-victim
NET_NS=rs-net
VICTIM_IP=203.0.113.10   # sshd, BIND, web server
DNSMASQ_IP=203.0.113.11  # dnsmasq
ATTACKER_IP=203.0.113.66 # hydra, nmap, the scanner, DGA and tunnel look-ups
USER_IP=203.0.113.20     # the legitimate user, normal web and DNS traffic
ATTACKER2_IP=203.0.113.67 # a second attacker (connect scan, allowed DNS client)
SSH_PORT=2222

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

vx() { ip netns exec "$VICTIM_NS" "$@"; }  # run in the victim namespace
ax() { ip netns exec "$NET_NS" "$@"; }     # run in the attackers' namespace

lab_up() {
	lab_down 2>/dev/null || true
	mkdir -p "$RS_WORK"
	ip netns add "$VICTIM_NS"
	ip netns add "$NET_NS"
	ip link add rs-v0 type veth peer name rs-a0
	ip link set rs-v0 netns "$VICTIM_NS"
	ip link set rs-a0 netns "$NET_NS"
	vx ip link set lo up
	vx ip addr add "$VICTIM_IP/24" dev rs-v0
	vx ip addr add "$DNSMASQ_IP/24" dev rs-v0
	vx ip link set rs-v0 up
	ax ip link set lo up
	ax ip addr add "$ATTACKER_IP/24" dev rs-a0
	ax ip addr add "$USER_IP/24" dev rs-a0
	ax ip addr add "$ATTACKER2_IP/24" dev rs-a0
	ax ip link set rs-a0 up
	# The kernel logs netfilter LOG targets of other namespaces only with
	# this; restored by lab_down.
	sysctl -q net.netfilter.nf_log_all_netns > "$RS_WORK/nf_log_all_netns.orig"
	sysctl -qw net.netfilter.nf_log_all_netns=1
	sleep 2 # duplicate address detection
}

lab_down() {
	# An rsyslogd left by a case that failed half-way (it runs outside the
	# namespaces).
	[ -f "$RS_WORK/rsyslogd.pid" ] && kill "$(cat "$RS_WORK/rsyslogd.pid")" 2>/dev/null || true
	rm -f "$RS_WORK/rsyslogd.pid" /dev/log
	ip netns pids "$VICTIM_NS" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns pids "$NET_NS" 2>/dev/null | xargs -r kill 2>/dev/null || true
	sleep 0.5
	ip netns del "$VICTIM_NS" 2>/dev/null || true
	ip netns del "$NET_NS" 2>/dev/null || true
	if [ -f "$RS_WORK/nf_log_all_netns.orig" ]; then
		sysctl -qw "$(tr -d ' ' < "$RS_WORK/nf_log_all_netns.orig")"
	fi
}

# rsyslog_start DIR: an rsyslogd with Debian's rules writing into DIR.
rsyslog_start() {
	local dir=$1 conf=$RS_WORK/rsyslog.conf
	mkdir -p "$dir/rfc3339" "$RS_WORK/spool"
	rm -f "$dir"/{auth.log,kern.log,syslog} "$dir"/rfc3339/{auth.log,kern.log,syslog}
	# Kernel messages already in the ring buffer (boot, earlier cases) are
	# consumed so that this case's kern.log holds only its own.
	timeout 1 cat /proc/kmsg > /dev/null 2>&1 || true
	sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$RS_HOST|g" -e "s|@SPOOL@|$RS_WORK/spool|g" \
		"$RS_DIR/conf/rsyslog.conf" > "$conf"
	rsyslogd -f "$conf" -i "$RS_WORK/rsyslogd.pid"
	for _ in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done
	sleep 0.5
}

rsyslog_stop() {
	sleep 1 # let the last lines arrive
	if [ -f "$RS_WORK/rsyslogd.pid" ]; then
		local pid; pid=$(cat "$RS_WORK/rsyslogd.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$RS_WORK/rsyslogd.pid"
	fi
	rm -f /dev/log
}

# users: the victim's accounts (one /etc/passwd for both namespaces).
ensure_user() { # name password [groups]
	id "$1" >/dev/null 2>&1 || useradd -m -s /bin/bash "$1"
	echo "$1:$2" | chpasswd
	[ -z "${3:-}" ] || usermod -aG "$3" "$1"
}

sshd_start() {
	local conf=$RS_WORK/sshd_config
	mkdir -p /run/sshd
	[ -f "$RS_WORK/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$RS_WORK/ssh_host_ed25519_key"
	sed -e "s|@WORK@|$RS_WORK|g" -e "s|@PORT@|$SSH_PORT|g" -e "s|@ADDR@|$VICTIM_IP|g" \
		"$RS_DIR/conf/sshd_config" > "$conf"
	# EXTRA_LISTEN: a second address (127.0.0.1 for the loopback case).
	[ -z "${EXTRA_LISTEN:-}" ] || echo "ListenAddress $EXTRA_LISTEN" >> "$conf"
	vx /usr/sbin/sshd -f "$conf"
	for _ in $(seq 50); do [ -f "$RS_WORK/sshd.pid" ] && break; sleep 0.1; done
}

sshd_stop() {
	[ -f "$RS_WORK/sshd.pid" ] && kill "$(cat "$RS_WORK/sshd.pid")" 2>/dev/null || true
	rm -f "$RS_WORK/sshd.pid"
	sleep 0.5
}

# versions FILE PKG...: the Debian versions of the packages used.
versions() {
	local out=$1; shift
	dpkg-query -W -f='${Package} ${Version}\n' "$@" > "$out"
}

# prune CASE_DIR: removes the files rsyslog wrote that the case's
# truth.json does not list (syslog holding only rsyslogd's start line, or
# the kernel lines kern.log already has): the corpus stays small.
prune() {
	local dir=$1 f rel
	for f in "$dir"/syslog "$dir"/kern.log "$dir"/auth.log "$dir"/rfc3339/syslog "$dir"/rfc3339/kern.log "$dir"/rfc3339/auth.log; do
		[ -e "$f" ] || continue
		rel=${f#"$dir"/}
		jq -e --arg f "$rel" '.logs | has($f)' "$dir/truth.json" > /dev/null || rm -f "$f"
	done
}
