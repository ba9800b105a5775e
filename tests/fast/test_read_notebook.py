"""Does reading a submission tell a broken file apart from a notebook, without a grader crash?"""
import json

import pytest

from autograder.grading.notebook import NotebookError, code_cell_labels, code_cells, read_notebook

from conftest import EXAMPLES

ADA = EXAMPLES / "ada.ipynb"


def test_a_byte_order_mark_is_allowed(tmp_path):
    path = tmp_path / "ada.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + ADA.read_bytes())
    assert code_cells(read_notebook(path)) == code_cells(read_notebook(ADA))


def test_a_python_script_is_named_as_not_a_notebook_not_as_truncated(tmp_path):
    path = tmp_path / "ada.py"
    path.write_text("import torch\n\ndef ex1(x):\n    return (x * x).backward()\n")
    with pytest.raises(NotebookError, match="ada.py is not a Jupyter notebook: it is text, not JSON") as e:
        read_notebook(path)
    assert "truncated" not in str(e.value)


@pytest.mark.parametrize("source", [42, None, ["a", 1], {"code": "x = 1"}])
def test_a_code_cell_whose_source_is_not_text_is_not_readable(tmp_path, source):
    nb = json.loads(ADA.read_text())
    nb["cells"][8]["source"] = source
    path = tmp_path / "ada.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(NotebookError, match="ada.ipynb is not a readable notebook: "):
        read_notebook(path)


def test_nbgrader_metadata_of_any_shape_still_gives_cell_labels(tmp_path):
    nb = json.loads(ADA.read_text())
    nb["cells"][8]["metadata"]["nbgrader"] = "garbage"
    nb["cells"][12]["metadata"]["nbgrader"] = {"grade_id": 42}
    path = tmp_path / "ada.ipynb"
    path.write_text(json.dumps(nb))
    labels = code_cell_labels(read_notebook(path))
    assert "cell 9" in labels and "cell 13" in labels and "cell 8 ('ex1-predict')" in labels
