"""Inside each rank: write its Flight Recorder buffer whenever its run ends, however it ends.

torch dumps on NCCL's watchdog timeout or through its dump pipe; gloo has neither. So the
worker dumps itself: at the program's end ("exit"), when the program raises ("error"), when
torchrun tears it down with SIGTERM ("terminated"), and when faultlab asks at the deadline
with SIGUSR1 ("deadline"). The signals are taken by a thread of its own with sigwait: the
main thread may be blocked inside a collective, where a Python signal handler would not run
until the collective returns. A SIGTERM still ends the process by SIGTERM, after the dump.
A rank that is stopped (SIGSTOP) or killed cannot dump: it leaves no file, which is evidence.

On the faultlab side, `request_dumps` sends the deadline request to every live worker that
said it can answer, and waits a bounded time for the answers.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

REQUEST_SIGNAL = signal.SIGUSR1
BUFFER_ENV = "TORCH_FR_BUFFER_SIZE"
OLD_BUFFER_ENV = "TORCH_NCCL_TRACE_BUFFER_SIZE"  # the name before torch 2.7; still read
READY_EVENT = "fr_ready"  # the worker answers REQUEST_SIGNAL from now on
DUMP_EVENT = "fr_dump"
FLIGHT_RECORDER_EVENTS = "fr_"  # the prefix of both: the capture reader keeps them out of the phases
ANSWER_WAIT_S = 1.0  # how long faultlab waits for the answers at the deadline


def buffer_size(env=os.environ) -> int:
    for name in (BUFFER_ENV, OLD_BUFFER_ENV):
        value = env.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return 0


def _dump_bytes() -> bytes | None:
    """The recorder's buffer as torch pickles it; None before torch is imported.

    A torch built with NCCL keeps two recorders: NCCL's collectives go to the one
    `_dump_nccl_trace` reads, gloo's to the one `_dump_fr_trace` reads. The dump is the
    one that recorded collectives (NCCL's first); if neither did, the first one there.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    c10d = torch._C._distributed_c10d
    readers = [getattr(c10d, name) for name in ("_dump_nccl_trace", "_dump_fr_trace") if hasattr(c10d, name)]
    # Stack traces are left out: the first dump with them imports torch._inductor (about a
    # second), which a rank being torn down does not have.
    dumps = [read(includeStackTraces=False) for read in readers]
    # Our own process's bytes, so plain pickle is safe here (faultlab reads them back restricted).
    recorded = [data for data in dumps if pickle.loads(data).get("entries")]
    return (recorded or dumps or [None])[0]


class Dumper:
    """Writes this rank's dump to `path` (atomically) and reports each dump to `on_dump`."""

    def __init__(self, path: Path, on_dump: Callable[..., None]) -> None:
        self.path = Path(path)
        self._on_dump = on_dump
        self._lock = threading.Lock()
        self._asked_at_deadline = False

    def dump(self, trigger: str) -> None:
        with self._lock:
            try:
                data = _dump_bytes()
            except Exception as error:  # the recorder itself failed: say so, never take the rank down
                self._on_dump(DUMP_EVENT, trigger=trigger, error=f"{type(error).__name__}: {error}")
                return
            if data is None:
                return
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_bytes(data)
            temporary.replace(self.path)
            self._on_dump(DUMP_EVENT, trigger=trigger, bytes=len(data))

    def answer_signals(self) -> None:
        """Take SIGTERM and the dump request on a thread of their own (call from the main
        thread before torch starts threads: they inherit the blocked mask)."""
        signals = {signal.SIGTERM, REQUEST_SIGNAL}
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        threading.Thread(target=self._serve, args=(signals,), name="faultlab-fr-dump", daemon=True).start()
        self._on_dump(READY_EVENT)

    def _serve(self, signals: set) -> None:
        while True:
            received = signal.sigwait(signals)
            if received == REQUEST_SIGNAL:
                self._asked_at_deadline = True
                self.dump("deadline")
                continue
            if not self._asked_at_deadline:  # after the deadline's dump, faultlab's SIGTERM adds nothing
                self.dump("terminated")
            # End as the SIGTERM would have: unblocked on this thread, its action still SIG_DFL.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            time.sleep(60)  # not reached: the process ends with the signal


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of `pid` (R, S, D, T for stopped, Z), None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def request_dumps(workers: list[tuple[int, Path]], wait_s: float = ANSWER_WAIT_S) -> dict[int, str]:
    """Ask each live worker (pid, its dump path) that can answer for its dump; wait for the
    answers at most `wait_s`. Returns pid -> its state when asked ('T': stopped, it cannot answer)."""
    asked, states = {}, {}
    for pid, path in workers:
        state = process_state(pid)
        if state is None or state == "Z":
            continue
        states[pid] = state
        before = path.stat().st_mtime_ns if path.exists() else 0
        try:
            os.kill(pid, REQUEST_SIGNAL)
        except (ProcessLookupError, PermissionError):
            continue
        if state != "T":
            asked[pid] = (path, before)
    end = time.monotonic() + wait_s
    while asked and time.monotonic() < end:
        for pid, (path, before) in list(asked.items()):
            answered = path.exists() and path.stat().st_mtime_ns != before
            if answered or process_state(pid) in (None, "Z"):
                del asked[pid]
        time.sleep(0.01)
    return states
