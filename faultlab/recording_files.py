"""Recording files: a run and the baseline it was compared with, as one JSON document.

Shipped recordings (recordings/ in the repository) are runs made live on hardware this
machine may lack, GPUs above all; `faultlab run` replays them where it cannot run live.
Each file says where, when and on which versions it was made.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import identity
from .errors import BadInput
from .records import Recording
from .scenario import shipped_dir
from .serial import RecordError, from_dict, read_json, to_dict
from .userfiles import RECORDING_FILE_LIMIT, write_text

RECORDINGS_ENV = "FAULTLAB_RECORDINGS"
FILE_FORMAT = 1


def recordings_dir() -> Path:
    return shipped_dir(RECORDINGS_ENV, "recordings")


def hardware_tag(recording: Recording) -> str:
    """A short name for where it ran: 'h200x1' for one NVIDIA H200, 'cpu' without GPUs."""
    gpus = recording.environment.gpus
    if not gpus:
        return "cpu"
    model = re.sub(r"[^a-z0-9]+", "", gpus[0].lower().replace("nvidia", "")) or "gpu"
    return f"{model}x{len(gpus)}"


def write(directory: Path, run: Recording, baseline: Recording) -> Path:
    """Write the run and its baseline to DIRECTORY/<scenario>.<hardware>.json; returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{run.scenario_id}.{hardware_tag(run)}.json"
    document = {"format": FILE_FORMAT, "run": to_dict(run), "baseline": to_dict(baseline)}
    write_text(path, json.dumps(document, indent=1) + "\n")
    return path


def read(path: Path) -> tuple[Recording, Recording]:
    """The (run, baseline) pair of a recording file; BadInput names what is wrong."""
    document = read_json(path, "a recording file", RECORDING_FILE_LIMIT)
    if not isinstance(document, dict) or document.get("format") != FILE_FORMAT:
        raise BadInput(f"{path}: not a faultlab recording of format {FILE_FORMAT}")
    try:
        run = from_dict(Recording, document.get("run"), "run")
        baseline = from_dict(Recording, document.get("baseline"), "baseline")
        identity.check_recording(run, "run")
        identity.check_recording(baseline, "baseline")
    except (RecordError, BadInput) as error:
        raise BadInput(f"{path}: {error}") from None
    return run, baseline


def shipped_for(scenario_id: str) -> list[Path]:
    """Shipped recordings of a scenario, the one made on the most GPUs first."""
    directory = recordings_dir()
    if not directory.is_dir():
        return []

    def gpu_count(path: Path) -> int:
        match = re.search(r"x(\d+)\.json$", path.name)
        return int(match.group(1)) if match else 0

    return sorted(directory.glob(f"{scenario_id}.*.json"), key=gpu_count, reverse=True)
