"""Grade every example submission at many fresh points, and print each status that differs from
the one recorded in <student>.expected.json. May import autograder (key, grade) and the standard library.

The test suite grades the examples at the key's usual fresh points, drawn from a new random secret
at each release, so an example whose "wrong" code happens to be right at some points (a wrong
backward that agrees with the right one at w = 1, say) fails there about once in a few hundred
runs. This finds such examples before CI does:

    .venv/bin/python examples/at_many_points.py [ID ...] [--rounds 5] [--fresh 40]

Each round draws a new secret and grades every example at its own point plus `--fresh` fresh points.
Exit status: 0 when every status matched, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
from dataclasses import replace
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


def differences(assignment: str, rounds: int, fresh: int) -> int:
    """Grade the examples of `assignment` over `rounds` secrets at `fresh` fresh points each; print
    and count the statuses (and named misconceptions) that differ from the recorded ones."""
    from autograder.grading.grade import grade_notebook
    from autograder.authoring.release import release
    from autograder.keyfile import load_key

    with tempfile.TemporaryDirectory() as tmp:
        key = load_key(release(ROOT / "solutions" / assignment, Path(tmp) / "a", Path(tmp) / "b", domain_budget=None).key)
    folder = ROOT / "examples" / "submissions" / assignment
    found = 0
    for _ in range(rounds):
        k = replace(key, fresh_seed=secrets.token_hex(8), grading=replace(key.grading, fresh_points=fresh),
                    limits=key.limits.with_seconds(key.limits.submission_timeout * (1 + fresh / 2)))
        for f in sorted(folder.glob("*.expected.json")):
            student, expected = f.name.split(".")[0], json.loads(f.read_text())
            report = grade_notebook(folder / f"{student}.ipynb", k, student)
            if report.status != expected["status"]:
                print(f"{assignment} {student}: {report.status} instead of {expected['status']}: {report.reason}")
                found += 1
                continue
            for o in report.outcomes:
                want = expected["checks"].get(o.check_id)
                if o.visibility == "public" and o.status != want:
                    print(f"{assignment} {student} {o.check_id}: {o.status} instead of {want}: {o.message}")
                    found += 1
                named, meant = o.misconception and o.misconception.id, expected.get("misconceptions", {}).get(o.check_id)
                if o.visibility == "public" and named != meant:
                    print(f"{assignment} {student} {o.check_id}: misconception {named} instead of {meant}: {o.message}")
                    found += 1
    print(f"{assignment}: {rounds} rounds × {fresh} fresh points, {found} differences", flush=True)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description="Grade every example submission at many fresh points, and print each "
                                 "status that differs from the one recorded in <student>.expected.json.")
    ap.add_argument("ids", nargs="*", help="assignment ids (default: every folder in solutions/)")
    ap.add_argument("--rounds", type=int, default=5, help="secrets to draw (default 5)")
    ap.add_argument("--fresh", type=int, default=40, help="fresh points per round (default 40)")
    args = ap.parse_args()
    ids = args.ids or sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / "spec.toml").exists())
    return 1 if sum(differences(a, args.rounds, args.fresh) for a in ids) else 0


if __name__ == "__main__":
    sys.exit(main())
