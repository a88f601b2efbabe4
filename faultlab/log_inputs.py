"""The files diagnose reads, and where each sits in the job.

Only regular files are read; a directory given is walked, skipping the run directory's copy of
the script and links that lead out of it. A file's place in the job (node, rank, local rank)
comes from the part of its path below the inputs, as faultlab's run directories and launchers'
log directories name them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path

SOURCE_SUFFIXES = (".py",)
RANK_IN_PATH = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?=[/_.-]|$)")
NODE_IN_PATH = re.compile(r"(?:^|[/_.-])node[_-]?(\d+)(?=[/_.-]|$)")
LOCAL_RANK_IN_PATH = re.compile(r"(?:^|[/_.-])local(?:_rank)?[_-]?(\d+)(?=[/_.-]|$)")


@dataclasses.dataclass(frozen=True)
class JobPlace:
    """Where a file sits in the job (node, rank, local rank), as the part of its path below the
    inputs' deepest common directory says. A directory above the inputs ('/tmp/case-rank1-crash/',
    a test's temporary directory) names nothing in the job."""

    node: int | None = None
    rank: int | None = None
    local_rank: int | None = None

    @classmethod
    def of(cls, below: str) -> "JobPlace":
        return cls(number_in(NODE_IN_PATH, below), number_in(RANK_IN_PATH, below),
                   number_in(LOCAL_RANK_IN_PATH, below))


def number_in(pattern: re.Pattern, text: str) -> int | None:
    match = pattern.search(text.replace(os.sep, "/"))
    return int(next(group for group in match.groups() if group is not None)) if match else None


def log_files(paths: list[Path]) -> tuple[list[str], list[str], list[str]]:
    """Every regular file under `paths`; notes for what is skipped; the paths that do not exist.

    Only regular files are read: a FIFO or a device among the logs would block or never end."""
    files, notes, missing = [], [], []

    def add(path: str) -> None:
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            notes.append(f"{path}: unreadable ({error.strerror or error})")
            return
        if stat.S_ISREG(mode):
            files.append(path)
        else:
            notes.append(f"{path}: not a regular file, skipped")

    for path in paths:
        if path.is_dir():
            inside = os.path.realpath(path) + os.sep
            for root, _, names in os.walk(path, onerror=lambda error: notes.append(
                    f"{error.filename}: unreadable ({error.strerror or error})")):
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if name.endswith(SOURCE_SUFFIXES):  # a run directory's copy of the script is not a log
                        notes.append(f"{full}: source code, skipped")
                    elif os.path.islink(full) and not os.path.realpath(full).startswith(inside):
                        notes.append(f"{full}: a link out of {path}, skipped")
                    else:
                        add(full)
        elif os.path.lexists(path):
            add(str(path))
        else:
            missing.append(f"{path}: no such file or directory")
    return files, notes, missing


def job_places(paths: list[Path], files: list[str]) -> list[JobPlace]:
    """The place of each of `files` (found under `paths` by log_files), from the part of its path
    below the deepest directory common to the inputs: a directory given is that directory, a
    file given its parent (an input that does not exist places nothing)."""
    tops = [os.path.abspath(path if path.is_dir() else path.parent) for path in paths if os.path.lexists(path)]
    common = os.path.commonpath(tops) if tops else os.sep
    return [JobPlace.of(os.path.relpath(os.path.abspath(file), common)) for file in files]
