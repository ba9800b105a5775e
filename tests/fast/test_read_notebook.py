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


def test_the_assignment_a_notebook_names_is_read_from_its_lab_call_and_is_never_a_path():
    import nbformat

    from autograder.grading.notebook import declared_assignment
    from autograder.keyfile import is_assignment_id

    def nb(*sources):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])

    assert declared_assignment(nb('lab = Lab("01-backward-vs-grad", STUDENT_ID)')) == "01-backward-vs-grad"
    assert declared_assignment(nb('# Lab("../../etc")', 'lab = Lab("02-accumulation", S)')) == "02-accumulation"
    assert declared_assignment(nb('s = \'Lab("03-leaves")\'')) is None          # a string says nothing
    assert declared_assignment(nb('lab = Lab("../solutions", S)')) is None        # never a path
    assert declared_assignment(nb('lab = Lab("/etc", S)')) is None
    assert [is_assignment_id(t) for t in ("01-backward-vs-grad", "a.b", "..", "a/b", "", "x" * 101, 3)] == \
        [True, True, False, False, False, False, False]


def test_code_beyond_what_the_grader_reads_on_the_host_is_named_with_its_size():
    from autograder.grading.notebook import MAX_CODE_CELLS, MAX_CODE_CHARACTERS, code_beyond_reading

    released = code_cells(read_notebook(ADA))
    assert code_beyond_reading(released) == ""
    assert code_beyond_reading(released + ["x = 1\n" * (MAX_CODE_CHARACTERS // 6 + 1)]).startswith(
        f"holds {sum(map(len, released)) + 6 * (MAX_CODE_CHARACTERS // 6 + 1):,} characters of code, more than the "
        f"{MAX_CODE_CHARACTERS:,} the grader reads")
    assert code_beyond_reading(["pass"] * (MAX_CODE_CELLS + 1)).startswith(f"has {MAX_CODE_CELLS + 1:,} code cells")
