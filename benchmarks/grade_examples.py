"""Time `autograder grade` over the example submissions of 01 (as a user runs it), three times, and
print the wall time of each run and per submission.

Run (after `autograder release solutions/01-backward-vs-grad`): .venv/bin/python benchmarks/grade_examples.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions" / "01-backward-vs-grad"


def main(runs: int = 3) -> None:
    n = len(list(EXAMPLES.glob("*.ipynb")))
    for i in range(runs):
        with tempfile.TemporaryDirectory() as out:
            start = time.monotonic()
            subprocess.run([sys.executable, "-m", "autograder", "grade", str(EXAMPLES), "--out", out],
                           cwd=ROOT, check=True, capture_output=True)
            seconds = time.monotonic() - start
        print(f"run {i + 1}: {n} submissions in {seconds:.2f} s ({seconds / n:.2f} s per submission)")


if __name__ == "__main__":
    main()
