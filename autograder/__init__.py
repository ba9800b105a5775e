"""autograd-lab: predict-then-produce exercises on PyTorch autograd, and their autograder.

Public API only; the names load lazily so that `autograder --help` imports neither torch nor sympy.

May import: stdlib, and lazily any module of the public API below.
"""
from __future__ import annotations

from typing import Any

from autograder.version import __version__

_API = {
    "load_spec": "autograder.authoring.spec", "SpecError": "autograder.authoring.spec",
    "release": "autograder.authoring.release", "build_key": "autograder.authoring.release", "load_key": "autograder.keyfile",
    "BuildError": "autograder.authoring.release", "Key": "autograder.model", "Check": "autograder.model",
    "grade_notebook": "autograder.grading.grade", "outcomes": "autograder.judging.judge",
    "Report": "autograder.report", "Outcome": "autograder.report", "read_report": "autograder.report",
    "Lab": "autograder.student.lab",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")
