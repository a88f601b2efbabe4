"""The worker runtime: what runs inside each process a node's launcher starts.

It runs the program from the run directory as `python train.py` would (tracebacks show its
lines, its own frames left out), wraps the distributed calls so each writes begin/end phase
events to a JSON-lines side channel (stdout and stderr stay what a user of the script
would see), and dies with its parent. Imports torch only inside a worker.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from ..flight_recorder import dumper as flight_recorder
from .program import PROGRAM_NAME
from .rundir import RunDir

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


def _wait_for_store_host_forks(run_dir: RunDir, store_host: tuple[int, int]) -> None:
    node, workers = store_host
    end = time.monotonic() + FORK_BARRIER_LIMIT_S
    while time.monotonic() < end and run_dir.count_started(node) < workers:
        time.sleep(0.002)


def run_worker(
    node: int,
    run_dir: str,
    master_port: int = 0,
    port_offsets: dict[int, int] | None = None,
    store_host: tuple[int, int] | None = None,
) -> None:
    """Entry point of one worker: run the run directory's program as `python train.py` would
    in that directory, recording phases.

    `port_offsets` gives local ranks whose environment says MASTER_PORT = master_port + offset
    (a per-rank launch environment gone wrong). `store_host`, for forked workers, is the node
    whose launcher hosts the store they reach and how many workers it forks (see
    FORK_BARRIER_LIMIT_S). Exits the way
    `python train.py` would: 0, or 1 after printing the traceback through sys.excepthook
    (which torch.distributed prefixes with the rank once it is initialized).
    """
    die_with_parent()
    _reset_signal_handlers()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if port_offsets and local_rank in port_offsets:
        os.environ["MASTER_PORT"] = str(master_port + port_offsets[local_rank])
    rank = os.environ.get("RANK", "")
    directory = RunDir(run_dir)
    slot = directory.slot(node, local_rank, int(rank) if rank.isdigit() else None)
    redirect_std_streams(slot.stdout, slot.stderr)
    phases = PhaseLog(slot.events)
    phases.emit(
        "start",
        pid=os.getpid(),
        rank=os.environ.get("RANK"),
        world_size=os.environ.get("WORLD_SIZE"),
        local_rank=local_rank,
        group_rank=os.environ.get("GROUP_RANK"),
    )
    dumper = None
    if flight_recorder.buffer_size() > 0:
        dumper = flight_recorder.Dumper(slot.flight_recorder, phases.emit)
        dumper.answer_signals()
    _install_tracing(phases)
    if store_host:
        _wait_for_store_host_forks(directory, store_host)
    exit_code = _run_program(directory, phases)
    if dumper is not None:
        dumper.dump("exit" if exit_code == 0 else "error")
    phases.emit("exit", code=exit_code)
    sys.stdout.flush()
    sys.stderr.flush()
    if exit_code:
        raise SystemExit(exit_code)


def _run_program(run_dir: RunDir, phases: PhaseLog) -> int:
    """Run train.py from its own directory, as a job's script runs: its traceback names the
    file and shows its lines. Returns the exit code the script would have."""
    os.chdir(run_dir.root)
    program = run_dir.program.read_text(encoding="utf-8")
    try:
        exec(compile(program, PROGRAM_NAME, "exec"), {"__name__": "__main__", "__file__": PROGRAM_NAME})
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException as error:  # a script's uncaught error: print it as Python would
        phases.emit("error", type=type(error).__name__)
        error = error.with_traceback(_without_own_frames(error.__traceback__))
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    return 0


def main(argv: list[str] | None = None) -> None:
    """`python -m faultlab.lab.worker NODE RUN_DIR MASTER_PORT OFFSETS`: the worker as a
    script, for launches where every worker must be a fresh interpreter (CUDA, or plain
    python). OFFSETS is "local_rank:offset,..." or empty."""
    node, run_dir, master_port, offsets = argv if argv is not None else sys.argv[1:]
    port_offsets = {int(k): int(v) for k, v in (item.split(":") for item in offsets.split(",") if item)}
    run_worker(int(node), run_dir, int(master_port), port_offsets)


if __name__ == "__main__":
    main()
