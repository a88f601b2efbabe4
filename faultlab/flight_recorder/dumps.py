"""Reading Flight Recorder dumps: a restricted unpickler and the dump -> RankDump conversion.

A dump is a pickle, and a pickle from elsewhere is untrusted: `pickle.load` would run
whatever callable it names. The unpickler here resolves no global at all, so only the
opcodes that build plain containers and scalars can succeed; anything else is one BadInput
line naming the file, and nothing it names is imported or called.
"""

from __future__ import annotations

import ast
import io
import pickle
import re
from pathlib import Path

from ..errors import BadInput
from .records import Entry, Frame, GroupConfig, GroupStatus, RankDump, Trigger

MAX_DUMP_BYTES = 256 * 1024 * 1024  # a 20,000-entry buffer with stacks is a few MB
PLAIN_TYPES = (dict, list, tuple, str, int, float, bool, type(None), bytes)
# torch names dumps <prefix><rank>: the rank is the trailing number of the file name;
# a faultlab run directory names them node<N>-local<L>-rank<R>.fr.
RANK_SUFFIX = re.compile(r"(\d+)$")
RANK_IN_NAME = re.compile(r"rank(\d+)\.fr$")


class HostileDump(BadInput):
    """A pickle that names code to run or objects to build: refused outright, never skipped."""


class _Refused(pickle.UnpicklingError):
    pass


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise _Refused(f"it names {module}.{name}, and only plain containers and scalars are accepted")

    def persistent_load(self, pid):
        raise _Refused("it refers to a persistent object, and only plain data is accepted")


def _check_plain(value, depth: int = 0) -> None:
    if depth > 64:
        raise pickle.UnpicklingError("it nests deeper than a dump does")
    if not isinstance(value, PLAIN_TYPES):
        raise pickle.UnpicklingError(f"it holds a {type(value).__name__}, not plain data")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plain(key, depth + 1)
            _check_plain(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_plain(item, depth + 1)


def unpickle_plain(data: bytes, where: str):
    """The plain data in `data`; BadInput naming `where` for anything else."""
    try:
        value = _PlainUnpickler(io.BytesIO(data)).load()
        _check_plain(value)
    except _Refused as error:
        raise HostileDump(f"{where}: not a Flight Recorder dump: {error}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, MemoryError,
            RecursionError, OverflowError, UnicodeDecodeError) as error:
        raise BadInput(f"{where}: not a Flight Recorder dump: {error}") from None
    return value


def rank_of_file(path: Path) -> int | None:
    match = RANK_SUFFIX.search(path.name) or RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def load_dump(path: Path, rank: int | None = None, trigger: Trigger = "file") -> RankDump:
    """One dump file as a RankDump; the rank is `rank`, else the file name's trailing number."""
    path = Path(path)
    if rank is None:
        rank = rank_of_file(path)
        if rank is None:
            raise BadInput(f"{path}: no rank at the end of the file name (torch writes <prefix><rank>)")
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise BadInput(f"{path}: {size} bytes, more than a Flight Recorder dump ({MAX_DUMP_BYTES} at most)")
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found") from None
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}") from None
    return parse_dump(unpickle_plain(data, str(path)), rank, trigger, path.name, str(path))


def parse_dump(raw, rank: int, trigger: Trigger, source: str, where: str) -> RankDump:
    """A RankDump from the plain data torch dumped; BadInput names the bad field."""
    try:
        if not isinstance(raw, dict) or "entries" not in raw or "version" not in raw:
            raise ValueError("no 'entries' and 'version' at its top level")
        return RankDump(
            rank=rank,
            trigger=trigger,
            source=source,
            version=str(raw["version"]),
            comm_lib_version=str(raw.get("comm_lib_version") or ""),
            groups=tuple(_group(key, config) for key, config in _mapping(raw.get("pg_config") or {}).items()),
            status=tuple(_status(key, status) for key, status in _mapping(raw.get("pg_status") or {}).items()),
            entries=tuple(_entry(item, index) for index, item in enumerate(raw["entries"] or [])),
        )
    except (ValueError, TypeError, KeyError, SyntaxError) as error:
        raise BadInput(f"{where}: not a Flight Recorder dump: {error}") from None


def _mapping(value) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping, got {type(value).__name__}")
    return value


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: expected an integer, got {value!r}")
    return value


def _group(key, config) -> GroupConfig:
    config = _mapping(config)
    ranks = config.get("ranks", ())
    if isinstance(ranks, str):  # torch dumps the member list as the text '[0, 1, 2]'
        ranks = ast.literal_eval(ranks)
    return GroupConfig(
        key=str(key),
        name=str(config.get("name", "")),
        desc=str(config.get("desc", "")),
        ranks=tuple(_int(rank, f"pg_config[{key!r}].ranks") for rank in ranks),
    )


def _status(key, status) -> GroupStatus:
    status = _mapping(status)
    return GroupStatus(
        group=str(key),
        last_enqueued=_int(status.get("last_enqueued_collective", -1), f"pg_status[{key!r}]"),
        last_started=_int(status.get("last_started_collective", -1), f"pg_status[{key!r}]"),
        last_completed=_int(status.get("last_completed_collective", -1), f"pg_status[{key!r}]"),
    )


def _sizes(value, what: str) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(_int(size, what) for size in shape) for shape in (value or ()))


def _optional_ns(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _entry(item, index: int) -> Entry:
    what = f"entries[{index}]"
    item = _mapping(item)
    group = item.get("process_group") or ("", "")
    return Entry(
        record_id=_int(item.get("record_id", index), f"{what}.record_id"),
        group=str(group[0]),
        group_desc=str(group[1]) if len(group) > 1 else "",
        seq_id=_int(item.get("collective_seq_id", 0), f"{what}.collective_seq_id"),
        p2p_seq_id=_int(item.get("p2p_seq_id", 0), f"{what}.p2p_seq_id"),
        is_p2p=bool(item.get("is_p2p", False)),
        op=str(item.get("profiling_name", "")),
        state=str(item.get("state", "")),
        retired=bool(item.get("retired", False)),
        input_sizes=_sizes(item.get("input_sizes"), f"{what}.input_sizes"),
        output_sizes=_sizes(item.get("output_sizes"), f"{what}.output_sizes"),
        input_dtypes=tuple(str(dtype) for dtype in item.get("input_dtypes") or ()),
        output_dtypes=tuple(str(dtype) for dtype in item.get("output_dtypes") or ()),
        timeout_ms=_int(item.get("timeout_ms", 0), f"{what}.timeout_ms"),
        time_created_ns=_int(item.get("time_created_ns", 0), f"{what}.time_created_ns"),
        time_started_ns=_optional_ns(item.get("time_discovered_started_ns")),
        time_completed_ns=_optional_ns(item.get("time_discovered_completed_ns")),
        frames=tuple(
            Frame(name=str(frame.get("name", "")), filename=str(frame.get("filename", "")),
                  line=_int(frame.get("line", 0), f"{what}.frames"))
            for frame in (_mapping(frame) for frame in item.get("frames") or ())
        ),
    )


def torch_form(dump: RankDump) -> tuple[dict, list[str]]:
    """The dump as torch's analyzer reads it, and what had to change for it to read it.

    gloo keys its default group's pg_config by '' while its entries name the group '0';
    torch's analyzer then fails with KeyError ('0', rank). The entry's own name and
    description are used as the key instead.
    """
    named = {entry.group: entry.group_desc for entry in dump.entries}
    pg_config, changes = {}, []
    for group in dump.groups:
        key, name, desc = group.key, group.name, group.desc
        if key == "" and len(named) == 1:
            (key, desc), = named.items()
            name = key
            changes.append(f"rank {dump.rank}: pg_config key '' -> {key!r} (desc {desc!r}), as its entries name it")
        pg_config[key] = {"name": name, "desc": desc, "ranks": str(list(group.ranks))}
    entries = [
        {
            "record_id": entry.record_id, "pg_id": 0, "process_group": (entry.group, entry.group_desc),
            "collective_seq_id": entry.seq_id, "p2p_seq_id": entry.p2p_seq_id, "op_id": entry.seq_id,
            "profiling_name": entry.op, "time_created_ns": entry.time_created_ns,
            "input_sizes": [list(shape) for shape in entry.input_sizes],
            "output_sizes": [list(shape) for shape in entry.output_sizes],
            "input_dtypes": list(entry.input_dtypes), "output_dtypes": list(entry.output_dtypes),
            "state": entry.state, "time_discovered_started_ns": entry.time_started_ns,
            "time_discovered_completed_ns": entry.time_completed_ns, "retired": entry.retired,
            "timeout_ms": entry.timeout_ms, "is_p2p": entry.is_p2p,
            "frames": [{"name": f.name, "filename": f.filename, "line": f.line} for f in entry.frames],
        }
        for entry in dump.entries
    ]
    status = {
        s.group: {"last_enqueued_collective": s.last_enqueued, "last_started_collective": s.last_started,
                  "last_completed_collective": s.last_completed}
        for s in dump.status
    }
    raw = {"version": dump.version, "comm_lib_version": dump.comm_lib_version, "pg_config": pg_config,
           "pg_status": status, "entries": entries}
    return raw, changes
