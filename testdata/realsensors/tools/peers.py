#!/usr/bin/env python3
"""peers.py CASE_DIR OUT_DIR: summarizes what the peers said about one
case (peers.sh's raw outputs in OUT_DIR) as JSON on stdout:

  fail2ban: {"<file> <filter>": {"lines", "matched", "ignored", "missed",
             "failures_by_ip"}} -- failures_by_ip is what fail2ban counts
             towards maxretry (5 in Debian's jail.conf, within 10 minutes);
  crowdsec: {"<file>": {"events": {log_type: {source_ip: n}},
             "whitelisted": {source_ip: n}, "alerts": [{scenario, ip,
             events}]}} -- events are the parsed events the scenarios see,
             alerts the buckets that overflowed (a ban by the default
             profile).
"""
import collections, glob, json, os, re, sys
import yaml

case_dir, out = sys.argv[1:]
res = {"fail2ban": {}, "crowdsec": {}}
for txt in sorted(glob.glob(os.path.join(out, "*.f2b-*.txt"))):
    tag, flt = re.match(r"(.*)\.f2b-(.*)\.txt$", os.path.basename(txt)).groups()
    s = open(txt).read()
    m = re.search(r"Lines: (\d+) lines, (\d+) ignored, (\d+) matched, (\d+) missed", s)
    ips = collections.Counter(l.strip() for l in open(txt[:-4] + ".ips") if l.strip())
    res["fail2ban"]["%s %s" % (tag, flt)] = {
        "lines": int(m.group(1)), "ignored": int(m.group(2)), "matched": int(m.group(3)), "missed": int(m.group(4)),
        "failures_by_ip": dict(sorted(ips.items()))} if m else {"error": s.strip().splitlines()[-1:]}
for logf in sorted(glob.glob(os.path.join(out, "*.crowdsec.log"))):
    tag = os.path.basename(logf)[:-len(".crowdsec.log")]
    alerts = [{"ip": ip, "scenario": sc, "events": int(n)} for ip, sc, n in
              re.findall(r"Ip (\S+) performed '([^']+)' \((\d+) events", open(logf).read())]
    events, white = collections.defaultdict(collections.Counter), collections.Counter()
    dump = logf[:-4] + ".parser-dump.yaml"
    d = yaml.safe_load(open(dump)) if os.path.getsize(dump) else None
    if d:
        for e in d.get("s02-enrich", {}).get("crowdsecurity/whitelists", []):
            evt = e["evt"]
            meta = evt.get("Meta") or {}
            if evt.get("Whitelisted"):
                white[meta.get("source_ip", "?")] += 1
            else:
                events[meta.get("log_type", "?")][meta.get("source_ip", "?")] += 1
    res["crowdsec"][tag] = {"events": {k: dict(sorted(v.items())) for k, v in sorted(events.items())},
                            "whitelisted": dict(sorted(white.items())), "alerts": alerts}
print(json.dumps(res, indent=2, sort_keys=True))
