"""Run every solution notebook's in-notebook self-check on another torch release, and print which checks
differ from the same run on the reference release (the project's .venv). Outside CI: another release is a
large install. Usage (from the project folder):

    .venv/bin/python scripts/other_torch.py --torch 2.14.1            # makes .venv-torch-2.14.1 if missing
    .venv/bin/python scripts/other_torch.py --torch 2.14.1 --assignment 01-backward-vs-grad

Each notebook runs top to bottom in a real kernel of the environment's own Python (nbclient), in a
folder of its own beside a copy of its released public key, exactly as a learner runs it; the statuses are
read from the report each `lab.check` cell shows (application/vnd.autograd-lab.report+json).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT_MIME = "application/vnd.autograd-lab.report+json"


def inner(out: Path, assignments: list[str]) -> None:
    """In the environment under test: run each solution notebook, write {torch, assignments: {id: {check:
    {status, message, version_note}}}} to `out`."""
    import nbformat
    import torch
    from nbclient import NotebookClient

    found: dict[str, dict[str, dict]] = {}
    for aid in assignments:
        released = ROOT / "assignments" / aid
        notebook = json.loads((released / "public_key.json").read_text())["notebook"]
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(released / "public_key.json", folder)
            nb = nbformat.read(ROOT / "solutions" / aid / notebook, as_version=4)
            NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": folder}}).execute()
        checks = {}
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                report = output.get("data", {}).get(REPORT_MIME)
                for o in report["outcomes"] if report else []:
                    checks[o["check_id"]] = {"status": o["status"], "message": o["message"],
                                             "version_note": o.get("version_note")}
        found[aid] = checks
        print(f"  torch {torch.__version__}: {aid}: {len(checks)} checks", flush=True)
    out.write_text(json.dumps({"torch": torch.__version__.split("+")[0], "assignments": found}, indent=1))


def environment(version: str, folder: Path) -> Path:
    """The Python of `folder`, a venv with torch==`version` and this project (made when missing)."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    subprocess.run([*pip, f"torch=={version}"], check=True)     # first, so the project's range keeps it
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True)
    return python


def run(python: Path, assignments: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "statuses.json"
        subprocess.run([str(python), __file__, "--inner", str(out), "--assignment", *assignments], check=True,
                       cwd=ROOT)
        return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch", help="the other torch release, e.g. 2.14.1")
    ap.add_argument("--venv", help="its environment (default: .venv-torch-<release>)")
    ap.add_argument("--assignment", nargs="*", help="assignment ids (default: every released one)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    ids = args.assignment or sorted(p.name for p in (ROOT / "assignments").iterdir()
                                    if (p / "public_key.json").exists())
    if args.inner:
        inner(Path(args.inner), ids)
        return 0
    if not args.torch:
        ap.error("--torch is required")
    python = environment(args.torch, Path(args.venv) if args.venv else ROOT / f".venv-torch-{args.torch}")
    print("reference run (.venv):")
    ref = run(ROOT / ".venv" / "bin" / "python", ids)
    print(f"run on torch {args.torch}:")
    other = run(python, ids)
    total = differ = flagged = 0
    print(f"\nsolution self-checks, torch {other['torch']} against the reference torch {ref['torch']}:")
    for aid in ids:
        a, b = ref["assignments"].get(aid, {}), other["assignments"].get(aid, {})
        rows = []
        for check in sorted(set(a) | set(b)):
            total += 1
            x, y = a.get(check, {}), b.get(check, {})
            flagged += bool(y.get("version_note"))
            if x.get("status") != y.get("status"):
                differ += 1
                rows.append(f"    {check}: {x.get('status')} -> {y.get('status')}"
                            f"{' (flagged version-sensitive)' if y.get('version_note') else ''}: "
                            f"{(y.get('message') or '')[:160]}")
        print(f"  {aid}: {len(rows)} of {len(set(a) | set(b))} checks differ")
        print("\n".join(rows)) if rows else None
    print(f"\n{differ} of {total} checks differ; {flagged} checks carry a version note on torch {other['torch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
