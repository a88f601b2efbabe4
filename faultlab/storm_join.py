"""One cell of a join storm, run as its own process: `python -m faultlab.storm_join '<json>'`.

It hosts a TCPStore (as node 0's launcher or rank 0 does) and has `clients` threads join
it the way ranks do in `init_process_group` (a TCPStore client of the same world size,
then the first store operation), in waves of `wave` clients, `stagger_ms` apart. Each
cell is a fresh process in a fresh private network namespace (where permitted), so a cell
that hangs is ended by killing one process, and the namespace with its sysctls goes with it.

Prints one JSON object on stdout; torch's own warnings (retries, resets) go to stderr,
where the parent counts them.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from datetime import timedelta

from .lab import netns
from .lab.worker import die_with_parent

SOMAXCONN = "/proc/sys/net/core/somaxconn"
READY_KEY = "storm/ready"
START_DELAY_S = 0.3  # every thread is created before the first wave is due


def _namespace_id() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


def _set_somaxconn(value: int, root_namespace: int) -> None:
    """Only ever inside the cell's own namespace: the host's setting is never touched."""
    if _namespace_id() == root_namespace:
        raise SystemExit("refusing to change net.core.somaxconn outside a private network namespace")
    with open(SOMAXCONN, "w") as handle:
        handle.write(str(value))


def _read_somaxconn() -> int | None:
    try:
        with open(SOMAXCONN) as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def _join_all(cell: dict, port: int, dist) -> list[dict]:
    """Start every client thread on its wave's schedule; return each one's outcome."""
    clients, timeout = cell["clients"], timedelta(seconds=cell["timeout_s"])
    outcomes: list[dict] = [{} for _ in range(clients)]
    keep = []  # joined clients stay connected until every one has joined, as ranks do
    lock = threading.Lock()
    start = time.monotonic() + START_DELAY_S

    def join(index: int) -> None:
        due = (index // cell["wave"]) * cell["stagger_ms"] / 1000.0
        time.sleep(max(0.0, start + due - time.monotonic()))
        outcome = outcomes[index]
        outcome["due_s"] = due
        try:
            client = dist.TCPStore("127.0.0.1", port, clients, False, timeout, use_libuv=cell["libuv"])
            client.add(READY_KEY, 1)
            outcome["joined_s"] = time.monotonic() - start
            with lock:
                keep.append(client)
        except Exception as error:  # torch raises DistStoreError, RuntimeError, TimeoutError
            outcome["error"] = str(error).splitlines()[0][:300]
            outcome["failed_s"] = time.monotonic() - start

    threads = [threading.Thread(target=join, args=(index,), daemon=True) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def run_cell(cell: dict) -> dict:
    root_namespace = _namespace_id()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two descriptors per client
    os.environ["USE_LIBUV"] = "1" if cell["libuv"] else "0"
    with netns.private_loopback() as network:
        if cell.get("somaxconn") is not None:
            _set_somaxconn(cell["somaxconn"], root_namespace)
        import torch
        import torch.distributed as dist

        host = dist.TCPStore("127.0.0.1", 0, cell["clients"], True, timedelta(seconds=cell["timeout_s"]),
                             wait_for_workers=False, use_libuv=cell["libuv"])
        outcomes = _join_all(cell, host.port, dist)
        joined = int(host.add(READY_KEY, 0))
        return {"network": network, "somaxconn": _read_somaxconn(), "host_counted": joined,
                "torch_version": torch.__version__, "clients": outcomes}


def main() -> None:
    die_with_parent()
    cell = json.loads(sys.argv[1])
    result = run_cell(cell)
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # leave at once: connected clients' destructors would only add teardown time


if __name__ == "__main__":
    main()
