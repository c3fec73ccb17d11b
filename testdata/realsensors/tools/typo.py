#!/usr/bin/env python3
"""typo.py: a person typing passwords at ssh's prompt in one session.

  typo.py BIND_ADDR HOST PORT USER PASSWORD [PASSWORD...]

Types each PASSWORD at one "password:" prompt, in order, over a real
pseudo-terminal (ssh reads passwords from the tty, so sshpass can only
type one). The session runs `id -un` when a password is accepted. Prints
one JSON object: the passwords typed (count), whether the login succeeded.
"""
import json, sys
import pexpect

bind, host, port, user, *passwords = sys.argv[1:]
cmd = ["ssh", "-b", bind, "-p", port, "-o", "StrictHostKeyChecking=no",
       "-o", "UserKnownHostsFile=/dev/null", "-o", "PubkeyAuthentication=no",
       "-o", "PreferredAuthentications=password",
       "-o", "NumberOfPasswordPrompts=%d" % len(passwords),
       "-o", "LogLevel=ERROR", "%s@%s" % (user, host), "id -un"]
child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=20)
typed = 0
while True:
    # "Permission denied, please try again." precedes a new prompt; ssh
    # gives up with "Permission denied (publickey,password)."
    i = child.expect(["password: ", r"Permission denied \(", pexpect.EOF])
    if i == 0:
        if typed == len(passwords):
            break
        child.sendline(passwords[typed])
        typed += 1
        continue
    if i == 1:
        child.expect(pexpect.EOF)
        break
    break
child.close()
ok = child.exitstatus == 0
print(json.dumps({"typed": typed, "success": ok, "exit": child.exitstatus}))
