#!/usr/bin/env python3
"""truth.py OUT.json: writes a case's ground truth from JSON on stdin,
pretty-printed with sorted keys so regenerations diff cleanly. The
scenario scripts count what they did (the tools' own output, their own
loops) and pipe it here; nothing is read from the logs."""
import json, sys
doc = json.load(sys.stdin)
with open(sys.argv[1], "w") as f:
    json.dump(doc, f, indent=2, sort_keys=True)
    f.write("\n")
