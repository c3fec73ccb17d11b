#!/bin/bash
# ssh_probe: user enumeration without a password. From 203.0.113.67, one
# ssh connection per name for 8 names that do not exist on the server,
# each giving up before any password (BatchMode: no prompt, password
# authentication only): sshd logs "Invalid user …" and the connection's
# end, and no password is ever checked. Counted from the script's loop and
# ssh's exit status.
source "$(dirname "$0")/lib.sh"
dir=$RS_CASES/ssh_user_probe
mkdir -p "$dir"
names=(test guest ubuntu pi ftpuser support hadoop minecraft)
for n in "${names[@]}"; do ! id "$n" >/dev/null 2>&1 || { echo "$n exists here: pick names that do not" >&2; exit 1; }; done
rm -f "$RS_WORK/probes.jsonl"
sshd_start
rsyslog_start "$dir"
for n in "${names[@]}"; do
	rc=0
	ax ssh -b "$ATTACKER2_IP" -p "$SSH_PORT" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o PubkeyAuthentication=no -o PreferredAuthentications=password -o LogLevel=ERROR "$n@$VICTIM_IP" true 2>/dev/null || rc=$?
	printf '{"user":"%s","exit":%d}\n' "$n" "$rc" >> "$RS_WORK/probes.jsonl"
	sleep 0.5
done
rsyslog_stop
sshd_stop
python3 - "$RS_WORK/probes.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$dir/truth.json"
import json, sys
probes = [json.loads(l) for l in open(sys.argv[1])]
if any(p["exit"] != 255 for p in probes):
    sys.exit("a probe did not end in ssh's authentication failure")
print(json.dumps({
    "scenario": "ssh_user_probe",
    "what": "8 ssh connections from 203.0.113.67, one per user name that does not exist, each giving up before any password (BatchMode yes)",
    "logs": {"auth.log": "auth", "rfc3339/auth.log": "auth"},
    "host": "bookworm-lab", "source_ip": "203.0.113.67",
    "connections": len(probes), "users_probed": [p["user"] for p in probes],
    "invalid_user_probes": len(probes), "passwords_checked": 0,
    "observations": [{"detector": "ssh_bruteforce", "key": "203.0.113.67",
                      "counts": {"failed": 0, "users": len(probes)}, "optional": True}],
    "note": "no password was tried: whether invalid-user probes make an observation is a policy (fail2ban counts each as a failure); if one is made, it names 8 users and states no failed password",
}))
PY
log "ssh_user_probe: done"
