#!/usr/bin/env bash
# The main job, from a fresh clone: set up, release assignment 01 (build its key), grade the example
# submissions with their class view, print the gradebook, and show one named misconception.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/autograder release solutions/01-backward-vs-grad
.venv/bin/autograder grade examples/submissions/01-backward-vs-grad --out out/01-backward-vs-grad --stats
echo
echo "gradebook (out/01-backward-vs-grad/gradebook.csv; its other columns hold each check's status):"
.venv/bin/python - out/01-backward-vs-grad/gradebook.csv <<'PY'
import csv, sys
rows = [r[:5] for r in csv.reader(open(sys.argv[1]))]   # submission, student, status, score, max_score
widths = [max(len(r[i]) or 1 for r in rows) for i in range(len(rows[0]))]
for r in rows:   # an empty cell (a not-gradable score) is shown as "-", never as a number
    print("  ".join((c or "-").ljust(w) for c, w in zip(r, widths)).rstrip())
PY
echo
echo "a named misconception (cleo's check 4.produce.after_k; every view shows it, the class view counts it):"
.venv/bin/python - out/01-backward-vs-grad/reports/cleo.json <<'PY'
import json, sys
o = next(o for o in json.load(open(sys.argv[1]))["outcomes"] if o["check_id"] == "4.produce.after_k")
m = o["misconception"]
print(f"  {o['message']}\n  misconception: \"{m['name']}\": {m['feedback']}")
PY
echo
echo "class view: out/01-backward-vs-grad/stats.html (and stats.json, item-analysis.csv)"
