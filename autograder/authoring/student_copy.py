"""student_copy: the student version of a solution notebook, made by nbgrader's own `generate_assignment`
preprocessors, so that nbgrader courses and our release make the same notebook.

May import: stdlib, nbgrader.
"""
from __future__ import annotations

import copy
from typing import Any


def student_copy(nb: Any) -> Any:
    """Return the student version of a solution notebook, made by nbgrader's own `generate_assignment`
    preprocessors (LockCells, ClearSolutions, ClearOutput, CheckCellMetadata, ComputeChecksums,
    ClearHiddenTests, ClearMarkScheme), with ClearSolutions' code stub set to "" so that a cell keeps
    its `...` placeholders or its `raise NotImplementedError` after ### END SOLUTION. nbgrader with
    `c.ClearSolutions.code_stub = {"python": ""}` makes the same notebook (tests/test_nbgrader.py).
    Raises RuntimeError (from nbgrader) for a solution region outside a solution cell, or bad
    nbgrader metadata."""
    from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput,
                                        ClearSolutions, ComputeChecksums, LockCells)

    nb = copy.deepcopy(nb)
    steps = [LockCells(), ClearSolutions(code_stub={"python": ""}, enforce_metadata=True), ClearOutput(),
             CheckCellMetadata(), ComputeChecksums(), ClearHiddenTests(), ClearMarkScheme(), ComputeChecksums(),
             CheckCellMetadata()]
    for step in steps:
        nb, _ = step.preprocess(nb, {})
    return nb
