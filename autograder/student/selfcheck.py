"""selfcheck: the in-notebook self-check's helper process and its protocol. The student's kernel observes
an exercise with the probe's own code, then asks a separate trusted process (`python -m autograder
_selfcheck --serve`), which holds the key, to judge the observations: the key and the comparison never
run in the kernel, and only the first check pays for starting Python and importing sympy.

Protocol (one request after another over the helper's stdin and stdout): a JSON header line
{"key": path of the public key, "student": id, "exercise": [id], "cells": [source of each cell the kernel
ran], "labels": [how the student finds each of them], "records": [the exercise's commit record, if the
notebook has one], "commit": false to commit nothing (nbgrader's Validate), "size": n}, then n bytes of the probe's results
stream (wire format: hello, a record per cell the kernel ran, the exercise's records, done); the answer
is one line, the Report's JSON (its "commits" hold the exercise's record: the one sent, or the one made now
when every prediction is filled in). With a public key an exercise without a commit shows no expected
value (a full key, which a learner never has, would judge it open).

May import: stdlib, autograder.sandbox.client (its bounded read), autograder.keyfile (in serve),
autograder.grading.grade (in serve).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO

from autograder.sandbox.client import read_bounded


class ToolServer:
    """The kernel's client of the helper (started at the first `ask`, restarted when it has stopped).
    Thread-safe."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def ask(self, header: dict[str, Any], body: bytes, timeout: float = 120.0) -> bytes:
        """Send one request (a JSON header line, then `body`) and return the one-line answer (bytes).
        Raises RuntimeError with the helper's stderr when it fails or does not answer within `timeout`
        seconds (it is then asked once more, by a new helper)."""
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._err = tempfile.TemporaryFile()
                    self._proc = subprocess.Popen([sys.executable, "-m", "autograder", "_selfcheck", "--serve"],
                                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
                proc = self._proc
                try:
                    proc.stdin.write(json.dumps({**header, "size": len(body)}).encode() + b"\n" + body)
                    proc.stdin.flush()
                    line = read_bounded(proc.stdout.fileno(), timeout, line=True)
                except OSError:
                    line = b""
                if line:
                    return line
                proc.kill()
                proc.wait()
                self._proc = None
                self._err.seek(0)
                err = self._err.read()[-2000:].decode("utf-8", "replace")
                if attempt == 2 or err:
                    raise RuntimeError(f"the self-check helper failed: {err or 'no answer in time'}")
        raise AssertionError("unreachable")


def judge_once(key_path: str, student: str, exercises: list[str] | None, stream: bytes) -> dict[str, Any]:
    """Judge one results stream against the key at `key_path`: the Report's JSON form."""
    from autograder.grading.grade import report_from_results
    from autograder.keyfile import load_key

    return report_from_results(load_key(key_path), stream, student, exercises).to_dict()


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """The helper's loop: answer requests (see the module docstring) until stdin closes; returns 0. A key
    is read once and again when its file changes."""
    from autograder.grading.grade import report_from_results
    from autograder.keyfile import load_key

    keys: dict[tuple[str, float], Any] = {}
    while True:
        line = stdin.readline()
        if not line:
            return 0
        header = json.loads(line)
        body = stdin.read(int(header["size"]))
        path = str(header["key"])
        stamp = (path, Path(path).stat().st_mtime)
        if stamp not in keys:
            keys[stamp] = load_key(path)
        report = report_from_results(keys[stamp], body, str(header["student"]), header.get("exercise"),
                                     cells=header.get("cells"), labels=header.get("labels"),
                                     records=header.get("records"), seal=keys[stamp].public,
                                     commit_now=header.get("commit", True) is not False)
        stdout.write(json.dumps(report.to_dict()).encode() + b"\n")
        stdout.flush()
