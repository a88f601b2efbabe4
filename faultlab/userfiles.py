"""The one guarded place where faultlab opens files a user names and writes its outputs.

Reading: only regular files (a FIFO or a device would block or never end), opened without
blocking, checked by size before a byte is parsed, and read no further than the limit of
what they should be. Writing: atomically through a temporary file of a unique name beside
the target, never over the recording store or a file read in the same command, never over
something that is not a regular file, and never into a folder that does not exist.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from .errors import BadInput

MB = 1 << 20
SCENARIO_LIMIT = 1 * MB  # a scenario, a packs file, an answers file, a case list (a few KB each)
RECORDING_FILE_LIMIT = 64 * MB
BUNDLE_LIMIT = 512 * MB
SNIFF_BYTES = 4096

# (device, inode) and resolved path of every file this command reads or guards (the store):
# an output never replaces one of them.
_guarded: dict[tuple[int, int] | str, str] = {}


def begin_command() -> None:
    """Forget the files of a previous command run in this process (tests run many)."""
    _guarded.clear()


def guard(path: Path, why: str) -> None:
    """Never write an output over `path` (e.g. the recording store) in this command."""
    resolved = Path(path).resolve()
    _guarded[str(resolved)] = why
    with contextlib.suppress(OSError):
        info = os.stat(resolved)
        _guarded[info.st_dev, info.st_ino] = why


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(path, error: OSError):
    if error.errno == errno.ENOENT:
        raise BadInput(f"{path}: file not found") from None
    raise BadInput(f"{path}: cannot read: {error.strerror or error}") from None


@contextlib.contextmanager
def open_regular(path, limit: int | None = None):
    """A binary stream of the regular file at `path`; BadInput for anything else, or for a
    file larger than `limit` bytes. Opening never blocks (O_NONBLOCK), even on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        _refuse(path, error)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: {_kind(info.st_mode)}, not a regular file")
        if limit is not None and info.st_size > limit:
            raise BadInput(f"{path}: {info.st_size / MB:.1f} MB, more than the {limit / MB:g} MB such a file can be")
        os.set_blocking(descriptor, True)
        stream = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    _guarded[info.st_dev, info.st_ino] = "is read by this command"
    _guarded[str(Path(path).resolve())] = "is read by this command"
    with stream:
        yield stream


def read_bytes(path, limit: int, what: str = "", looks_right=None) -> bytes:
    """The whole regular file at `path`, at most `limit` bytes (a file that grows past it
    while read is refused too). With `looks_right`, a check of the first few KB before the
    rest is read: a file that is plainly not `what` costs no memory."""
    with open_regular(path, limit) as stream:
        data = stream.read(SNIFF_BYTES)
        if looks_right is not None and not looks_right(data):
            raise BadInput(f"{path}: not {what}")
        data += stream.read(limit + 1 - len(data))
    if len(data) > limit:
        raise BadInput(f"{path}: more than the {limit / MB:g} MB such a file can be")
    return data


def read_text(path, limit: int = SCENARIO_LIMIT) -> str:
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: not UTF-8 text (byte {error.start})") from None


def _check_target(path: Path) -> Path:
    """The file an output to `path` lands in (a link is followed); BadInput if it must not."""
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise BadInput(f"{path}: folder {target.parent} does not exist")
    why = _guarded.get(str(target))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise BadInput(f"{path}: cannot write: {error.strerror or error}") from None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: {_kind(info.st_mode)}: an output must be a regular file")
        why = why or _guarded.get((info.st_dev, info.st_ino))
    if why:
        raise BadInput(f"{path}: refusing to write over a file that {why}")
    return target


def write_text(path, text: str) -> None:
    """Write `text` to `path` atomically: a temporary file of a unique name beside it, then a
    rename; a reader (or a crash) never sees half a file, two writers never share a temporary."""
    target = _check_target(Path(path))
    try:
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise BadInput(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise BadInput(f"{path}: cannot write: {error.strerror or error}") from None
        raise


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current
