"""A capture next to the healthy baseline of the same topology: per-rank deltas and a verdict. Pure."""

from __future__ import annotations

from .records import Capture, Comparison, RankCapture, RankDelta, Symptom

# A rank that took this much longer than in the baseline deviates in timing.
SLOW_MARGIN_S = 2.0


def expected_value(world_size: int) -> float:
    """all_reduce(SUM) of each rank's own rank: 0 + 1 + ... + (N-1)."""
    return world_size * (world_size - 1) / 2


def _duration(rank: RankCapture | None) -> float | None:
    if rank is None or rank.start_t is None:
        return None
    return round(rank.end_t - rank.start_t, 3)


def _symptom_ids(symptoms: tuple[Symptom, ...], node: int, local_rank: int) -> set[str]:
    return {s.id for s in symptoms if s.node == node and s.local_rank == local_rank}


def _failed(rank: RankCapture) -> bool:
    return rank.ending != "exited" or rank.exit_code != 0


def compare(
    capture: Capture,
    symptoms: tuple[Symptom, ...],
    baseline: Capture,
    baseline_symptoms: tuple[Symptom, ...],
) -> Comparison:
    expected = expected_value(baseline.world_size)
    deltas = []
    for rank in capture.ranks:
        reference = baseline.rank_for_slot(rank.node, rank.local_rank)
        new = sorted(
            _symptom_ids(symptoms, rank.node, rank.local_rank)
            - _symptom_ids(baseline_symptoms, rank.node, rank.local_rank)
            - {"python-exception"}
        )
        deltas.append(_rank_delta(rank, reference, expected, new))
    deltas += [_absent_delta(reference, expected) for reference in baseline.ranks
               if capture.rank_for_slot(reference.node, reference.local_rank) is None]
    verdict = _verdict(capture, deltas, expected)
    first = _first_failure(capture)
    return Comparison(
        verdict=verdict,
        summary=_summary(verdict, capture, deltas, first),
        deltas=tuple(deltas),
        first_failure=first,
        deviating_ranks=tuple(sorted({d.rank for d in deltas if d.deviates})),
        launchers=_launcher_deviations(capture, baseline),
    )


def _how_it_ended(rank: RankCapture) -> list[str]:
    if rank.ending == "killed_at_deadline":
        return [f"hung in {rank.waiting_in or rank.last_phase}" + (f" for {rank.waited_s:.1f}s" if rank.waited_s else "")]
    if rank.ending == "never_started":
        return ["never started"]
    if rank.ending == "torn_down":
        return ["torn down by the launcher" + (f" while in {rank.waiting_in}" if rank.waiting_in else "")]
    if rank.ending == "signaled":
        return [f"killed by signal {-rank.exit_code}" if rank.exit_code else "killed by a signal"]
    return [f"exit {rank.exit_code} in {_phase_of_failure(rank)}"] if rank.exit_code != 0 else []


def _rank_delta(rank: RankCapture, reference: RankCapture | None, expected: float, new: list[str]) -> RankDelta:
    """One slot of the run next to the same slot of the baseline, with how it deviates."""
    how = _how_it_ended(rank)
    if rank.value is not None and rank.value != expected:
        how.append(f"value {rank.value:g} != {expected:g}")
    elif rank.value is None and not _failed(rank):
        how.append("printed no value")
    duration, baseline_duration = _duration(rank), _duration(reference)
    slower = duration is not None and baseline_duration is not None and duration > baseline_duration + SLOW_MARGIN_S
    if not _failed(rank) and slower:
        how.append(f"took {duration:.1f}s vs {baseline_duration:.1f}s")
    late = _started_late(rank, reference)
    if late:
        how.append(f"started {late:.1f}s later than in the baseline")
    if new:
        how.append("new: " + ", ".join(new))
    return RankDelta(
        node=rank.node, local_rank=rank.local_rank, rank=rank.shown_rank, expected_value=expected,
        observed_value=rank.value, baseline_ending=reference.ending if reference else "absent",
        ending=rank.ending, exit_code=rank.exit_code, last_phase=rank.last_phase,
        baseline_duration_s=baseline_duration, duration_s=duration, waiting_in=rank.waiting_in,
        waited_s=rank.waited_s, new_symptoms=tuple(new), deviates=bool(how), how=tuple(how),
    )


def _started_late(rank: RankCapture, reference: RankCapture | None) -> float | None:
    """How much later than in the baseline the rank started (its node came up late), if by more than the margin."""
    if rank.start_t is None or reference is None or reference.start_t is None:
        return None
    late = rank.start_t - reference.start_t
    return late if late > SLOW_MARGIN_S else None


def _absent_delta(reference: RankCapture, expected: float) -> RankDelta:
    """A slot the baseline has and the run never launched."""
    return RankDelta(
        node=reference.node, local_rank=reference.local_rank, rank=reference.shown_rank,
        expected_value=expected, observed_value=None, baseline_ending=reference.ending, ending="absent",
        exit_code=None, last_phase="not launched", baseline_duration_s=_duration(reference), duration_s=None,
        waiting_in=None, waited_s=None, new_symptoms=(), deviates=True,
        how=("not launched: its node started fewer workers than the baseline's",),
    )


def _launcher_deviations(capture: Capture, baseline: Capture) -> tuple[str, ...]:
    notes = []
    for node in capture.nodes:
        if node.exit_code == 0:
            continue
        if node.exit_code is None:
            notes.append(f"node {node.node} launcher still running at the {capture.deadline_s:g}s deadline (killed)")
        else:
            notes.append(f"node {node.node} launcher exited {node.exit_code}")
    if len(capture.nodes) != len(baseline.nodes):
        notes.append(f"{len(capture.nodes)} launchers, baseline {len(baseline.nodes)}")
    return tuple(notes)


def _phase_of_failure(rank: RankCapture) -> str:
    """The call a failed rank was in: the last *_begin without its *_end, else its last phase."""
    for event in reversed(rank.events):
        if event.phase.endswith("_begin"):
            return event.phase[: -len("_begin")]
        if event.phase.endswith("_end"):
            break
    phases = [e.phase for e in rank.events if e.phase not in ("error", "exit")]
    return phases[-1] if phases else "start"


def _verdict(capture: Capture, deltas: list[RankDelta], expected: float) -> str:
    if capture.hit_deadline or any(d.ending == "killed_at_deadline" for d in deltas):
        return "hung"
    if any(d.ending not in ("exited", "absent") or d.exit_code not in (0, None) for d in deltas) or any(
        node.exit_code not in (0, None) for node in capture.nodes
    ):
        return "crashed"
    if any(d.observed_value != expected for d in deltas):
        return "wrong-result"
    if any(d.new_symptoms for d in deltas):
        return "warnings-only"
    return "healthy"


def _first_failure(capture: Capture) -> str | None:
    """What torch's launcher would call the root cause: the earliest failed worker in time."""
    failed = [r for r in capture.ranks if r.ending in ("exited", "signaled") and r.exit_code not in (0, None)]
    if failed:
        first = min(failed, key=lambda r: r.end_t)
        return f"rank {first.shown_rank} (node {first.node}) at {first.end_t:.2f}s, exit {first.exit_code}"
    broken_launchers = [n for n in capture.nodes if n.exit_code not in (0, None)]
    if broken_launchers:
        return f"node {broken_launchers[0].node} launcher, exit {broken_launchers[0].exit_code}"
    return None


def _summary(verdict: str, capture: Capture, deltas: list[RankDelta], first: str | None) -> str:
    deviating = [d for d in deltas if d.deviates]
    if verdict == "healthy":
        return f"healthy: all {len(deltas)} ranks agree with the baseline"
    parts = [f"{verdict}: {len(deviating)} of {len(deltas)} ranks deviate from the baseline"]
    if verdict == "hung":
        parts.append(f"still running at the {capture.deadline_s:g}s deadline and killed")
    if first:
        parts.append(f"first failure: {first}")
    return "; ".join(parts)
