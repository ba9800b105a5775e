"""Golden reports: the canonical report of every example submission of every assignment, graded with a
fixed key secret (so that the fresh points are the same in every run), saved in tests/golden/<id>/.

A change that is meant to keep reports the same (a refactoring, a speed-up) must leave them byte-identical
apart from timing (`seconds`) and the installed sympy's version string; a change that is meant to alter
reports regenerates them and the diff shows exactly what changed:

    .venv/bin/python tests/golden_reports.py [ID ...]      # rewrite tests/golden/<id>/*.json
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SECRET = "-golden-reports"   # seeds the graded fresh points of every golden report


def normalised(report: dict) -> dict:
    """A report's JSON form without what may differ between two correct runs: its wall time, the
    installed sympy's version string and the isolation line's clause on the warm worker's pages (huge pages where
    the kernel offers them: the machine's, not the grading's); and True or False at 13's function written for each
    run (`<generated>`), whose flag is drawn at random by design."""
    out = {**report, "seconds": 0.0, "versions": {**report.get("versions", {}), "sympy": "*"},
           "isolation": str(report.get("isolation", "")).split("; warm worker in ")[0]}
    out = json.loads(json.dumps(out))   # as written: lists, not tuples
    for o in out.get("outcomes", []):   # 13's function written for each run: its flag is random by design
        if "fn=<generated>" in str(o.get("message", "")):
            o.update({k: re.sub(r"\b(True|False)\b", "*", str(o[k])) for k in ("message", "expected", "observed")
                      if o.get(k) is not None})
    return out


# A number in a report's text: the last digit shown of a float32 result may differ between two CPUs (torch's
# vectorised kernels sum in another order on AVX-512 than on AVX2), so text is compared number by number.
_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?(?:e([-+]?\d+))?")


def _last_digit_apart(a: str, b: str) -> bool:
    """Are two numbers as written at most one unit of their last shown digit apart (with equal digits shown)?"""
    ma, mb = _NUMBER.fullmatch(a), _NUMBER.fullmatch(b)
    if not (ma and mb) or len(ma.group(1) or "") != len(mb.group(1) or "") or ma.group(2) != mb.group(2):
        return False
    unit = 10.0 ** (int(ma.group(2) or 0) - len(ma.group(1) or ""))
    return abs(float(a) - float(b)) <= unit * 1.000001


def differences(report: object, golden: object, where: str = "") -> list[str]:
    """Where a report differs from its golden report (JSON paths), a string's numbers compared with
    `_last_digit_apart` and everything else exactly; [] when they are the same."""
    if isinstance(report, dict) and isinstance(golden, dict):
        return [d for k in sorted(set(report) | set(golden), key=str)
                for d in (differences(report[k], golden[k], f"{where}.{k}") if k in report and k in golden
                          else [f"{where}.{k}"])]
    if isinstance(report, list) and isinstance(golden, list):
        if len(report) != len(golden):
            return [where]
        return [d for i, (a, b) in enumerate(zip(report, golden, strict=True)) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(report, str) and isinstance(golden, str) and report != golden:
        parts_a, parts_b = _NUMBER.split(report), _NUMBER.split(golden)
        nums_a, nums_b = [m.group(0) for m in _NUMBER.finditer(report)], [m.group(0) for m in _NUMBER.finditer(golden)]
        same_words = [p for i, p in enumerate(parts_a) if i % 3 == 0] == [p for i, p in enumerate(parts_b) if i % 3 == 0]
        if same_words and len(nums_a) == len(nums_b) and all(x == y or _last_digit_apart(x, y)
                                                              for x, y in zip(nums_a, nums_b, strict=True)):
            return []
        return [where]
    return [] if report == golden else [where]


def grade_examples(assignment: str, key, worker=None) -> dict[str, dict]:
    """student -> normalised report of each example submission of `assignment`, graded with `key`."""
    from autograder.grading.grade import grade_notebook

    folder = ROOT / "examples" / "submissions" / assignment
    return {p.stem: normalised(grade_notebook(p, key, p.stem, worker=worker).to_dict())
            for p in sorted(folder.glob("*.ipynb"))}


def golden_key(assignment: str, base: Path):
    """Release `assignment` into `base` and return its full key with the golden secret."""
    from autograder.authoring.release import release
    from autograder.keyfile import load_key

    r = release(ROOT / "solutions" / assignment, base / "assignments", base / "build", domain_budget=None)
    return replace(load_key(r.key), fresh_seed=SECRET)


def main(ids: list[str]) -> None:
    from autograder.sandbox.client import Worker

    ids = ids or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/spec.toml"))
    with tempfile.TemporaryDirectory() as tmp, Worker([str(ROOT / "solutions"), tmp]) as worker:
        for assignment in ids:
            key = golden_key(assignment, Path(tmp) / assignment)
            out = GOLDEN / assignment
            out.mkdir(parents=True, exist_ok=True)
            for student, report in grade_examples(assignment, key, worker).items():
                (out / f"{student}.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
            print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
