"""gradescope: an assignment as a Gradescope "zip upload" autograder, and the step its run_autograder
runs on Gradescope.

May import: stdlib, autograder.model, autograder.keyfile, autograder.grading.identity, autograder.grading.intake, autograder.report,
autograder.render.gradescope, autograder.grading.notebook (lazily).

Gradescope's published autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/) asks for a zip with `setup.sh` and
`run_autograder` at its root. Gradescope unpacks it into /autograder/source, runs `setup.sh` once
(as root, on an Ubuntu image) when it builds the autograder image, copies `run_autograder` to
/autograder/run_autograder and runs it, in /autograder, for every submission, with the student's
files in /autograder/submission; it must leave /autograder/results/results.json.

`make_bundle` writes that zip:

- `setup.sh`: a Python >= 3.11 (apt's python3.11 when the image has none), a venv in
  /autograder/venv, torch==<the key's torch version> CPU-only from https://download.pytorch.org/whl/cpu
  first, then autograd-lab from the bundled source, and bubblewrap for the sandbox where apt has it.
- `run_autograder`: runs `python3 -m autograder.integrations.gradescope run` (see `run`), with the venv's
  python3 when it exists; if that step fails before writing results.json, it writes a fixed NOT
  GRADED result itself.
- `key.json`: the FULL key (hidden checks and the secret that seeds the graded fresh points). The
  bundle is for course staff only: upload it to Gradescope, never give it to students.
- `pyproject.toml`, `README.md` and the `autograder/` package source.

`AUTOGRADER_ROOT` (default /autograder) moves every path of both scripts, so a bundle can be tried
outside Gradescope: unzip it into ROOT/source, put the notebook in ROOT/submission, put a python3
that has autograd-lab on PATH and run ROOT/source/run_autograder.

The student id (it seeds the parameters): `AUTOGRADER_STUDENT` if set, else the notebook's own
`STUDENT_ID` (read with `ast`, never run: the id whose parameters the student worked with), else the
uploaded file's name. Characters other than letters, digits and `._@+-` become `_`. The report,
and so the Gradescope output, shows the id used; when it differs from the notebook's STUDENT_ID the
report notes it.

Known limit: Gradescope runs submissions in a container as root. Where bubblewrap works there the
sandbox hides the key as it does at home; where it does not (containers often forbid the
namespaces it needs), a submission is only a separate process and could read the bundled key
(the report's "sandbox:" line, shown in the output, says which).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from autograder.grading import identity, intake
from autograder.keyfile import load_key
from autograder.model import Key
from autograder.render.gradescope import to_results
from autograder.report import Report, installed_torch, write_json_atomic

TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)   # fixed timestamps: the same inputs give the same zip

SETUP_SH = """\
#!/usr/bin/env bash
# setup.sh of the autograd-lab Gradescope autograder for {assignment} (key {digest}).
# Gradescope runs it once, as root, when it builds the autograder image; the zip is unpacked in
# /autograder/source. It makes /autograder/venv with a Python >= 3.11, installs torch=={torch}
# (CPU-only) FIRST, then autograd-lab from the bundled source, and bubblewrap for the sandbox.
# AUTOGRADER_ROOT (default /autograder) moves every path.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SRC="$ROOT/source"
VENV="$ROOT/venv"
export DEBIAN_FRONTEND=noninteractive
apt_install() {{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; }}

# autograd-lab needs Python >= 3.11 (the python3 of Ubuntu 22.04 is 3.10).
PY=""
for cand in python3.13 python3.12 python3.11 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY=$(command -v "$cand")
    break
  fi
done
if [ -z "$PY" ]; then
  apt_install python3.11 python3.11-venv
  PY=$(command -v python3.11)
fi
VER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_install "python$VER-venv"
fi
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
# torch first, pinned and CPU-only: a bare "torch" would pull a multi-GB CUDA build.
"${{PIP[@]}}" install -q "torch=={torch}" --index-url {index}
"${{PIP[@]}}" install -q "$SRC[staff]"
# bubblewrap isolates each submission where the container allows it (the grader tests that it works
# and otherwise runs each submission as a separate process; every report says which).
if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap || echo "setup.sh: bubblewrap not installed; submissions will run without file and network isolation" >&2
fi
"$VENV/bin/python" -m autograder --version
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# run_autograder of the autograd-lab Gradescope autograder. Gradescope runs it once per submission,
# as root, in /autograder. `python3 -m autograder.integrations.gradescope run` copies the notebook from
# /autograder/submission, grades it with `python3 -m autograder grade NOTEBOOK --key
# /autograder/source/key.json --out <tmp>/out --gradescope <tmp>/results.json` and installs that
# results.json in /autograder/results. This script makes sure a results.json is always left: one
# that says NOT GRADED if the grader itself failed (never a silent 0).
# AUTOGRADER_ROOT (default /autograder) moves every path. python3 is the one of ROOT/venv (made by
# setup.sh) when it exists, else the first on PATH.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
if [ -x "$ROOT/venv/bin/python3" ]; then
  PATH="$ROOT/venv/bin:$PATH"
  export PATH
fi
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
cd "$ROOT" || exit 1
python3 -m autograder.integrations.gradescope run --root "$ROOT" --key "$ROOT/source/key.json"
if [ ! -s "$ROOT/results/results.json" ]; then
  echo "run_autograder: the grader failed before it wrote results.json; writing a NOT GRADED result" >&2
  cat > "$ROOT/results/results.json" <<'JSON'
{"score": 0.0, "output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
 "output": "# NOT GRADED\\n\\nThe autograder failed before it could grade this submission, so it has **no score**. Gradescope needs a number and shows 0, but **this 0 is not a grade for your work**, and it is not your fault. Course staff can see the autograder's log.",
 "extra_data": {"autograd_lab": {"status": "not_gradable", "reason": "the autograder failed before it could grade"}}}
JSON
fi
exit 0
"""


def _package_files(project_root: Path) -> list[Path]:
    pkg = project_root / "autograder"
    return sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".pyo"))


def make_bundle(key_path: str | Path, out_zip: str | Path, project_root: str | Path) -> Path:
    """Write Gradescope's autograder zip for the assignment of the FULL key at `key_path`, with the
    autograd-lab source of `project_root` (the folder with pyproject.toml and autograder/), to
    `out_zip` (atomically; parent folders are made). Returns the zip's path.

    Raises ValueError if the key is not a valid full key (a public key lacks the hidden checks and
    the secret) or `project_root` is not the autograd-lab project.
    """
    key_path, out_zip, root = Path(key_path), Path(out_zip), Path(project_root)
    key = load_key(key_path)
    if key.public or key.fresh_seed is None:
        raise ValueError(f"{key_path} is a public key: a Gradescope bundle needs the full key "
                         f"(build/{key.assignment}/key.json, made by `autograder release`)")
    if not (root / "pyproject.toml").is_file() or not (root / "autograder" / "__init__.py").is_file():
        raise ValueError(f"{root} is not the autograd-lab project (no pyproject.toml and autograder/ there)")
    torch = key.torch_version.split("+")[0]
    setup = SETUP_SH.format(assignment=key.assignment, digest=key.digest, torch=torch, index=TORCH_INDEX)
    entries: list[tuple[str, bytes, int]] = [
        ("setup.sh", setup.encode(), 0o755),
        ("run_autograder", RUN_AUTOGRADER.encode(), 0o755),
        ("key.json", key_path.read_bytes(), 0o644),
        ("pyproject.toml", (root / "pyproject.toml").read_bytes(), 0o644),
    ]
    if (root / "README.md").is_file():   # pyproject.toml names it as the readme: building needs it
        entries.append(("README.md", (root / "README.md").read_bytes(), 0o644))
    entries += [(p.relative_to(root).as_posix(), p.read_bytes(), 0o644) for p in _package_files(root)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, _ZIP_TIME)
            info.external_attr = (0o100000 | mode) << 16   # a regular file with these permissions
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_zip.parent, prefix=f".{out_zip.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, out_zip)
    except BaseException:
        os.unlink(tmp)
        raise
    return out_zip


def _notebooks(folder: Path) -> list[intake.Found]:
    """The upload's notebooks as the intake finds them (links and special files among them, none followed)."""
    return intake.find([folder]) if folder.is_dir() else []


def choose_notebook(folder: Path, released_name: str) -> tuple[intake.Found | None, str, list[str]]:
    """The notebook of an upload: the only .ipynb; else the only one that is the released notebook or a
    copy of it ("backward-vs-grad (1).ipynb"; see identity.is_released_name), leaving out copies whose
    answer cells are all as released (notebook.untouched); of one file uploaded twice (the same bytes), the one with
    the released name. A link or a special file is never read: it is listed
    among the ignored files, with what it is. Returns (the notebook, "", the other notebooks, which are
    ignored), or (None, why it cannot be graded, [])."""
    everything = _notebooks(folder)
    found = [f for f in everything if not f.problem]
    refused = [f"{f.name} ({f.kind}: not read)" for f in everything if f.problem]
    listed = lambda fs: ", ".join(f.name for f in fs[:10])
    if len(found) == 1:
        return found[0], "", refused
    if not found:
        if len(everything) == 1:
            return None, everything[0].problem, []
        names = sorted(e.name for e in folder.iterdir())[:10] if folder.is_dir() else []   # names only, never read
        return None, ("no .ipynb file in the upload that the grader can read"
                      + (f" (it holds {', '.join(names)})" if names else " (it is empty)")
                      + f"; upload your notebook ({released_name})"), []
    named = [f for f in found if identity.is_released_name(intake.notebook_stem(f.path.name), released_name)]
    if _one_file(found):   # one file uploaded twice ("backward-vs-grad (1).ipynb" beside it): nothing to choose between
        first = min(named or found, key=lambda f: (len(f.name), f.name))   # the file, not its copy "… (1)"
        return first, "", [f"{f.name} (the same file as {first.name})" for f in found if f != first] + refused
    if len(named) > 1:   # an untouched released copy beside the student's own work: the work is graded
        worked = [f for f in named if not _untouched(f)]
        named = worked if len(worked) == 1 else named
    if len(named) == 1:
        return named[0], "", [f.name + (" (unchanged since its release)" if _untouched(f) else "")
                              for f in found if f != named[0]] + refused
    return None, (f"the upload has {len(found)} notebooks ({listed(found)}), and the grader cannot tell which one "
                  f"is your work: upload only that one ({released_name})"), []


def _one_file(found: list[intake.Found]) -> bool:
    """Are these notebooks one file uploaded more than once (the same bytes)?"""
    import hashlib

    digests = set()
    for f in found:
        try:
            digests.add(hashlib.sha256(intake.read(f)).hexdigest())
        except intake.Refused:
            return False
    return len(digests) == 1


def _parsed(f: intake.Found) -> Any:
    """The notebook, or None when the intake refuses it or it is not one."""
    from autograder.grading.notebook import NotebookError, parse_notebook

    try:
        return parse_notebook(intake.read(f), f.path.name, outputs=False)
    except (NotebookError, intake.Refused):
        return None


def _untouched(f: intake.Found) -> bool:
    from autograder.grading.notebook import untouched

    nb = _parsed(f)
    return nb is not None and untouched(nb)


def uploader_ids(root: Path) -> tuple[str, ...]:
    """The student ids (SIDs) Gradescope's own record gives the uploader and the group members:
    ROOT/submission_metadata.json's users[].sid (Gradescope writes it; it is the course's record, not the
    student's). () when there is none (no metadata, or a course roster without SIDs)."""
    try:
        data = json.loads(intake.read(intake.given(root / "submission_metadata.json"), limit=1 << 20))
    except (intake.Refused, ValueError, OSError):
        return ()
    users = data.get("users") if isinstance(data, dict) else None
    sids = [u.get("sid") for u in users or [] if isinstance(u, dict)]
    return tuple(s.strip() for s in sids if isinstance(s, str) and s.strip())


def student_id_for(notebook: intake.Found, key: Key, uploader: tuple[str, ...] = ()) -> identity.Identity:
    """Whose upload this is (identity rule "upload"): AUTOGRADER_STUDENT, else the uploader's SID (`uploader`,
    from Gradescope's record), else the notebook's STUDENT_ID, else its file name (not a released name)."""
    from autograder.grading.notebook import declared_student_id

    nb = _parsed(notebook)
    declared = declared_student_id(nb) if nb is not None else None
    return identity.resolve(identity.Source(notebook.path, None, "upload", uploader=uploader), key.notebook,
                            key.assignment, declared)


def _not_graded(key: Key, submission: str, student: str, reason: str) -> dict[str, Any]:
    report = Report(key.assignment, submission, student, "not_gradable", None, key.max_score, reason=reason,
                    versions={"torch": installed_torch(), "torch_key": key.torch_version or "?"}, key_digest=key.digest)
    return to_results(report)


def run(root: str | Path, key_path: str | Path, python: str = sys.executable) -> int:
    """Grade the submission in ROOT/submission on Gradescope (or in a copy of its layout) and write
    ROOT/results/results.json. Copies the notebook to <tmp>/<id>/<id>.ipynb, or to
    <tmp>/<id>/<released name> when it has that name (`grade` takes the id from either), runs
    `python -m autograder grade <copy> --key KEY --out <tmp>/out --gradescope <tmp>/results.json
    --jobs 1` (its log goes to stdout, which only course staff see) and installs that file. Whatever fails, it writes a NOT GRADED result that says why. Returns 0
    when the submission was graded or found not gradable, 1 when the grader itself failed."""
    root, key_path = Path(root), Path(key_path)
    results = root / "results" / "results.json"
    key = load_key(key_path)
    notebook, why, ignored = choose_notebook(root / "submission", key.notebook)
    if notebook is None:
        write_json_atomic(results, _not_graded(key, "(none)", "?", why))
        return 0
    who = student_id_for(notebook, key, uploader_ids(root))
    student = who.student   # as the course's record spells it: it seeds the parameters (never a file name here)
    if who.problem:
        write_json_atomic(results, _not_graded(key, notebook.path.name, student, who.problem))
        return 0
    work = Path(tempfile.mkdtemp(prefix="autograd-lab-"))
    try:
        return _grade(root, key, key_path, notebook, student, work, python, results, ignored)
    except Exception as e:   # a fault of the grader: say so, never a silent 0
        reason = (f"not graded: internal grader error ({type(e).__name__}: {e}); this is not the student's fault: "
                  f"course staff can see the log")
        write_json_atomic(results, _not_graded(key, notebook.path.name, student, reason))
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _grade(root: Path, key: Key, key_path: Path, found: intake.Found, student: str, work: Path, python: str,
           results: Path, ignored: list[str] = ()) -> int:
    notebook = found.path
    # the copy keeps the uploaded name, so that the report names what the student uploaded; it holds the bytes
    # the intake read (no link followed, at most intake.MAX_BYTES)
    copy = work / "upload" / notebook.name
    copy.parent.mkdir()
    try:
        copy.write_bytes(intake.read(found))
    except intake.Refused as e:
        write_json_atomic(results, _not_graded(key, notebook.name, student, str(e)))
        return 0
    private = work / "results.json"
    cmd = [python, "-m", "autograder", "grade", str(copy), "--key", str(key_path), "--out", str(work / "out"),
           "--gradescope", str(private), "--jobs", "1", f"--student={student}"]
    print("run:", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    print(done.stdout, done.stderr, sep="\n", flush=True)
    data = None
    if done.returncode == 0 and private.is_file():
        try:
            data = json.loads(private.read_text(encoding="utf-8"))
        except ValueError:
            data = None
    if not isinstance(data, dict) or not ("score" in data or "tests" in data):
        reason = (f"not graded: internal grader error (`autograder grade` exited with code {done.returncode} "
                  f"and wrote no results); this is not the student's fault: course staff can see the log")
        write_json_atomic(results, _not_graded(key, notebook.name, student, reason))
        return 1
    if ignored:
        data["output"] = (f"Graded **{_md_name(notebook.name)}**; the upload's other notebooks were not graded: "
                          + ", ".join(_md_name(n) for n in ignored) + ".\n\n" + str(data.get("output", "")))
    write_json_atomic(results, data)
    return 0


def _md_name(name: str) -> str:
    """A file name a student chose, as markdown code (it cannot end the span or start markup)."""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", name)), default=0) + 1)
    return f"{ticks} {name} {ticks}"


def main(argv: list[str] | None = None) -> int:
    """`python -m autograder.integrations.gradescope run --root ROOT --key KEY` (what run_autograder calls)."""
    p = argparse.ArgumentParser(prog="python -m autograder.integrations.gradescope")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="grade ROOT/submission into ROOT/results/results.json (Gradescope)")
    r.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    r.add_argument("--key", help="the full key (default: ROOT/source/key.json)")
    args = p.parse_args(argv)
    return run(args.root, args.key or Path(args.root) / "source" / "key.json")


if __name__ == "__main__":
    sys.exit(main())
