#!/bin/bash
# ssh_typos: a legitimate user (alice, from 203.0.113.20) mistypes her
# password, typing at ssh's own prompt over a pseudo-terminal
# (tools/typo.py). Two cases:
#   ssh_typo_one_session: 3 wrong passwords, then the right one, in one
#     ssh session;
#   ssh_typo_across_sessions: a session with 2 wrong passwords that gives
#     up (NumberOfPasswordPrompts 2), then a session with the right one.
# Counted from what typo.py typed and ssh's exit status.
source "$(dirname "$0")/lib.sh"
PASS='Correct-Horse-7'
ensure_user alice "$PASS"

# session PASSWORD...: one ssh session; appends its record.
session() {
	ax python3 "$RS_DIR/tools/typo.py" "$USER_IP" "$VICTIM_IP" "$SSH_PORT" alice "$@" \
		| python3 -c 'import json,sys; r=json.load(sys.stdin); r["passwords"]=sys.argv[2:]; r["right"]=sys.argv[1]; print(json.dumps(r))' "$PASS" "$@" \
		>> "$RS_WORK/sessions.jsonl"
}

truth() { # CASE_DIR NAME WHAT
	python3 - "$2" "$3" "$RS_WORK/sessions.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$1/truth.json"
import json, sys
name, what, path = sys.argv[1:]
sessions = []
for l in open(path):
    r = json.loads(l)
    typed = r["passwords"][:r["typed"]]
    sessions.append({"wrong_passwords": sum(p != r["right"] for p in typed),
                     "right_passwords": sum(p == r["right"] for p in typed),
                     "login_succeeded": r["success"]})
print(json.dumps({
    "scenario": name, "what": what,
    "logs": {"auth.log": "auth", "rfc3339/auth.log": "auth"},
    "host": "bookworm-lab", "source_ip": "203.0.113.20", "user": "alice",
    "sessions": sessions,
    "failed_passwords": sum(s["wrong_passwords"] for s in sessions),
    "successful_logins": sum(s["login_succeeded"] for s in sessions),
    "observations": [],
    "note": "a typo is not an attack: no observation is expected",
}))
PY
}

sshd_start

dir=$RS_CASES/ssh_typo_one_session
mkdir -p "$dir"; rm -f "$RS_WORK/sessions.jsonl"
rsyslog_start "$dir"
session 'Correct-Horse7' 'correct-horse-7' 'Correct-Hrose-7' "$PASS"
rsyslog_stop
truth "$dir" ssh_typo_one_session "alice types 3 wrong passwords and then the right one in one ssh session from 203.0.113.20"

dir=$RS_CASES/ssh_typo_across_sessions
mkdir -p "$dir"; rm -f "$RS_WORK/sessions.jsonl"
rsyslog_start "$dir"
session 'Correct-Horse-8' 'Corect-Horse-7'
sleep 5
session "$PASS"
rsyslog_stop
truth "$dir" ssh_typo_across_sessions "alice types 2 wrong passwords in one ssh session, which gives up, then the right one in a second session, from 203.0.113.20"

sshd_stop
log "ssh_typos: done"
