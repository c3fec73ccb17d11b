#!/bin/bash
# ssh_bruteforce: hydra guesses passwords over SSH for 4 users (2 that
# exist, 2 that do not) from 203.0.113.66, one task at a time; the last
# password of the last user is right. Counted on the attacker's side,
# never from the logs: hydra's -V "[ATTEMPT]" lines (one per distinct
# user/password pair) and tools/authcount.c, an LD_PRELOAD observer of
# libssh's ssh_userauth_password (one per password sent: hydra sends a
# guess again when sshd cut the connection at MaxAuthTries after checking
# it, so the server checks more passwords than hydra lists).
source "$(dirname "$0")/lib.sh"
case_dir=$RS_CASES/ssh_bruteforce
mkdir -p "$case_dir"
ensure_user webmaster 'sunshine1'
printf '%s\n' root admin oracle webmaster > "$RS_WORK/users.txt"
printf '%s\n' 123456 password admin qwerty letmein dragon 1q2w3e4r sunshine1 > "$RS_WORK/passwords.txt"
gcc -O2 -shared -fPIC -o "$RS_WORK/authcount.so" "$RS_DIR/tools/authcount.c" -ldl
rm -f "$RS_WORK/authcount.log"

rsyslog_start "$case_dir"
sshd_start
(cd "$RS_WORK" && ax env LD_PRELOAD="$RS_WORK/authcount.so" AUTHCOUNT_LOG="$RS_WORK/authcount.log" \
	hydra -I -V -t 1 -f -L users.txt -P passwords.txt -s "$SSH_PORT" "ssh://$VICTIM_IP") \
	> "$case_dir/hydra.out" 2>&1 || true
sshd_stop
rsyslog_stop

cp "$RS_WORK/authcount.log" "$case_dir/authcount.tsv"
python3 - "$case_dir/hydra.out" "$case_dir/authcount.tsv" <<'PY' | "$RS_DIR/tools/truth.py" "$case_dir/truth.json"
import json, re, subprocess, sys
out = open(sys.argv[1]).read()
if "[RE-ATTEMPT]" in out or "[ERROR]" in out:
    sys.exit("hydra re-attempted or failed: the guesses would not be exact; run again")
pairs = re.findall(r'^\[ATTEMPT\] target \S+ - login "([^"]*)" - pass "([^"]*)"', out, re.M)
found = re.findall(r'host: \S+\s+login: (\S+)\s+password: (\S+)', out)
if len(found) != 1:
    sys.exit("hydra found %d passwords, want 1" % len(found))
sent = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
if sorted(set((u, p) for u, p, _ in sent)) != sorted(set(pairs)):
    sys.exit("the passwords sent are not hydra's pairs")
users = {}
for u, p, rc in sent:
    d = users.setdefault(u, {"exists": subprocess.run(["id", u], capture_output=True).returncode == 0,
                             "submitted": 0, "failed": 0, "cut_off": 0, "distinct_passwords": 0})
    d["submitted"] += 1
    d["failed"] += rc != "0"
    d["cut_off"] += rc in ("-1", "4")
for u, d in users.items():
    d["distinct_passwords"] = len({p for uu, p in pairs if uu == u})
success = [s for s in sent if s[2] == "0"]
if len(success) != 1 or tuple(success[0][:2]) != found[0]:
    sys.exit("want exactly hydra's one success")
failed = len(sent) - 1
print(json.dumps({
    "scenario": "ssh_bruteforce",
    "what": "hydra -t 1 -f against a second sshd (UsePAM yes, LogLevel VERBOSE, MaxAuthTries 6 as Debian ships it, port 2222): 4 users (2 exist, 2 do not), 8 passwords each; the last password of the last user is right",
    "logs": {"auth.log": "auth", "rfc3339/auth.log": "auth"},
    "host": "bookworm-lab",
    "source_ip": "203.0.113.66",
    "target": "203.0.113.10:2222",
    "hydra_pairs": len(pairs),
    "passwords_submitted": len(sent),
    "failed_passwords": failed,
    "resent_after_cutoff": len(sent) - len(pairs),
    "successful_logins": 1,
    "success_user": found[0][0],
    "users": users,
    "invalid_users": sorted(u for u, d in users.items() if not d["exists"]),
    "note": "hydra -V lists %d pairs; it sent %d passwords: sshd closes a connection after the 6th failure (MaxAuthTries) and hydra, not knowing the 6th result, sends it again on the next connection. Every one of them was checked by sshd: %d failed password attempts." % (len(pairs), len(sent), failed),
    "observations": [
        {"detector": "ssh_bruteforce", "key": "203.0.113.66",
         "counts": {"failed": failed, "users": len(users)}},
        {"detector": "ssh_success", "key": "203.0.113.66",
         "counts": {"accepted": 1}},
    ],
}))
PY
log "ssh_bruteforce: $(grep -c '^\[ATTEMPT\]' "$case_dir/hydra.out") pairs, $(wc -l < "$case_dir/authcount.tsv") passwords sent"
