#!/usr/bin/env bash
# The main job, from a fresh clone: set up, release assignment 01 (build its key), grade the example
# submissions, and print the gradebook.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/autograder release solutions/01-backward-vs-grad
.venv/bin/autograder grade examples/submissions/01-backward-vs-grad --out out/01-backward-vs-grad
echo
echo "gradebook (out/01-backward-vs-grad/gradebook.csv; its other columns hold each check's status):"
.venv/bin/python - out/01-backward-vs-grad/gradebook.csv <<'PY'
import csv, sys
rows = [r[:5] for r in csv.reader(open(sys.argv[1]))]   # submission, student, status, score, max_score
widths = [max(len(r[i]) or 1 for r in rows) for i in range(len(rows[0]))]
for r in rows:   # an empty cell (a not-gradable score) is shown as "-", never as a number
    print("  ".join((c or "-").ljust(w) for c, w in zip(r, widths)).rstrip())
PY
