"""Time the in-notebook self-check: execute the solution notebook in a real Jupyter kernel (nbclient)
and print, per `lab.check` cell, the kernel's execution time in seconds.

Run: .venv/bin/python benchmarks/selfcheck.py
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    nb = nbformat.read(ROOT / "solutions" / "01-backward-vs-grad" / "backward-vs-grad.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(ROOT / "assignments" / "01-backward-vs-grad")}}).execute()
    times = []
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("lab.check"):
            ex = cell.metadata["execution"]
            t = (datetime.fromisoformat(ex["shell.execute_reply"].replace("Z", "+00:00"))
                 - datetime.fromisoformat(ex["iopub.execute_input"].replace("Z", "+00:00"))).total_seconds()
            times.append(t)
            print(f"{cell.source:<16} {t:.3f} s")
    print(f"median {sorted(times)[len(times) // 2]:.3f} s over {len(times)} self-checks")


if __name__ == "__main__":
    main()
