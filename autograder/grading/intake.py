"""intake: the one door a handed-in file comes through, for every way of grading (a local batch, Dask, Gradescope,
an nbgrader course). A handed-in file is data: it is found without following links, opened without following
links (every folder on its way too), accepted only as a regular file inside the folder it was found in, and read
to at most MAX_BYTES. Anything else (a link, a FIFO, a device, a socket, a link to a folder, a file too large)
becomes a `Found` with a `problem`, which grading turns into a not-gradable report; a problem names the file and
what it is, and never quotes what it holds. Nothing downstream opens a submission's path again: it gets the bytes.

May import: stdlib.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_BYTES = 64 * 2**20   # a notebook handed in: 64 MiB (a released notebook is ~30 KB; one with large plots, tens of MB)
MAX_DEPTH = 16           # folders below the one given that `find` looks into (nbgrader's layout needs 2)
# What a browser appends to a notebook it saves (Chrome opens an .ipynb and saves it as "….ipynb.json"; others add
# .txt; Windows hides the last extension, so the student sees ".ipynb"): the file is still the notebook.
SAVED_AS = (".ipynb.json", ".ipynb.txt")
# Folders that hold no one's work: Jupyter's checkpoints. What macOS's Finder adds to a zip it makes (codabench
# #1655), __MACOSX/._name.ipynb, is a binary AppleDouble file (resource fork), not a notebook: a file named "._*" or
# lying in a __MACOSX folder is skipped when it begins with AppleDouble's magic number (RFC 1740), and only then (a
# notebook there is still found, and graded or refused like any other).
NOT_WORK_FOLDERS = frozenset({".ipynb_checkpoints"})
MACOS_ZIP_FOLDER = "__MACOSX"
APPLEDOUBLE_MAGIC = b"\x00\x05\x16\x07"


def is_notebook_name(name: str) -> bool:
    """Is `name` a notebook's file name: *.ipynb, or one a browser saved with SAVED_AS's suffixes?"""
    return name.endswith(".ipynb") or name.endswith(SAVED_AS)


def notebook_stem(name: str) -> str:
    """The name less its notebook suffix: "mia.ipynb" and "mia.ipynb.json" -> "mia" (any other name: its stem)."""
    name = Path(name).name
    for suffix in (*SAVED_AS, ".ipynb"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return Path(name).stem


def saved_as_note(name: str) -> list[str]:
    """A note for a notebook a browser saved with an extra suffix, or []."""
    name = Path(name).name
    for suffix in SAVED_AS:
        if name.endswith(suffix):
            extra = suffix.removeprefix(".ipynb")
            return [f"{name} was saved with an extra {extra} (by the browser); it was graded as the notebook it "
                    f"is: next time rename it to {name[:-len(extra)]}"]
    return []

Kind = Literal["file", "link", "folder link", "special"]


class Refused(Exception):
    """A handed-in file the grader does not read; the message says what it is, for the report, never what it
    holds."""


@dataclass(frozen=True)
class Found:
    """A name found under a folder given to `grade` (or given itself): `path` as found (never resolved: a link
    stays the link), `name` (its path below `root`, with "/"; the file name for a file given alone), the folder
    it was found under (None for a file given alone), and what it is (`kind`; `problem`, "" for a regular file
    the grader will read)."""

    path: Path
    name: str
    root: Path | None
    kind: Kind = "file"
    problem: str = ""

    def parts(self) -> tuple[str, ...]:
        """Its folders below `root`, outermost first (the lexical path: links are not followed)."""
        return tuple(Path(self.name).parts[:-1])


def _what(mode: int) -> str:
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "not a regular file")


def _examine(path: Path, name: str, root: Path | None) -> Found:
    """What `path` is, by lstat (never following it)."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return Found(path, name, root, "special", f"{path.name} cannot be read ({e.strerror})")
    if stat.S_ISLNK(st.st_mode):
        return Found(path, name, root, "link", f"{path.name} is a symbolic link, not a file: the grader does not "
                                               f"follow links; hand in the notebook itself")
    if not stat.S_ISREG(st.st_mode):
        return Found(path, name, root, "special", f"{path.name} is {_what(st.st_mode)}, not a notebook file")
    if st.st_size > MAX_BYTES:
        return Found(path, name, root, "file", too_large(path.name, st.st_size))
    return Found(path, name, root)


def too_large(name: str, size: int) -> str:
    return (f"{name} is {size / 2**20:.1f} MiB, more than the {MAX_BYTES // 2**20} MiB a notebook may have: clear "
            f"its outputs (Edit > Clear Outputs of All Cells), save, and hand it in again")


def find(paths: list[str | Path]) -> list[Found]:
    """Every notebook name (*.ipynb, and SAVED_AS's) under each folder of `paths` (NOT_WORK_FOLDERS and a Mac zip's
    AppleDouble files skipped), and each file
    of `paths` given itself, in order, each once (by its path as given, never resolved). Links are listed, never
    followed: a link named *.ipynb and a link to a folder are each a Found with their problem, and so is a folder
    more than MAX_DEPTH below the one given (not looked into).

    Raises:
        FileNotFoundError: a path that does not exist (a link given itself is examined, not followed).
    """
    found: list[Found] = []
    seen: set[str] = set()

    def add(f: Found) -> None:
        key = os.path.abspath(f.path)
        if key not in seen:
            seen.add(key)
            found.append(f)

    for given in map(Path, paths):
        if not os.path.lexists(given):
            raise FileNotFoundError(f"no such file or folder: {given}")
        if given.is_dir() and not given.is_symlink():
            for f in _walk(given):
                add(f)
        else:
            add(_examine(given, given.name, None))
    return found


def other_files(paths: list[str | Path], limit: int = 1000) -> list[str]:
    """The files under each folder of `paths` that are not notebooks, as names relative to the folder given (at most
    `limit`): what a batch does not grade, listed so that staff can tell a hand-in in another form (a PDF, a .py, a
    zip) from no hand-in. Links are not followed; hidden files, NOT_WORK_FOLDERS, a Mac zip's __MACOSX and nbgrader's
    timestamp.txt are left out. Only names are read."""
    out: list[str] = []
    for given in map(Path, paths):
        if not given.is_dir() or given.is_symlink():
            continue
        for here, dirs, files in os.walk(given):   # os.walk follows no link to a folder by default
            depth = len(Path(here).relative_to(given).parts)
            dirs[:] = sorted(d for d in dirs if d not in NOT_WORK_FOLDERS and d != MACOS_ZIP_FOLDER
                             and not d.startswith(".") and depth < MAX_DEPTH)
            for name in sorted(files):
                if not (is_notebook_name(name) or name.startswith(".") or name == "timestamp.txt"):
                    out.append((Path(here) / name).relative_to(given).as_posix())
                    if len(out) >= limit:
                        return out
    return out


def _walk(root: Path) -> list[Found]:
    """What `find` lists under `root`, folder by folder (with a stack, not recursion: a handed-in tree may be any
    depth), in sorted order; folders more than MAX_DEPTH below `root` are listed as not read."""
    out: list[Found] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            rel = here.relative_to(root).as_posix()
            out.append(Found(here, rel, root, "special", f"{here.name} cannot be listed ({e.strerror})"))
            continue
        below = []
        for e in entries:
            path = here / e.name
            rel = path.relative_to(root).as_posix()
            if e.is_symlink() and _is_dir_link(path):   # not followed: listed, so nothing is lost
                out.append(Found(path, rel, root, "folder link",
                                 f"{e.name} is a symbolic link to a folder, not a folder: the grader does not follow "
                                 f"links; hand in the notebooks themselves"))
            elif e.is_dir(follow_symlinks=False):
                if e.name in NOT_WORK_FOLDERS:
                    continue
                if depth + 1 > MAX_DEPTH:
                    out.append(Found(path, rel, root, "special",
                                     f"{e.name} lies more than {MAX_DEPTH} folders deep below the folder given, "
                                     f"so the grader does not look into it"))
                    continue
                below.append((path, depth + 1))
            elif is_notebook_name(e.name) and not ((e.name.startswith("._") or MACOS_ZIP_FOLDER in Path(rel).parts)
                                                    and e.is_file(follow_symlinks=False) and _is_appledouble(path)):
                out.append(_examine(path, rel, root))
        stack.extend(reversed(below))   # depth first, in name order
    return out


def _is_appledouble(path: Path) -> bool:
    """Is `path` a regular file (not followed if a link) that begins with AppleDouble's magic number?"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == APPLEDOUBLE_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def _is_dir_link(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def read(f: Found, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file found by `find` (or made by `given`), opened again without following any link
    on its way from its root (so a file swapped for a link after `find` is refused as well), at most `limit`.

    Raises:
        Refused: it is not a regular file inside its folder, or it is larger than `limit`.
    """
    if f.problem:
        raise Refused(f.problem)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    here = -1
    fd = -1
    try:
        try:   # the folder given (or the file's own folder) is the staff's: it may itself be reached through a link
            here = os.open(f.root if f.root is not None else (f.path.parent if str(f.path.parent) else "."),
                           os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            for part in f.parts():
                nxt = os.open(part, dir_flags, dir_fd=here)
                os.close(here)
                here = nxt
            fd = os.open(f.path.name, flags, dir_fd=here)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise Refused(f"{f.path.name} is, or lies in, a symbolic link: the grader does not follow links; "
                              f"hand in the notebook itself") from None
            raise Refused(f"{f.path.name} cannot be read ({e.strerror})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{f.path.name} is {_what(st.st_mode)}, not a notebook file")
        if st.st_size > limit:
            raise Refused(too_large(f.path.name, st.st_size))
        data = os.read(fd, st.st_size + 1)   # one buffer of the file's size: the bytes are held once
        while len(data) <= st.st_size:       # a short read (rare for a regular file): the rest, and then EOF
            more = os.read(fd, limit + 1 - len(data))
            if not more:
                break
            data += more
        if len(data) > limit:   # it grew while being read
            raise Refused(too_large(f.path.name, len(data)))
        return data
    finally:
        for d in (fd, here):
            if d >= 0:
                os.close(d)


def given(path: str | Path) -> Found:
    """A file named by its user (`autograder check NOTEBOOK`, a release's solution, an upload's one notebook):
    examined like any handed-in file, in its own folder."""
    p = Path(path)
    return _examine(p, p.name, None)
