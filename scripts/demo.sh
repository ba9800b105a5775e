#!/usr/bin/env bash
# The main job, from a fresh clone: set up, release assignment 01 (build its key), grade the example
# submissions, and print the gradebook.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/autograder release solutions/01-backward-vs-grad
.venv/bin/autograder grade examples/submissions/01-backward-vs-grad --out out/01-backward-vs-grad
echo
echo "gradebook (out/01-backward-vs-grad/gradebook.csv):"
column -s, -t < out/01-backward-vs-grad/gradebook.csv
