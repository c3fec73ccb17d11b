#!/usr/bin/env python3
"""names.py KIND COUNT SEED: prints COUNT distinct names, deterministic.

  dga     a random string of 12-18 letters under com/net/org/info/biz, as
          DGA malware makes (Conficker, CryptoLocker);
  tunnel  a 40-character base32 label of random bytes under
          t.xfer-lab.net, as a DNS tunnel (iodine, dnscat2) encodes data;
  normal  names of the lab's own zone and a few that do not exist there.
"""
import base64, random, string, sys

kind, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
out = []
while len(out) < count:
    if kind == "dga":
        n = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(12, 18))) + "." + rng.choice(
            ["com", "net", "org", "info", "biz"])
    elif kind == "tunnel":
        n = base64.b32encode(bytes(rng.getrandbits(8) for _ in range(25))).decode().lower().rstrip("=") + ".t.xfer-lab.net"
    else:
        n = rng.choice(["www", "mail", "intranet", "vpn", "git", "wiki", "ntp", "printer", "backup", "ldap"]) + ".lab.example"
    if n not in out:
        out.append(n)
print("\n".join(out))
