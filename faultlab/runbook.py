"""The runbook: recorded symptoms -> causes -> checks -> fixes, from the recordings. Pure.

Everything in it comes from recordings: the excerpts are lines of their logs, verbatim;
the ranking of causes behind a symptom is how often each produced it; what was never
recorded is said to be missing, not filled in.
"""

from __future__ import annotations

import collections
import dataclasses

from .causes import CAUSES
from .flight_recorder.analysis import analyse
from .flight_recorder.view import render_view
from .records import Recording, Symptom
from .symptoms import SIGNATURES_BY_ID

# Signatures too generic to head a runbook section of their own.
CONTEXT_ONLY = frozenset({"python-exception", "child-failed"})
EXCERPTS_PER_SYMPTOM = 3


@dataclasses.dataclass(frozen=True)
class Excerpt:
    line: str
    source: str  # rank / launcher it came from
    scenario_id: str
    recording_id: str
    versions: str  # torch / NCCL / gloo / platform it was recorded on
    replayed: bool


@dataclasses.dataclass(frozen=True)
class CauseEvidence:
    cause: str
    recordings: int
    scenarios: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SymptomSection:
    signature: str
    title: str
    role: str
    meaning: str
    excerpts: tuple[Excerpt, ...]
    causes: tuple[CauseEvidence, ...]  # most frequent first
    only_replayed: bool
    platforms: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class RecorderSection:
    """What the Flight Recorder showed for one cause, in one recording."""

    cause: str
    scenario_id: str
    recording_id: str
    versions: str
    replayed: bool
    shows: str  # the analysis's culprit and reason, or that it saw no divergence
    view: str  # the per-rank table as faultlab run prints it


@dataclasses.dataclass(frozen=True)
class Runbook:
    sections: tuple[SymptomSection, ...]
    by_cause: dict[str, tuple[str, ...]]  # cause -> signatures seen with it
    causes_without_recordings: tuple[str, ...]
    platforms_recorded: tuple[str, ...]
    platforms_missing: tuple[str, ...]
    recordings: tuple[Recording, ...]  # the faulted runs, for the timelines
    baselines: dict[str, Recording]  # run id -> its baseline, where available
    cause_of: dict[str, str]  # scenario id -> cause id
    flight_recorder: tuple[RecorderSection, ...] = ()  # per cause, from recordings that carry dumps


def platform_of(recording: Recording) -> str:
    return "gpu" if recording.backend == "nccl" else "cpu"


def versions_of(recording: Recording) -> str:
    env = recording.environment
    backend = f"NCCL {env.nccl}" if recording.backend == "nccl" else "gloo"
    gpus = f", {len(env.gpus)} x {env.gpus[0]}" if env.gpus and recording.backend == "nccl" else ""
    return f"torch {env.torch}, {backend}, {env.platform}{gpus}"


def build(recordings: list[Recording], baselines: dict[str, Recording], cause_of: dict[str, str]) -> Runbook:
    """The runbook of `recordings` (faulted runs); `cause_of` maps scenario ids to causes."""
    runs = [r for r in recordings if r.kind == "run" and r.comparison and r.comparison.verdict != "healthy"]
    found: dict[str, list[tuple[Recording, Symptom]]] = collections.defaultdict(list)
    for recording in runs:
        for symptom in recording.symptoms:
            if symptom.id not in CONTEXT_ONLY:
                found[symptom.id].append((recording, symptom))
    sections = []
    silent = [r for r in runs if r.comparison.verdict == "wrong-result"]
    if silent:
        sections.append(_wrong_result_section(silent, cause_of))
    for signature_id, hits in found.items():
        signature = SIGNATURES_BY_ID[signature_id]
        causes = _cause_evidence([recording for recording, _ in hits], cause_of)
        excerpts, seen_lines = [], set()
        for recording, symptom in sorted(hits, key=lambda hit: (hit[0].live is False, hit[0].scenario_id)):
            if symptom.line in seen_lines:
                continue
            seen_lines.add(symptom.line)
            excerpts.append(
                Excerpt(symptom.line, symptom.source, recording.scenario_id, recording.id,
                        versions_of(recording), not recording.live)
            )
        sections.append(
            SymptomSection(
                signature=signature_id,
                title=signature.title,
                role=signature.role,
                meaning=signature.meaning,
                excerpts=tuple(excerpts[:EXCERPTS_PER_SYMPTOM]),
                causes=causes,
                only_replayed=all(not recording.live for recording, _ in hits),
                platforms=tuple(sorted({platform_of(recording) for recording, _ in hits})),
            )
        )
    sections.sort(key=lambda s: ({"culprit": 0, "victim": 1}.get(s.role, 2), -sum(c.recordings for c in s.causes), s.signature))
    by_cause: dict[str, set[str]] = collections.defaultdict(set)
    for section in sections:
        for evidence in section.causes:
            by_cause[evidence.cause].add(section.signature)
    recorded_causes = {cause_of.get(r.scenario_id) for r in runs}
    platforms = sorted({platform_of(r) for r in runs})
    return Runbook(
        sections=tuple(sections),
        by_cause={cause: tuple(sorted(ids)) for cause, ids in by_cause.items()},
        causes_without_recordings=tuple(c.id for c in CAUSES if c.id != "healthy" and c.id not in recorded_causes),
        platforms_recorded=tuple(platforms),
        platforms_missing=tuple(p for p in ("cpu", "gpu") if p not in platforms),
        recordings=tuple(sorted(runs, key=lambda r: r.scenario_id)),
        baselines=baselines,
        cause_of=cause_of,
        flight_recorder=_recorder_sections(runs, cause_of),
    )


def _recorder_sections(runs: list[Recording], cause_of: dict[str, str]) -> tuple[RecorderSection, ...]:
    """Per cause, one recording's Flight Recorder reading: one that diverges where there is one."""
    chosen: dict[str, tuple[Recording, object]] = {}
    for recording in sorted(runs, key=lambda r: (not r.live, r.scenario_id)):
        recorder = recording.capture.flight_recorder
        cause = cause_of.get(recording.scenario_id)
        if recorder is None or cause is None:
            continue
        analysis = analyse(recorder)
        if cause not in chosen or (chosen[cause][1].divergence_seq is None and analysis.divergence_seq is not None):
            chosen[cause] = (recording, analysis)
    sections = []
    for cause, (recording, analysis) in sorted(chosen.items()):
        culprit = ", ".join(f"rank {rank}" for rank in analysis.culprits) or "no culprit named"
        shows = f"{culprit}: {analysis.reason}" if analysis.divergence_seq is not None else analysis.reason
        sections.append(RecorderSection(cause, recording.scenario_id, recording.id, versions_of(recording),
                                        not recording.live, shows, render_view(recording.capture.flight_recorder, analysis)))
    return tuple(sections)


def _cause_evidence(recordings: list[Recording], cause_of: dict[str, str]) -> tuple[CauseEvidence, ...]:
    """The causes behind `recordings`: how many recordings and which scenarios each, most first."""
    ids: dict[str, set[str]] = collections.defaultdict(set)
    scenarios: dict[str, set[str]] = collections.defaultdict(set)
    for recording in recordings:
        cause = cause_of.get(recording.scenario_id, "unknown")
        ids[cause].add(recording.id)
        scenarios[cause].add(recording.scenario_id)
    return tuple(sorted((CauseEvidence(cause, len(ids[cause]), tuple(sorted(scenarios[cause]))) for cause in ids),
                        key=lambda evidence: (-evidence.recordings, evidence.cause)))


WRONG_RESULT = "wrong-result"  # the section for failures no log line shows


def _wrong_result_section(runs: list[Recording], cause_of: dict[str, str]) -> SymptomSection:
    """Jobs that exit 0 everywhere with a wrong value: the evidence is the value lines
    themselves, next to the value the healthy baseline prints."""
    excerpts = []
    for recording in runs:
        expected = recording.comparison.deltas[0].expected_value
        for rank in recording.capture.ranks:
            line = next((out for out in rank.stdout.splitlines() if out.startswith("Rank ")), None)
            if line and len(excerpts) < EXCERPTS_PER_SYMPTOM:
                excerpts.append(Excerpt(line, f"rank {rank.rank} (a healthy run prints {expected:g})",
                                        recording.scenario_id, recording.id, versions_of(recording), not recording.live))
    return SymptomSection(
        signature=WRONG_RESULT,
        title="Every process exits 0, and the numbers are wrong",
        role="neutral",
        meaning="No log line shows it; only a comparison with a known-good value does.",
        excerpts=tuple(excerpts),
        causes=_cause_evidence(runs, cause_of),
        only_replayed=all(not r.live for r in runs),
        platforms=tuple(sorted({platform_of(r) for r in runs})),
    )
