"""The experiment: the seed program, its named injection points, and the worker that runs it.

The program a worker runs is real Python source, rendered from the seed program with the
scenario's code-level faults applied at named injection points. `faultlab show --code`
prints the same text, so what a trainee reads is exactly what ran. Phase events (start,
init, set_device, all_reduce, destroy, exit) go to a JSON-lines side channel, one file per
worker, so stdout and stderr stay what a user of the script would see.

This module must not import torch at import time: the CLI renders programs without it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import signal
import sys
import time
from pathlib import Path

PROGRAM_NAME = "train.py"

# The seed program, as named blocks in order. Faults replace a block or add lines around it.
SEED_BLOCKS: tuple[tuple[str, str], ...] = (
    (
        "header",
        "import os\n"
        "import time\n"
        "from datetime import timedelta\n"
        "\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "\n"
        "BACKEND = {backend!r}\n"
        "TIMEOUT = timedelta(seconds={timeout_s})\n",
    ),
    ("before_init", ""),
    (
        "init",
        "\n"
        "dist.init_process_group(BACKEND, timeout=TIMEOUT)\n"
        "rank = dist.get_rank()\n"
        'local_rank = int(os.environ["LOCAL_RANK"])\n',
    ),
    (
        "device",
        'device = "cpu"\n'
        'if BACKEND == "nccl":\n'
        "    torch.cuda.set_device(local_rank)\n"
        '    device = "cuda"\n',
    ),
    ("tensor", "x = torch.ones(1, device=device) * rank\n"),
    ("before_collective", ""),
    ("collective", "dist.all_reduce(x)\n"),
    ("report", 'print(f"Rank {{rank}}: {{x.item()}}", flush=True)\n'),
    ("shutdown", "dist.destroy_process_group()\n"),
    ("after_shutdown", ""),
)
INJECTION_POINTS = tuple(name for name, _ in SEED_BLOCKS)


@dataclasses.dataclass(frozen=True)
class CodePatch:
    """One change to the seed program at a named injection point."""

    point: str
    replace: str | None = None  # new text of the block; None keeps it
    before: str = ""  # lines inserted before the block
    after: str = ""  # lines inserted after the block

    def __post_init__(self) -> None:
        if self.point not in INJECTION_POINTS:
            raise ValueError(f"unknown injection point {self.point!r}")


def render_program(backend: str, timeout_s: float, patches: tuple[CodePatch, ...] = ()) -> str:
    """The program text for a backend and timeout, with `patches` applied in order."""
    blocks = {name: text for name, text in SEED_BLOCKS}
    for patch in patches:
        text = blocks[patch.point] if patch.replace is None else patch.replace
        blocks[patch.point] = patch.before + text + patch.after
    timeout_text = int(timeout_s) if float(timeout_s).is_integer() else timeout_s
    source = "".join(blocks[name] for name in INJECTION_POINTS)
    return source.format(backend=backend, timeout_s=timeout_text)


def program_diff(healthy: str, broken: str) -> str:
    """A unified diff from the healthy program to the broken one ('' when equal)."""
    return "".join(
        difflib.unified_diff(
            healthy.splitlines(keepends=True),
            broken.splitlines(keepends=True),
            fromfile=f"healthy/{PROGRAM_NAME}",
            tofile=f"broken/{PROGRAM_NAME}",
        )
    )


# ---------------------------------------------------------------------------------------
# The worker side: runs inside each process the launcher starts.

# Calls whose begin/end become phase events, as (module path, attribute, phase name).
TRACED_CALLS = (
    ("torch.distributed", "init_process_group", "init"),
    ("torch.cuda", "set_device", "set_device"),
    ("torch.distributed", "all_reduce", "all_reduce"),
    ("torch.distributed", "all_gather", "all_gather"),
    ("torch.distributed", "broadcast", "broadcast"),
    ("torch.distributed", "barrier", "barrier"),
    ("torch.distributed", "destroy_process_group", "destroy"),
)


def slot_name(node: int, local_rank: int, rank: int | None = None) -> str:
    """The file stem of one worker's logs: node index in the plan, local rank, and the global
    rank its launcher gave it (so a log directory tells ranks apart by file name)."""
    return f"node{node}-local{local_rank}" + ("" if rank is None else f"-rank{rank}")


def find_slot(ranks_dir: Path, node: int, local_rank: int) -> Path | None:
    """The stem of the files one worker wrote, if it started."""
    base = slot_name(node, local_rank)
    found = sorted(Path(ranks_dir).glob(f"{base}-rank*.events")) or sorted(Path(ranks_dir).glob(f"{base}.events"))
    return found[0].with_suffix("") if found else None


class PhaseLog:
    """Appends phase events as JSON lines; each line is flushed so a killed worker keeps its past."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "a", buffering=1, encoding="utf-8")

    def emit(self, phase: str, **fields: object) -> None:
        record = {"phase": phase, "t": time.time(), **fields}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the process that started it dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the runner's process-group kill still holds
        pass


def redirect_std_streams(stdout_path: Path, stderr_path: Path) -> None:
    """Point fds 1 and 2 (C++ logs included) at these files, and Python's streams and log
    handlers with them (a parent such as pytest may have replaced sys.stderr)."""
    import logging

    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(target, fd)
        os.close(target)
    previous = {id(sys.stdout): 1, id(sys.stderr): 2, id(sys.__stdout__): 1, id(sys.__stderr__): 2}
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    streams = {1: sys.stdout, 2: sys.stderr}
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in previous:
                handler.setStream(streams[previous[id(handler.stream)]])


def _reset_signal_handlers() -> None:
    """A forked worker inherits its launcher's handlers; a script starts with Python's own."""
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCHLD"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _without_own_frames(tb):
    """The traceback as the user's script would show it: faultlab's frames left out."""
    import types

    frames = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename != __file__:
            frames.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for frame_tb in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, frame_tb.tb_frame, frame_tb.tb_lasti, frame_tb.tb_lineno)
    return rebuilt


def _install_tracing(phases: PhaseLog) -> None:
    """Wrap the distributed calls the program makes so each emits begin/end phase events."""
    import functools
    import importlib

    def traced(function, phase):
        @functools.wraps(function)
        def call(*args, **kwargs):
            phases.emit(f"{phase}_begin")
            result = function(*args, **kwargs)
            phases.emit(f"{phase}_end")
            return result

        return call

    for module_path, attribute, phase in TRACED_CALLS:
        module = importlib.import_module(module_path)
        setattr(module, attribute, traced(getattr(module, attribute), phase))


# A forked worker starts its program only once the store-hosting launcher has forked all of
# its workers: that launcher's TCPStore server thread does reverse DNS look-ups for every
# connection, and a fork taken while it holds glibc's resolver lock leaves the child
# deadlocked in its first look-up. No worker connects, so the server stays idle, until then.
FORK_BARRIER_LIMIT_S = 5.0


def _wait_for_store_host_forks(ranks_dir: str, store_host_workers: int) -> None:
    # Every started worker writes exactly one events file: count node 0's in one listing.
    end = time.monotonic() + FORK_BARRIER_LIMIT_S
    while time.monotonic() < end and sum(1 for _ in Path(ranks_dir).glob("node0-local*.events")) < store_host_workers:
        time.sleep(0.002)


def run_worker(
    node: int,
    program: str,
    ranks_dir: str,
    master_port: int = 0,
    port_offsets: dict[int, int] | None = None,
    store_host_workers: int = 0,
) -> None:
    """Entry point of one worker: run `program` as a script would run, recording phases.

    `port_offsets` gives local ranks whose environment says MASTER_PORT = master_port + offset
    (a per-rank launch environment gone wrong). `store_host_workers`, for forked workers, is
    how many workers node 0's launcher forks (see FORK_BARRIER_LIMIT_S). Exits the way `python train.py` would: 0, or
    1 after printing the traceback through sys.excepthook (which torch.distributed prefixes
    with the rank once it is initialized).
    """
    die_with_parent()
    _reset_signal_handlers()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if port_offsets and local_rank in port_offsets:
        os.environ["MASTER_PORT"] = str(master_port + port_offsets[local_rank])
    rank = os.environ.get("RANK", "")
    stem = Path(ranks_dir) / slot_name(node, local_rank, int(rank) if rank.isdigit() else None)
    redirect_std_streams(stem.with_suffix(".stdout"), stem.with_suffix(".stderr"))
    phases = PhaseLog(stem.with_suffix(".events"))
    phases.emit(
        "start",
        pid=os.getpid(),
        rank=os.environ.get("RANK"),
        world_size=os.environ.get("WORLD_SIZE"),
        local_rank=local_rank,
        group_rank=os.environ.get("GROUP_RANK"),
    )
    _install_tracing(phases)
    if store_host_workers:
        _wait_for_store_host_forks(ranks_dir, store_host_workers)
    import linecache  # so tracebacks show the lines of train.py, as they would for a file

    linecache.cache[PROGRAM_NAME] = (len(program), None, program.splitlines(keepends=True), PROGRAM_NAME)
    exit_code = 0
    try:
        exec(compile(program, PROGRAM_NAME, "exec"), {"__name__": "__main__", "__file__": PROGRAM_NAME})
    except SystemExit as stop:
        exit_code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException as error:  # a script's uncaught error: print it as Python would
        phases.emit("error", type=type(error).__name__)
        error = error.with_traceback(_without_own_frames(error.__traceback__))
        sys.excepthook(type(error), error, error.__traceback__)
        exit_code = 1
    phases.emit("exit", code=exit_code)
    sys.stdout.flush()
    sys.stderr.flush()
    if exit_code:
        raise SystemExit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """`python -m faultlab.experiment NODE PROGRAM_FILE RANKS_DIR MASTER_PORT OFFSETS`: the
    worker as a script, for launches where every worker must be a fresh interpreter (CUDA,
    or plain python). OFFSETS is "local_rank:offset,..." or empty."""
    node, program_file, ranks_dir, master_port, offsets = argv if argv is not None else sys.argv[1:]
    port_offsets = {int(k): int(v) for k, v in (item.split(":") for item in offsets.split(",") if item)}
    program = Path(program_file).read_text(encoding="utf-8")
    run_worker(int(node), program, ranks_dir, int(master_port), port_offsets)


if __name__ == "__main__":
    main()
