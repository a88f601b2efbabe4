"""Running torch's own Flight Recorder analyzer on the dumps, and comparing its verdict with ours.

torch's analyzer (`python -m torch.distributed.flight_recorder.fr_trace DIR`) unpickles its
input with `pickle.load`, so it only ever sees pickles written here from validated records
(`dumps.torch_form`), never a file as it came. gloo dumps are normalised first (their
pg_config is keyed by '' while entries name group '0', which makes the analyzer fail).
"""

from __future__ import annotations

import dataclasses
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .analysis import analyse
from .dumps import torch_form
from .records import Analysis, FlightRecorderCapture, TorchAnalyzerRun
from .report import CULPRIT_RANK, MISSING_RANKS, NO_DUMP_RANKS, SEQUENCE

MODULE = "torch.distributed.flight_recorder.fr_trace"
LIMIT_S = 60.0
NOISE = ("UserWarning", "_conversion_method_template", "Failed to initialize NumPy")


def run_torch_analyzer(capture: FlightRecorderCapture, python: str = sys.executable) -> TorchAnalyzerRun:
    """torch's analyzer's report on the capture's dumps."""
    if not capture.dumps:
        return TorchAnalyzerRun(MODULE, None, "no dumps to analyse", ())
    changes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="faultlab-fr-") as directory:
        for dump in capture.dumps:
            raw, changed = torch_form(dump)
            changes += changed
            (Path(directory) / f"rank_{dump.rank}").write_bytes(pickle.dumps(raw))
        code, output = _run([python, "-m", MODULE, directory, "-p", "rank_", "--allow-incomplete-ranks"])
    command = f"python -m {MODULE} DIR -p rank_ --allow-incomplete-ranks"
    return TorchAnalyzerRun(command, code, output.strip(), tuple(changes))


def with_torch_analysis(capture):
    """`capture` (a records.Capture) with torch's analyzer's report on its dumps, where the
    dumps show a divergence to report on (it takes a fresh interpreter: a second or two)."""
    recorder = capture.flight_recorder
    if recorder is None or not recorder.dumps or analyse(recorder).divergence_seq is None:
        return capture
    return dataclasses.replace(capture, flight_recorder=dataclasses.replace(
        recorder, torch_analyzer=run_torch_analyzer(recorder)))


def _run(args: list[str]) -> tuple[int | None, str]:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=LIMIT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"could not run: {error}"
    lines = (done.stdout + done.stderr).splitlines()
    kept = list(dict.fromkeys(line for line in lines if not any(noise in line for noise in NOISE)))
    if done.returncode != 0:  # its traceback: the last line says what failed
        kept = [line for line in kept if not line.startswith((" ", "Traceback"))][-3:]
    return done.returncode, "\n".join(kept)


def agreement(analysis: Analysis, run: TorchAnalyzerRun | None) -> str:
    """Where torch's analyzer and `analysis` agree, in one line ('' without a torch run)."""
    if run is None:
        return ""
    if run.exit_code != 0:
        return "torch's analyzer could not read these dumps (its output is shown as it is)"
    undecided = re.search(NO_DUMP_RANKS, run.output)
    if undecided:
        return (f"torch's analyzer cannot decide without the dumps of ranks {{{undecided.group(1)}}}; "
                f"here the rank(s) without a dump are named: {sorted(analysis.culprits)}")
    said = _torch_verdict(run.output)
    if said is None:
        if analysis.divergence_seq is None:
            return "agree: neither finds a collective the ranks did not issue alike"
        return f"torch's analyzer reports no mismatch; this analysis finds #{analysis.divergence_seq}"
    seq, ranks, kind = said
    parts = [("agree" if seq == analysis.divergence_seq else "differ") + f" on the sequence id (#{seq})"]
    if set(ranks) == set(analysis.culprits):
        parts.append(f"agree on the rank(s): {sorted(ranks)}")
    elif kind == "missing":
        parts.append(f"torch lists the ranks missing from it, {sorted(ranks)}; here the odd one out is named, "
                     f"{sorted(analysis.culprits) or 'none'}")
    else:
        parts.append(f"differ on the culprit: torch {sorted(ranks)}, here {sorted(analysis.culprits)}")
    return "; ".join(parts)


def _torch_verdict(output: str) -> tuple[int, tuple[int, ...], str] | None:
    """(sequence id, ranks torch names, 'culprit' or 'missing') from its report, or None."""
    seq = re.search(SEQUENCE, output)
    if seq is None:
        return None
    culprit = re.search(CULPRIT_RANK, output)
    if culprit:
        return int(seq.group(1)), (int(culprit.group(1)),), "culprit"
    missing = re.search(MISSING_RANKS, output)
    ranks = tuple(int(r) for r in missing.group(1).split(",")) if missing else ()
    return int(seq.group(1)), ranks, "missing"
