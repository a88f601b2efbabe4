"""The run directory: the one owner of every path a run writes and reads.

The launch creates it, node agents and workers write into it, the capture reader reads it
back, and `--logs` copies it: all of them ask this module for a path, none spells a file
name of its own. Layout:

    faultlab-run-<owner pid>-<run id>-XXXX/
      train.py                         the program every worker runs (a real file)
      node<N>.launcher.log             node N's launcher: its own stdout and stderr
      ranks/node<N>-local<L>-rank<R>.{events,stdout,stderr,status}
      ranks/node<N>-local<L>-rank<R>.fr  its Flight Recorder dump, as torch pickles it
      flight_recorder_requests.json    the state of each live worker asked to dump at the deadline
      torchelastic/                    torch's own per-attempt logs (not kept)

A run on a SLURM cluster (slurm/) keeps its run directory where every node sees it, with
the job's own files beside the above: job.sh (what was submitted), job.out (its output),
job.json (written as the job starts), node.sh (each node's part) and, per node,
node<N>.start (its facts as it starts) and node<N>.exit (its launcher's exit code and time).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

from .program import PROGRAM_NAME

RUN_DIR_PREFIX = "faultlab-run-"  # + the owning faultlab's pid: orphans are found by it


@dataclasses.dataclass(frozen=True)
class Slot:
    """The files of one worker: phase events, its two streams, its wait status."""

    stem: Path

    @property
    def events(self) -> Path:
        return self.stem.with_suffix(".events")

    @property
    def stdout(self) -> Path:
        return self.stem.with_suffix(".stdout")

    @property
    def stderr(self) -> Path:
        return self.stem.with_suffix(".stderr")

    @property
    def status(self) -> Path:
        return self.stem.with_suffix(".status")

    @property
    def flight_recorder(self) -> Path:
        return self.stem.with_suffix(".fr")


def slot_name(node: int, local_rank: int, rank: int | None = None) -> str:
    """A worker's file stem: node index in the plan, local rank, and the global rank its
    launcher gave it (so a log directory tells ranks apart by file name)."""
    return f"node{node}-local{local_rank}" + ("" if rank is None else f"-rank{rank}")


class RunDir:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @classmethod
    def create(cls, run_id: str) -> "RunDir":
        root = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-{run_id}-"))
        (root / "ranks").mkdir()
        return cls(root)

    @property
    def program(self) -> Path:
        return self.root / PROGRAM_NAME

    @property
    def ranks(self) -> Path:
        return self.root / "ranks"

    @property
    def torchelastic(self) -> Path:
        return self.root / "torchelastic"

    @property
    def dump_requests(self) -> Path:
        return self.root / "flight_recorder_requests.json"

    def launcher_log(self, node: int | str) -> Path:
        return self.root / f"node{node}.launcher.log"

    @property
    def job_script(self) -> Path:
        return self.root / "job.sh"

    @property
    def job_output(self) -> Path:
        return self.root / "job.out"

    @property
    def job_record(self) -> Path:
        return self.root / "job.json"

    @property
    def node_script(self) -> Path:
        return self.root / "node.sh"

    def node_start(self, node: int | str) -> Path:
        return self.root / f"node{node}.start"

    def node_exit(self, node: int | str) -> Path:
        return self.root / f"node{node}.exit"

    def slot(self, node: int, local_rank: int, rank: int | None = None) -> Slot:
        return Slot(self.ranks / slot_name(node, local_rank, rank))

    def find_slot(self, node: int, local_rank: int) -> Slot:
        """The files one worker wrote if it started (named with its rank), else where they would be."""
        base = slot_name(node, local_rank)
        found = sorted(self.ranks.glob(f"{base}-rank*.events")) or sorted(self.ranks.glob(f"{base}.events"))
        return Slot(found[0].with_suffix("")) if found else self.slot(node, local_rank)

    def started_workers(self, node: int) -> list[tuple[Slot, int]]:
        """(slot, pid) of each worker of `node` that has started: its first event names its pid."""
        started = []
        for events in self.ranks.glob(f"node{node}-local*.events"):
            try:
                with open(events, encoding="utf-8") as lines:
                    started.append((Slot(events.with_suffix("")), int(json.loads(lines.readline())["pid"])))
            except (OSError, ValueError, KeyError):  # not written yet, or gone
                continue
        return started

    def count_reached(self, node: int, phase: str) -> int:
        """How many workers of `node` have emitted the phase event `phase` (e.g. "init_end")."""
        marker = f'"phase": "{phase}"'
        reached = 0
        for events in self.ranks.glob(f"node{node}-local*.events"):
            try:
                reached += marker in events.read_text(encoding="utf-8")
            except OSError:
                continue
        return reached

    def count_started(self, node: int) -> int:
        """How many workers of `node` have started (each writes exactly one events file)."""
        return sum(1 for _ in self.ranks.glob(f"node{node}-local*.events"))

    def keep(self, target: Path) -> None:
        """Copy what a user reads (program, launcher logs, per-rank files) to `target`."""
        target.mkdir(parents=True, exist_ok=True)
        for path in self.root.rglob("*"):
            if path.is_file() and self.torchelastic not in path.parents:
                copy = target / path.relative_to(self.root)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def leftovers() -> list[tuple[Path, int]]:
        """(directory, owner pid) of every run directory in the temp directory."""
        found = []
        for path in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*"):
            owner = path.name[len(RUN_DIR_PREFIX):].split("-", 1)[0]
            if owner.isdigit():
                found.append((path, int(owner)))
        return found
