"""Which rank, or which node, a log line belongs to.

torch labels a rank's lines ([rank3]:, [Rank 3]); a collector labels a task's (srun --label, mpirun
--tag-output), and srun and mpirun report on a task by its number. A task is a rank where srun or mpirun
starts every rank itself, and a node where each task is a node's torchrun (`tasks_as_nodes`).
"""

from __future__ import annotations

import dataclasses
import re

from . import pasted

# What a launcher puts before each line of task N: mpirun --tag-output's "[1,N]<stdout>:", srun --label's "N: "
_MPIRUN_TAG, _SRUN_LABEL = r"\[\d+,(\d+)\]<std(?:out|err)>:[ ]?", r"(\d+):[ ]"
_TASK_PREFIX = re.compile(f"{_MPIRUN_TAG}|{_SRUN_LABEL}")
# A line's rank: torch's own [rankN]: and [Rank N] first; else the task that wrote it, by its label at the line's
# start or by srun's or mpirun's own report of one task (read as a node's, not a rank's, where the tasks are
# nodes' torchruns: tasks_as_nodes).
TORCH_RANK_LABEL = re.compile(r"\[(?:default)?rank(\d+)\]:|\brank(\d+)\]:|\[Rank (\d+)\]")
TASK_LABEL = re.compile(rf"^{_MPIRUN_TAG}|^\s*{_SRUN_LABEL}|^srun: error: \S+: task (\d+): "
                        r"|^(?:mpirun|prterun) noticed that process rank (\d+) ")
TORCH_RANK_LABEL_BYTES, TASK_LABEL_BYTES = (re.compile(pattern.pattern.encode())
                                            for pattern in (TORCH_RANK_LABEL, TASK_LABEL))


def rank_of_line(line, torch_pattern: re.Pattern = TORCH_RANK_LABEL, task_pattern: re.Pattern = TASK_LABEL) -> int | None:
    """The rank a line (str, or bytes with the patterns' bytes twins) names, None where it names none."""
    match = torch_pattern.search(line) or task_pattern.match(line)
    return int(match[match.lastindex]) if match else None


def task_label(line: str) -> int | None:
    """The task that printed `line`, where srun or mpirun labelled it: the innermost label among the line's
    prefixes, since collectors (timestamps, pdsh) add theirs outside the launcher's."""
    for prefix in reversed(pasted.prefixes(line)):
        label = _TASK_PREFIX.fullmatch(prefix)
        if label:
            return int(label[label.lastindex])
    return None


# What a node's launcher (torchrun's agent, DeepSpeed's launch.py) writes of its workers, never a rank nor
# srun itself: slurmstepd's "CANCELLED" (launcher-signalled) is in every killed srun job, so it is not here
AGENT_SIGNATURES = frozenset({"ctx-worker-exit", "child-failed", "worker-torn-down", "ctx-workers-restarted"})


def tasks_as_nodes(evidence: list) -> list:
    """`evidence`: log_scan.Evidence lines. Under srun (or mpirun) a task may be a node's torchrun rather than a
    rank: its lines then carry other ranks' labels ([rank5]: among task 1's), or a node's launcher speaks in the
    log (srun python has none). Where the log shows that, a task's number is its node's: the task's own lines,
    and srun's report of it, name that node and no rank (in a file of that node, or of no known node). Only a
    label at the line's start is read, as rank_of_line reads it."""
    read = []
    for item in evidence:
        task, torch = TASK_LABEL.match(item.line), TORCH_RANK_LABEL.search(item.line)
        read.append((item, int(task[task.lastindex]) if task else None, int(torch[torch.lastindex]) if torch else None))
    agent = any(item.signature in AGENT_SIGNATURES for item in evidence)
    if not any(task is not None and (agent or rank not in (None, task)) for item, task, rank in read):
        return evidence
    return [dataclasses.replace(item, rank=None, place=dataclasses.replace(item.place, node=task))
            if task is not None and rank is None and item.place.node in (None, task) else item
            for item, task, rank in read]
