"""What reading a handed-in notebook costs the grader (which reads it on the host, before the sandbox): peak memory
for crafted notebooks of each shape that makes JSON expensive, at the sizes asked for, each read in a fresh process
through the same door grading uses (grading.intake, then grading.notebook.parse_notebook without outputs).

    .venv/bin/python benchmarks/intake.py                 # 10, 40 and 70 MB of each shape
    .venv/bin/python benchmarks/intake.py --mb 5 19.9

Prints, per notebook: its size, what the grader did (read, or refused and why, shortened) and the peak resident
memory of the process while it read and parsed the file, above what it held before (MiB, and as a multiple of the
file's size; Linux's VmHWM, reset just before).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "examples" / "submissions" / "01-backward-vs-grad" / "ada.ipynb"

# one element of an output's payload, repeated: (what it is, its JSON text)
SHAPES = {
    "empty objects": "{}",          # the attack of shared/cases/attack-2026-12/memory-amplification
    "empty lists": "[]",
    "two-letter strings": '"ab"',
    "floats": "0.5",
    "one long string": None,        # a realistic large output: one base64 image
    "values at the limit": "mixed", # as many two-letter strings as are accepted, then one long string
}

CHILD = r"""
import sys
from pathlib import Path
from autograder.grading import intake
from autograder.grading.notebook import NotebookError, parse_notebook

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])   # KiB

open("/proc/self/clear_refs", "w").write("5")   # Linux: the peak (VmHWM) starts again from now
before = status("VmRSS")
f = intake.given(sys.argv[1])
try:
    nb = parse_notebook(intake.read(f), f.path.name, outputs=False)
    what = f"read: {len(nb.cells)} cells"
except (intake.Refused, NotebookError) as e:
    what = "refused: " + str(e)
print(before, status("VmHWM"), what, sep="\t")
"""

def craft(path: Path, shape: str, size: int) -> None:
    nb = json.loads(BASE.read_text())
    element = SHAPES[shape]
    head = json.dumps(nb)
    if element == "mixed":
        from autograder.grading.notebook import MAX_VALUES

        n = MAX_VALUES - head.count(",") - 10
        small = ",".join(['"ab"'] * n)
        payload = '["' + "A" * max(0, size - len(head) - len(small) - 200) + '",' + small + "]"
        data = {"application/json": "@@"}
    elif element is None:
        payload = '"' + "A" * max(0, size - len(head) - 200) + '"'
        data = {"image/png": "@@"}
    else:
        n = max(0, (size - len(head) - 200) // (len(element) + 1))
        payload = "[" + ",".join([element] * n) + "]"
        data = {"application/json": "@@"}
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": data}]
    path.write_text(json.dumps(nb).replace('"@@"', payload))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[10, 40, 70], help="sizes in MB (default 10 40 70)")
    args = ap.parse_args()
    print(f"{'shape':<20} {'size':>9}  {'peak above start':>17}  what the grader did")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.mb:
            for shape in SHAPES:
                path = Path(tmp) / "crafted.ipynb"
                craft(path, shape, int(mb * 1e6))
                size = path.stat().st_size
                out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                                     check=True).stdout.strip().split("\t")
                peak = (int(out[1]) - int(out[0])) / 1024   # KiB -> MiB
                what = out[2] if len(out[2]) <= 70 else out[2][:69] + "…"
                print(f"{shape:<20} {size / 1e6:>7.1f}MB  {peak:>8.0f} MiB {peak * 2**20 / size:>5.1f}x  {what}",
                      flush=True)


if __name__ == "__main__":
    main()
