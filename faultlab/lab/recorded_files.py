"""A recorded capture written back as the files a live run keeps (`--logs`).

A replay has no run directory, yet its logs and Flight Recorder dumps are what a trainee
greps, diffs and hands to `faultlab diagnose`. The files are written in the live layout
(train.py, node<N>.launcher.log, ranks/<slot>.{stdout,stderr,fr}), the dumps in the pickle
form torch writes, and RECORDED.txt says where and when they were really made.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from ..flight_recorder.dumps import torch_form
from ..records import Capture
from .rundir import RunDir

PROVENANCE_FILE = "RECORDED.txt"


def write_recorded(capture: Capture, target: Path, provenance: str, with_program: bool = True) -> None:
    """Write `capture`'s program (unless told not to), launcher logs, per-rank streams and dumps under `target`."""
    run_dir = RunDir(target)
    run_dir.ranks.mkdir(parents=True, exist_ok=True)
    (target / PROVENANCE_FILE).write_text(provenance + "\n", encoding="utf-8")
    if with_program:
        run_dir.program.write_text(capture.program, encoding="utf-8")
    for node in capture.nodes:
        run_dir.launcher_log(node.node).write_text(node.log, encoding="utf-8")
    slots = {}
    for rank in capture.ranks:
        slot = run_dir.slot(rank.node, rank.local_rank, rank.rank)
        slot.stdout.write_text(rank.stdout, encoding="utf-8")
        slot.stderr.write_text(rank.stderr, encoding="utf-8")
        if rank.rank is not None:
            slots[rank.rank] = slot
    recorder = capture.flight_recorder
    for dump in recorder.dumps if recorder else ():
        if dump.rank in slots:
            slots[dump.rank].flight_recorder.write_bytes(pickle.dumps(torch_form(dump)[0]))
