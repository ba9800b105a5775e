"""The one door a handed-in file comes through (autograder.grading.intake): regular files inside the folder given,
read without following any link and at most MAX_BYTES; everything else refused with a reason that names the file
and never quotes what it holds. And parsing a notebook's bytes stays within bounds (grading.notebook)."""
from __future__ import annotations

import json
import os
import socket

import pytest

from autograder.grading import intake, plan
from autograder.grading.notebook import MAX_CONTAINERS, NotebookError, parse_notebook

from conftest import EXAMPLES


@pytest.fixture
def folder(tmp_path):
    subs = tmp_path / "subs"
    (subs / "mia").mkdir(parents=True)
    (subs / "ada.ipynb").write_bytes((EXAMPLES / "ada.ipynb").read_bytes())
    (subs / "mia" / "backward-vs-grad.ipynb").write_text("{}")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$SECRET-HASH:20228:0:99999:7:::\n")
    os.symlink(secret, subs / "eve.ipynb")
    os.symlink("../subs/ada.ipynb", subs / "copycat.ipynb")          # a link to a classmate's file
    os.mkfifo(subs / "pipe.ipynb")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(subs / "sock.ipynb"))
    os.symlink(tmp_path, subs / "elsewhere")                         # a link to a folder
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / ".ipynb_checkpoints" / "ada-checkpoint.ipynb").write_text("{}")
    return subs


def test_every_name_is_found_and_nothing_is_followed(folder):
    found = {f.name: f for f in intake.find([folder])}
    assert sorted(found) == ["ada.ipynb", "copycat.ipynb", "elsewhere", "eve.ipynb", "mia/backward-vs-grad.ipynb",
                             "pipe.ipynb", "sock.ipynb"]
    assert {n: f.kind for n, f in found.items()} == {
        "ada.ipynb": "file", "copycat.ipynb": "link", "elsewhere": "folder link", "eve.ipynb": "link",
        "mia/backward-vs-grad.ipynb": "file", "pipe.ipynb": "special", "sock.ipynb": "special"}
    assert found["eve.ipynb"].problem == ("eve.ipynb is a symbolic link, not a file: the grader does not follow "
                                          "links; hand in the notebook itself")
    assert found["pipe.ipynb"].problem == "pipe.ipynb is a FIFO (named pipe), not a notebook file"
    assert found["sock.ipynb"].problem == "sock.ipynb is a socket, not a notebook file"
    assert found["elsewhere"].problem.startswith("elsewhere is a symbolic link to a folder")
    assert found["mia/backward-vs-grad.ipynb"].parts() == ("mia",)
    assert intake.read(found["ada.ipynb"]) == (EXAMPLES / "ada.ipynb").read_bytes()
    for name in ("eve.ipynb", "copycat.ipynb", "pipe.ipynb", "sock.ipynb", "elsewhere"):
        with pytest.raises(intake.Refused) as e:
            intake.read(found[name])
        assert "SECRET" not in str(e.value) and "root:" not in str(e.value)


def test_a_file_swapped_for_a_link_or_put_behind_a_linked_folder_after_it_was_found_is_refused(folder, tmp_path):
    found = {f.name: f for f in intake.find([folder])}
    (folder / "ada.ipynb").unlink()
    os.symlink(tmp_path / "secret.txt", folder / "ada.ipynb")
    with pytest.raises(intake.Refused, match="ada.ipynb is, or lies in, a symbolic link"):
        intake.read(found["ada.ipynb"])
    os.rename(folder / "mia", tmp_path / "mia-real")
    os.symlink(tmp_path / "mia-real", folder / "mia")   # the student folder itself is now a link
    with pytest.raises(intake.Refused, match="lies in, a symbolic link"):
        intake.read(found["mia/backward-vs-grad.ipynb"])


def test_a_file_given_itself_is_examined_not_followed(folder):
    assert intake.given(folder / "eve.ipynb").kind == "link"
    assert intake.read(intake.given(folder / "ada.ipynb"))[:1] == b"{"
    assert [f.kind for f in intake.find([folder / "copycat.ipynb"])] == ["link"]
    with pytest.raises(FileNotFoundError):
        intake.find([folder / "nobody.ipynb"])


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.ipynb"
    with big.open("wb") as f:
        f.truncate(intake.MAX_BYTES + 1)   # sparse: nothing to read, were it read
    found = intake.given(big)
    assert found.problem == ("big.ipynb is 64.0 MiB, more than the 64 MiB a notebook may have: clear its outputs "
                             "(Edit > Clear Outputs of All Cells), save, and hand it in again")
    small = tmp_path / "small.ipynb"
    small.write_bytes(b"x" * 100)
    with pytest.raises(intake.Refused, match="more than"):
        intake.read(intake.given(small), limit=99)


def test_a_notebook_of_many_tiny_json_objects_is_refused_and_a_large_honest_one_is_read():
    nb = json.loads((EXAMPLES / "ada.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {"application/json": "@@"}}]
    text = json.dumps(nb)
    bomb = text.replace('"@@"', "[" + ",".join(["{}"] * (MAX_CONTAINERS + 1)) + "]").encode()
    with pytest.raises(NotebookError, match=r"holds more than 500,000 JSON objects and lists") as e:
        parse_notebook(bomb, "mallory.ipynb")
    assert "{}" not in str(e.value)
    honest = text.replace('"@@"', '"' + "A" * 5_000_000 + '"').encode()   # a large image, say
    assert len(parse_notebook(honest, "ada.ipynb", outputs=False).cells) == len(nb["cells"])


def test_a_reason_never_quotes_the_file():
    for data in (b"root:$6$SECRET-HASH:20228:0\n", b"SECRET_TOKEN=hunter2\0SHELL=/bin/bash", b'{"cells": [SECRET'):
        with pytest.raises(NotebookError) as e:
            parse_notebook(data, "eve.ipynb")
        assert "SECRET" not in str(e.value) and "hunter2" not in str(e.value)


def test_graded_fresh_points_are_the_submissions_own():
    from dataclasses import replace

    from autograder.keyfile import load_key

    from conftest import ROOT

    key = replace(load_key(ROOT / "assignments" / "01-backward-vs-grad" / "public_key.json"), fresh_seed="s3cret")
    a, b = plan.points_for(key, "mia", "aaaa"), plan.points_for(key, "mia", "bbbb")
    assert a[0] == b[0] and a[1:] != b[1:]                  # her own point stays; the fresh ones move
    assert plan.points_for(key, "mia", "aaaa") == a          # the same bytes: the same points (a batch resumes)
    assert plan.submission_salt(b"x") != plan.submission_salt(b"y")
    public = load_key(ROOT / "assignments" / "01-backward-vs-grad" / "public_key.json")
    assert plan.points_for(public, "mia", "aaaa") == plan.points_for(public, "mia", "bbbb")   # a self-check's: fixed


def test_a_tree_deeper_than_the_limit_is_listed_not_walked_and_any_depth_is_safe(tmp_path, deep_folders):
    """A handed-in tree of 1,100 nested folders (a recursive walk would hit Python's recursion limit): the
    grader looks MAX_DEPTH folders down and lists the next one as not read, so nothing disappears silently."""
    subs = tmp_path / "subs"
    deep = deep_folders(subs, 1100)
    (deep / "lost.ipynb").write_text("{}")
    (subs / "ada.ipynb").write_text("{}")
    found = intake.find([subs])
    assert [f.name for f in found] == ["ada.ipynb", "/".join(["d"] * (intake.MAX_DEPTH + 1))]
    assert found[1].problem == (f"d lies more than {intake.MAX_DEPTH} folders deep below the folder given, so the "
                                f"grader does not look into it") and found[0].problem == ""


@pytest.mark.parametrize("text, why", [
    ('{"nbformat": 4, "cells": [], "metadata": {}, "x": 1' + "0" * 5000 + "}", "holds a JSON number no notebook"),
    ('{"nbformat": 4, "nbformat_minor": 5, "cells": [], "metadata": {"x": "\\ud800"}}', None),
])
def test_odd_json_a_huge_integer_and_a_lone_surrogate_are_data(text, why):
    if why:
        with pytest.raises(NotebookError) as e:
            parse_notebook(text.encode(), "mallory.ipynb")
        assert why in str(e.value) and "0000" not in str(e.value)   # named, never quoted
    else:   # JSON may hold a lone surrogate; reading it is no crash
        assert parse_notebook(text.encode(), "mallory.ipynb").metadata["x"] == "\ud800"
