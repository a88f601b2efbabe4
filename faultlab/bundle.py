"""Portable bundles: recordings and drill scores a team exchanges as one JSON file.

A bundle carries a SHA-256 of its content; import checks the first bytes (a bundle begins
with its kind, so another file is refused before it is read whole), the format, every
record's shape and identities, and the checksum before it writes anything, and then writes
all of it in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from . import identity
from .errors import BadInput
from .records import DrillResult, Recording
from .serial import RecordError, from_dict, read_json, to_dict
from .store import Store
from .textsafe import excerpt
from .userfiles import BUNDLE_LIMIT, write_text

BUNDLE_KIND = "faultlab-bundle"
BUNDLE_FORMAT = 1
_BUNDLE_HEAD = re.compile(rb'\s*\{\s*"kind"\s*:\s*"' + BUNDLE_KIND.encode() + rb'"')


def _digest(content: dict) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def export(store: Store, path: Path, scenario_ids: tuple[str, ...] = (), trainees: tuple[str, ...] = ()) -> tuple[int, int]:
    """Write the store's recordings (of `scenario_ids`, or all) and drills (of `trainees`,
    or all) to `path`. Returns how many of each were written."""
    if store.missing:
        raise BadInput(f"{store.path}: no recordings yet: nothing to export")
    recordings = [r for r in store.recordings() if not scenario_ids or r.scenario_id in scenario_ids]
    wanted = {r.baseline_id for r in recordings if r.baseline_id}
    have = {r.id for r in recordings}
    recordings += [store.get(baseline_id) for baseline_id in sorted(wanted - have)]
    drills = [d for d in store.drills() if (not trainees or d.trainee in trainees)
              and (not scenario_ids or d.scenario_id in scenario_ids)]
    content = {"recordings": [to_dict(r) for r in recordings], "drills": [to_dict(d) for d in drills]}
    document = {"kind": BUNDLE_KIND, "format": BUNDLE_FORMAT, "sha256": _digest(content), **content}
    write_text(path, json.dumps(document) + "\n")
    return len(recordings), len(drills)


def read(path: Path) -> tuple[list[Recording], list[DrillResult]]:
    """Every record of a bundle, checked; BadInput names the first problem."""
    document = read_json(path, "a faultlab bundle", BUNDLE_LIMIT, lambda head: bool(_BUNDLE_HEAD.match(head)))
    if not isinstance(document, dict) or document.get("kind") != BUNDLE_KIND:
        raise BadInput(f"{path}: not a faultlab bundle")
    if document.get("format") != BUNDLE_FORMAT:
        raise BadInput(f"{path}: bundle format {excerpt(document.get('format'))}, "
                       f"this faultlab reads {BUNDLE_FORMAT}")
    content = {"recordings": document.get("recordings"), "drills": document.get("drills")}
    if not all(isinstance(items, list) for items in content.values()):
        raise BadInput(f"{path}: a bundle needs 'recordings' and 'drills' lists")
    if document.get("sha256") != _digest(content):
        raise BadInput(f"{path}: checksum mismatch: the bundle was changed after it was exported")
    try:
        recordings = [from_dict(Recording, item, f"recordings[{i}]") for i, item in enumerate(content["recordings"])]
        drills = [from_dict(DrillResult, item, f"drills[{i}]") for i, item in enumerate(content["drills"])]
        for index, recording in enumerate(recordings):
            identity.check_recording(recording, f"recordings[{index}]")
        for index, drill in enumerate(drills):
            identity.check_drill(drill, f"drills[{index}]")
    except (RecordError, BadInput) as error:
        raise BadInput(f"{path}: {error}") from None
    return recordings, drills
