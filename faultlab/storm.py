"""The join storm: how long N ranks take to join one TCPStore, at once or staggered.

Every rank's `init_process_group` starts with a TCPStore handshake with the store host
(node 0's launcher, or rank 0): connect, validate, register. `measure` runs that
handshake for N clients in waves, `stagger_ms` apart, for each store backend (libuv, the
default since torch 2.4, and the legacy one, `USE_LIBUV=0`), and reports time-to-ready.

Each cell is one process (faultlab.storm_join) in a private network namespace where
faultlab may make one, so reverse look-ups fail at once and `--somaxconn` (the listen
backlog) changes that namespace only; on the host's loopback otherwise. Bounded: at most
MAX_CLIENTS clients a cell, MAX_CELLS cells, and every cell is killed at its deadline.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from typing import Callable

from .errors import BadInput, EnvironmentProblem, Interrupted

MAX_CLIENTS = 4096
MAX_CELLS = 64
MAX_TIMEOUT_S = 120.0
CELL_OVERHEAD_S = 20.0  # interpreter and torch import, thread start, slack
STORES = {"libuv": True, "legacy": False}
SLOW_HANDSHAKE_S = 1.0

# torch's own lines on stderr that tell what the clients went through
RETRY_LINE = "retrying (try="
RESET_LINE = "Connection reset by peer"

CARRIES_OVER = (
    "the store code itself (the same TCPStore, libuv or legacy, the same connect/validate/retry "
    "logic and log lines); the kernel's listen backlog (net.core.somaxconn) and what overflowing it "
    "does; the shape of time-to-ready against simultaneous joins, and what staggering buys against it."
)
DOES_NOT_CARRY_OVER = (
    "absolute times: here every client shares 2 cores and loopback (no RTT, no NIC, no switch); clients "
    "are threads of one process, not one process per rank on many hosts; reverse look-ups fail at once "
    "in the private namespace, where a cluster's resolver can add seconds per look-up; nothing of the "
    "scheduler's start skew, image pulls or NCCL communicator bootstrap, which come after the store."
)


@dataclasses.dataclass(frozen=True)
class StormOptions:
    clients: tuple[int, ...] = (8, 16, 32, 64, 256, 1024)
    stagger_ms: tuple[float, ...] = (0.0,)
    wave: int = 8  # clients started together: one node's ranks
    stores: tuple[str, ...] = ("libuv",)
    somaxconn: int | None = None  # the store host's listen backlog, in its namespace only
    timeout_s: float = 30.0  # each client's store timeout, as init_process_group's


@dataclasses.dataclass(frozen=True)
class StormCell:
    store: str  # "libuv" or "legacy"
    clients: int
    stagger_ms: float
    wave: int
    somaxconn: int | None  # the backlog the store host had
    spread_s: float  # when the last wave was due: the floor a stagger sets
    ready_s: float | None  # the last client joined; None when some never did
    ended_s: float | None  # the last client joined or gave up
    median_s: float | None  # one client's handshake, from its own start
    p99_s: float | None
    slow: int  # handshakes of a second or more: a dropped SYN waits 1 s for its retransmission
    joined: int
    failed: int
    retries: int  # "retrying" lines: connects or validations that failed and were tried again
    resets: int  # ... of which the store host's end reset the connection (the backlog overflowed)
    first_error: str | None
    killed: bool = False  # still running at its deadline


@dataclasses.dataclass(frozen=True)
class StormReport:
    cells: tuple[StormCell, ...]
    network: str
    torch_version: str
    machine: str  # system, kernel and CPU count of the machine measured
    made_at: str


def parse_list(text: str, option: str, kind: type) -> tuple:
    """'8,16,32' -> (8, 16, 32); one clear error naming the option for anything else."""
    try:
        return tuple(kind(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise BadInput(f"{option}: expected comma-separated numbers, got {text!r}") from None


def validate(options: StormOptions) -> None:
    """One clear error for every out-of-bounds request, before anything starts."""
    if not options.clients or not all(1 <= n <= MAX_CLIENTS for n in options.clients):
        raise BadInput(f"--clients: each count must be between 1 and {MAX_CLIENTS}, got {list(options.clients)}")
    if not options.stagger_ms or not all(0 <= s <= 10_000 for s in options.stagger_ms):
        raise BadInput(f"--stagger-ms: each gap must be between 0 and 10000 ms, got {list(options.stagger_ms)}")
    if not 1 <= options.wave <= MAX_CLIENTS:
        raise BadInput(f"--wave must be between 1 and {MAX_CLIENTS}, got {options.wave}")
    unknown = [store for store in options.stores if store not in STORES]
    if unknown or not options.stores:
        raise BadInput(f"--store: unknown {unknown or 'nothing'}; choose from {', '.join(STORES)}")
    if options.somaxconn is not None and not 1 <= options.somaxconn <= 65535:
        raise BadInput(f"--somaxconn must be between 1 and 65535, got {options.somaxconn}")
    if not 1 <= options.timeout_s <= MAX_TIMEOUT_S:
        raise BadInput(f"--timeout must be between 1 and {MAX_TIMEOUT_S:g} s, got {options.timeout_s:g}")
    cells = len(options.clients) * len(options.stagger_ms) * len(options.stores)
    if cells > MAX_CELLS:
        raise BadInput(f"{cells} cells requested (clients x stagger x store); at most {MAX_CELLS}")


def measure(options: StormOptions, progress: Callable[[StormCell], None] | None = None) -> StormReport:
    """Every (store, stagger, clients) cell, one after another; a cell per process."""
    validate(options)
    cells, facts = [], {}
    for store in options.stores:
        for stagger in options.stagger_ms:
            for clients in options.clients:
                cell, child_facts = _run_cell(options, store, stagger, clients)
                facts = facts or child_facts
                cells.append(cell)
                if progress:
                    progress(cell)
    machine = f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs"
    return StormReport(tuple(cells), facts.get("network", "unknown"), facts.get("torch_version", "unknown"), machine,
                       time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


def _run_cell(options: StormOptions, store: str, stagger: float, clients: int) -> tuple[StormCell, dict]:
    """One cell in its own process; the cell, and the child's network and torch version."""
    request = {"clients": clients, "wave": options.wave, "stagger_ms": stagger, "libuv": STORES[store],
               "timeout_s": options.timeout_s, "somaxconn": options.somaxconn}
    spread = (clients - 1) // options.wave * stagger / 1000.0
    deadline = options.timeout_s + spread + CELL_OVERHEAD_S
    child = subprocess.Popen([sys.executable, "-m", "faultlab.storm_join", json.dumps(request)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        _kill(child)
        stdout, stderr = child.communicate()
        return _cell(options, store, stagger, clients, spread, None, stderr, killed=True), {}
    except KeyboardInterrupt:
        _kill(child)
        child.communicate()
        raise Interrupted("storm interrupted; its cell was killed") from None
    finally:
        _kill(child)
    if child.returncode != 0 or not stdout.strip():
        last = (stderr.strip().splitlines() or [f"exit {child.returncode}"])[-1]
        raise EnvironmentProblem(f"storm cell ({store}, {clients} clients) could not run: {last}")
    result = json.loads(stdout)
    facts = {"network": result["network"], "torch_version": result["torch_version"]}
    return _cell(options, store, stagger, clients, spread, result, stderr), facts


def _kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def _cell(options, store, stagger, clients, spread, result, stderr, killed=False) -> StormCell:
    outcomes = result["clients"] if result else []
    joined = [outcome["joined_s"] for outcome in outcomes if "joined_s" in outcome]
    handshakes = [outcome["joined_s"] - outcome["due_s"] for outcome in outcomes if "joined_s" in outcome]
    errors = [outcome["error"] for outcome in outcomes if "error" in outcome]
    failed = clients - len(joined)
    retried = [line for line in stderr.splitlines() if RETRY_LINE in line]
    return StormCell(
        store=store, clients=clients, stagger_ms=stagger, wave=options.wave,
        somaxconn=result["somaxconn"] if result else options.somaxconn, spread_s=spread,
        ready_s=max(joined) if joined and not failed else None,
        ended_s=max([o.get("joined_s", o.get("failed_s", 0.0)) for o in outcomes], default=None),
        median_s=statistics.median(handshakes) if handshakes else None, p99_s=_percentile(handshakes, 0.99),
        slow=sum(seconds >= SLOW_HANDSHAKE_S for seconds in handshakes), joined=len(joined), failed=failed, retries=len(retried),
        resets=sum(RESET_LINE in line for line in retried),
        first_error=errors[0] if errors else ("killed at its deadline" if killed else None), killed=killed,
    )
