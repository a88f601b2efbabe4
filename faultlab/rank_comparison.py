"""Facts compared across ranks: which rank is at odds with the others, by the script's own lines (the tensor
sizes it prints at a collective, the epochs it counts) or by torch's Flight Recorder analyzer's report.

The facts themselves are read in log_facts.py.
"""

from __future__ import annotations

import collections
import itertools

from .log_facts import Facts

ANALYZER_ENTRY_LINES = 12  # an entry's group comes a few lines after the ranks missing from it


def _shapes_by_call(facts: Facts):
    """Per collective and per call, in the order each rank printed its calls ({rank: size}): as far as every
    rank's lines reach (one rank's log cut earlier compares only the calls all ranks show)."""
    for by_rank in facts.script_shapes.values():
        if len(by_rank) >= 2:
            for call in range(min(len(sizes) for sizes in by_rank.values())):
                yield {rank: sizes[call] for rank, sizes in by_rank.items()}


def _odd_rank(sizes: dict) -> int | None:
    """The one rank whose size differs from all the others', which (two or more) agree."""
    counts = collections.Counter(sizes.values())
    if len(counts) != 2 or len(sizes) < 3 or min(counts.values()) != 1:
        return None
    lone = min(counts, key=counts.get)
    return next(rank for rank, size in sizes.items() if size == lone)


def script_shapes_differ(facts: Facts) -> bool:
    """At one call of a collective, by the script's own lines, ranks' tensors differ in size."""
    return any(len(set(sizes.values())) > 1 for sizes in _shapes_by_call(facts))


def script_shape_odd_rank(facts: Facts) -> int | None:
    """The one rank whose tensor at a call of a collective, by the script's own lines, differs in size from all the
    others' while they agree. None where no call singles one out, or calls single out different ranks."""
    odd = {_odd_rank(sizes) for sizes in _shapes_by_call(facts)} - {None}
    return next(iter(odd)) if len(odd) == 1 else None


def analyzer_odd_rank(facts: Facts) -> int | None:
    """The one rank that torch's Flight Recorder analyzer, in an entry of its report, does not list as missing
    from a collective of its group while it lists all the others: that rank issued a collective no other rank
    did. None where no entry says so, or entries name different ranks."""
    odd = set()
    for path, number, missing in facts.analyzer_missing:
        group = next((ranks for where, at, ranks in facts.analyzer_expected
                      if where == path and number < at <= number + ANALYZER_ENTRY_LINES), set())
        present = group - missing
        if len(present) == 1 and len(missing) >= 2:
            odd |= present
    return next(iter(odd)) if len(odd) == 1 else None


def ranks_in_different_epochs(facts: Facts) -> bool:
    """Two ranks' own progress lines put them in different epochs at the same step, with no epoch in common
    there: in lockstep training they cannot be, unless they ran different numbers of steps (uneven data),
    each collective then meeting another rank's different one. (A step count that restarts each epoch
    gives every rank the same epochs at a step.)"""
    return any(not (epochs & others) for by_rank in facts.script_epochs.values()
               for epochs, others in itertools.combinations(by_rank.values(), 2))
