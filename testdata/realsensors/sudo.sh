#!/bin/bash
# sudo: privilege escalation failures, typed at sudo's prompt on a
# pseudo-terminal (tools/sudo_type.py). Three cases:
#   sudo_nonsudoer: carol, not in sudoers, runs sudo 3 times, each time
#     typing her own (right) password; sudo refuses each run;
#   sudo_nonsudoer_wrong_password: carol runs sudo 3 times, each time
#     types a wrong password and then gives up (Ctrl-C at the next prompt);
#   sudo_admin_typos: deploy (group sudo) mistypes 3 times; sudo gives up
#     after passwd_tries (3);
#   sudo_admin_typo_then_success: deploy mistypes once, then types the
#     right password;
#   su_wrong_password: carol runs `su - deploy` twice and types a wrong
#     password each time.
# Counted from what sudo_type.py typed and what sudo answered.
source "$(dirname "$0")/lib.sh"
ensure_user carol 'Carol-Pass-1'
ensure_user deploy 'Deploy-Pass-9' sudo

run() { # USER PASSWORD...
	python3 "$RS_DIR/tools/sudo_type.py" "$@" \
		| python3 -c 'import json,sys; r=json.load(sys.stdin); r["user"]=sys.argv[1]; r["passwords"]=sys.argv[2:]; print(json.dumps(r))' "$@" \
		>> "$RS_WORK/runs.jsonl"
}

truth() { # CASE_DIR NAME WHAT RIGHT_PASSWORD OBSERVATION_JSON
	python3 - "$2" "$3" "$4" "$5" "$RS_WORK/runs.jsonl" <<'PY' | "$RS_DIR/tools/truth.py" "$1/truth.json"
import json, sys
name, what, right, obs, path = sys.argv[1:]
runs = []
for l in open(path):
    r = json.loads(l)
    typed = r["passwords"][:r["typed"]]
    runs.append({"user": r["user"], "wrong_passwords": sum(p != right for p in typed),
                 "right_passwords": sum(p == right for p in typed),
                 "refused_not_in_sudoers": "not in the sudoers file" in r["last"],
                 "gave_up_incorrect_passwords": "incorrect password attempt" in r["last"],
                 "command_ran": r["exit"] == 0, "sudo_said": r["last"]})
print(json.dumps({
    "scenario": name, "what": what,
    "logs": {"auth.log": "auth", "rfc3339/auth.log": "auth"},
    "host": "bookworm-lab", "user": runs[0]["user"],
    "runs": runs, "sudo_runs": len(runs),
    "wrong_passwords": sum(r["wrong_passwords"] for r in runs),
    "refused_runs": sum(r["refused_not_in_sudoers"] for r in runs),
    "failed_runs": sum(not r["command_ran"] for r in runs),
    "observations": json.loads(obs),
}))
PY
}

dir=$RS_CASES/sudo_nonsudoer
mkdir -p "$dir"; rm -f "$RS_WORK/runs.jsonl"
rsyslog_start "$dir"
for _ in 1 2 3; do run carol 'Carol-Pass-1'; sleep 2; done
rsyslog_stop
truth "$dir" sudo_nonsudoer "carol, who is not in sudoers, runs sudo 3 times and types her own password each time" \
	'Carol-Pass-1' '[{"detector": "sudo_failure", "key": "carol@bookworm-lab", "counts": {"failures": 3}}]'

dir=$RS_CASES/sudo_nonsudoer_wrong_password
mkdir -p "$dir"; rm -f "$RS_WORK/runs.jsonl"
rsyslog_start "$dir"
for p in 'carol-pass-1' 'Carol-Pass1' 'Carol-Pass-2'; do run carol "$p"; sleep 2; done
rsyslog_stop
truth "$dir" sudo_nonsudoer_wrong_password "carol, who is not in sudoers, runs sudo 3 times, each time types a wrong password once and gives up" \
	'Carol-Pass-1' '[{"detector": "sudo_failure", "key": "carol@bookworm-lab", "counts": {"failures": 3}}]'

dir=$RS_CASES/sudo_admin_typos
mkdir -p "$dir"; rm -f "$RS_WORK/runs.jsonl"
rsyslog_start "$dir"
run deploy 'Deploy-Pass-8' 'deploy-pass-9' 'Deploy-Pas-9'
rsyslog_stop
truth "$dir" sudo_admin_typos "deploy (group sudo) runs sudo once and mistypes 3 times; sudo gives up (passwd_tries 3)" \
	'Deploy-Pass-9' '[{"detector": "sudo_failure", "key": "deploy@bookworm-lab", "counts": {"failures": 3}}]'

dir=$RS_CASES/sudo_admin_typo_then_success
mkdir -p "$dir"; rm -f "$RS_WORK/runs.jsonl"
rsyslog_start "$dir"
run deploy 'Deploy-Pass-0' 'Deploy-Pass-9'
rsyslog_stop
truth "$dir" sudo_admin_typo_then_success "deploy (group sudo) mistypes once, then types the right password: the command runs" \
	'Deploy-Pass-9' '[{"detector": "sudo_failure", "key": "deploy@bookworm-lab", "counts": {"failures": 1}, "optional": true}]'
dir=$RS_CASES/su_wrong_password
mkdir -p "$dir"; rm -f "$RS_WORK/runs.jsonl"
rsyslog_start "$dir"
for p in 'Deploy-Pass-1' 'deploy'; do
	python3 "$RS_DIR/tools/sudo_type.py" --su carol deploy "$p" \
		| python3 -c 'import json,sys; r=json.load(sys.stdin); r["user"]="carol"; r["passwords"]=sys.argv[1:]; print(json.dumps(r))' "$p" \
		>> "$RS_WORK/runs.jsonl"
	sleep 2
done
rsyslog_stop
truth "$dir" su_wrong_password "carol runs su - deploy twice and types a wrong password each time" \
	'Deploy-Pass-9' '[{"detector": "sudo_failure", "key": "carol@bookworm-lab", "counts": {"failures": 2}}]'
log "sudo: done"
