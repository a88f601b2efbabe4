"""The signature catalog and the matcher (pure): real output lines -> Symptoms.

The catalog is data in signatures.py (ports, addresses: what a signature is),
signatures_transport.py (NCCL's and gloo's transports), signatures_devices.py (the job's devices and
teardown), signatures_job.py (its setup and processes) and signatures_context.py (py-spy's stacks,
context lines); this module joins them and matches them against a capture's output.
"""

from __future__ import annotations

import re
from typing import Iterable

from .records import Capture, Symptom
from .signatures import NETWORK, Signature
from .signatures_context import CONTEXT
from .signatures_devices import DEVICES
from .signatures_job import JOB
from .signatures_transport import TRANSPORT

SIGNATURES: tuple[Signature, ...] = NETWORK + TRANSPORT + DEVICES + JOB + CONTEXT
SIGNATURES_BY_ID = {signature.id: signature for signature in SIGNATURES}


_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?")


def _is_traceback_source(line: str) -> bool:
    """An indented line of a Python traceback (a frame or its source), not the error itself."""
    return _RANK_PREFIX.sub("", line).startswith((" ", "\t"))


def match_text(text: str, signatures: Iterable[Signature] = SIGNATURES) -> dict[str, tuple[str, int]]:
    """Signature id -> (representative line, number of matching lines) for one output.

    The representative line is the first match that is not the source line of a traceback
    frame (the `raise ...` that quotes the message), else the first match."""
    found: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    for signature in signatures:
        regex = signature.regex
        matches = [line.rstrip() for line in lines if regex.search(line)]
        if matches:
            best = next((line for line in matches if not _is_traceback_source(line)), matches[0])
            found[signature.id] = (best, len(matches))
    return found


def match_capture(capture: Capture) -> tuple[Symptom, ...]:
    """Every signature found in every rank's output and every launcher's log."""
    symptoms = []
    rank_signatures = [s for s in SIGNATURES if "rank" in s.where]
    launcher_signatures = [s for s in SIGNATURES if "launcher" in s.where]
    for rank in capture.ranks:
        for signature_id, (line, count) in match_text(rank.stderr + "\n" + rank.stdout, rank_signatures).items():
            symptoms.append(_symptom(signature_id, f"rank {rank.shown_rank}", rank.node, rank.local_rank,
                                     rank.shown_rank, line, count))
    for node in capture.nodes:
        for signature_id, (line, count) in match_text(node.log, launcher_signatures).items():
            symptoms.append(_symptom(signature_id, f"node {node.node} launcher", node.node, None, None, line, count))
    return tuple(symptom for symptom in symptoms
                 if on_enough_nodes(symptom.id, {other.node for other in symptoms if other.id == symptom.id}))


def on_enough_nodes(signature_id: str, nodes: set) -> bool:
    """Whether a signature was seen on as many nodes (or log files) as it needs to mean what it says."""
    return len(nodes) >= SIGNATURES_BY_ID[signature_id].on_nodes


def _symptom(signature_id, source, node, local_rank, rank, line, count) -> Symptom:
    signature = SIGNATURES_BY_ID[signature_id]
    return Symptom(
        id=signature_id,
        title=signature.title,
        role=signature.role,
        source=source,
        node=node,
        local_rank=local_rank,
        rank=rank,
        line=line,
        count=count,
    )
