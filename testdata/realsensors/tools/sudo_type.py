#!/usr/bin/env python3
"""sudo_type.py: a person running `sudo id` in a terminal and typing
passwords at sudo's prompt.

  sudo_type.py USER PASSWORD [PASSWORD...]
  sudo_type.py --su USER TARGET PASSWORD [PASSWORD...]

Runs `sudo -k id -un` as USER (setpriv, no PAM session of its own) on a
pseudo-terminal and types each PASSWORD at one "[sudo] password for"
prompt, in order, until sudo stops asking. Prints one JSON object: the
passwords typed, sudo's exit status and its last message (e.g. "carol is
not in the sudoers file.", "sudo: 3 incorrect password attempts").
With --su, runs `su - TARGET -c "id -un"` instead and types at su's
"Password:" prompt.
"""
import json, pwd, sys
import pexpect

args = sys.argv[1:]
su = args[0] == "--su"
if su:
    user, target, *passwords = args[1:]
    cmd, prompt = ["su", "-", target, "-c", "id -un"], r"Password: "
else:
    user, *passwords = args
    cmd, prompt = ["sudo", "-k", "id", "-un"], r"\[sudo\] password for [^:]*: "
home = pwd.getpwnam(user).pw_dir
child = pexpect.spawn("setpriv", ["--reuid=" + user, "--regid=" + user, "--init-groups", "--reset-env"] + cmd,
                      cwd=home, encoding="utf-8", timeout=30)
typed, out = 0, []
while True:
    i = child.expect([prompt, pexpect.EOF])
    out.append(child.before)
    if i == 1:
        break
    if typed == len(passwords):
        child.sendcontrol("c")  # gives up: not typed
        child.expect(pexpect.EOF)
        out.append(child.before)
        break
    child.sendline(passwords[typed])
    typed += 1
child.close()
lines = [l.strip() for l in "".join(out).splitlines() if l.strip()]
print(json.dumps({"typed": typed, "exit": child.exitstatus, "last": lines[-1] if lines else ""}))
