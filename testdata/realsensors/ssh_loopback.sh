#!/bin/bash
# ssh_loopback: the host brute-forcing itself. hydra on the server, from
# 127.0.0.1, against the second sshd (listening on 127.0.0.1 too): root
# with 5 wrong passwords, one task. Counted as in ssh_bruteforce, by
# tools/authcount.c on hydra's side. Whether loopback sources are reported
# is a policy (to be one for all detectors): the observation is optional,
# its counts exact if it is made.
source "$(dirname "$0")/lib.sh"
dir=$RS_CASES/ssh_bruteforce_loopback
mkdir -p "$dir"
printf '%s\n' root > "$RS_WORK/lo-users.txt"
printf '%s\n' toor 123456 changeme root1 password1 > "$RS_WORK/lo-passwords.txt"
gcc -O2 -shared -fPIC -o "$RS_WORK/authcount.so" "$RS_DIR/tools/authcount.c" -ldl
rm -f "$RS_WORK/authcount.log"
EXTRA_LISTEN=127.0.0.1 sshd_start
rsyslog_start "$dir"
(cd "$RS_WORK" && vx env LD_PRELOAD="$RS_WORK/authcount.so" AUTHCOUNT_LOG="$RS_WORK/authcount.log" \
	hydra -I -V -t 1 -L lo-users.txt -P lo-passwords.txt -s "$SSH_PORT" ssh://127.0.0.1) > "$dir/hydra.out" 2>&1 || true
rsyslog_stop
sshd_stop
cp "$RS_WORK/authcount.log" "$dir/authcount.tsv"
python3 - "$dir/hydra.out" "$dir/authcount.tsv" <<'PY' | "$RS_DIR/tools/truth.py" "$dir/truth.json"
import json, re, sys
out = open(sys.argv[1]).read()
if "[RE-ATTEMPT]" in out or "[ERROR]" in out:
    sys.exit("hydra re-attempted or failed: the guesses would not be exact; run again")
pairs = re.findall(r'^\[ATTEMPT\] target \S+ - login "([^"]*)" - pass "([^"]*)"', out, re.M)
sent = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
if any(rc == "0" for _, _, rc in sent) or sorted(set((u, p) for u, p, _ in sent)) != sorted(set(pairs)):
    sys.exit("the passwords sent are not hydra's pairs, or one succeeded")
print(json.dumps({
    "scenario": "ssh_bruteforce_loopback",
    "what": "hydra -t 1 on the server against its own sshd at 127.0.0.1:2222: root, 5 wrong passwords",
    "logs": {"auth.log": "auth", "rfc3339/auth.log": "auth"},
    "host": "bookworm-lab", "source_ip": "127.0.0.1",
    "hydra_pairs": len(pairs), "passwords_submitted": len(sent), "failed_passwords": len(sent),
    "users": sorted({u for u, _, _ in sent}),
    "observations": [{"detector": "ssh_bruteforce", "key": "127.0.0.1",
                      "counts": {"failed": len(sent), "users": 1}, "optional": True}],
    "note": "the host attacking itself: whether loopback is reported is a policy shared with portscan_loopback and suricata_loopback; if reported, the counts must be these",
}))
PY
log "ssh_bruteforce_loopback: $(wc -l < "$dir/authcount.tsv") passwords sent"
