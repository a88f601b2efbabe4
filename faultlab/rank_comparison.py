"""Facts compared across ranks: which rank is at odds with the others, by the script's own lines (the tensor
sizes it prints at a collective, the epochs it counts) or by torch's Flight Recorder analyzer's report.

The facts themselves are read in log_facts.py.
"""

from __future__ import annotations

import itertools

from .log_facts import Facts

ANALYZER_ENTRY_LINES = 12  # an entry's group comes a few lines after the ranks missing from it


def script_shapes_apart(facts: Facts) -> bool:
    """Two ranks whose tensors at one collective, by the script's own lines, have no size in common. (Sizes
    that change from step to step, or a log cut earlier on one rank, still leave sizes in common.)"""
    return any(not (shapes & others) for by_rank in facts.script_shapes.values()
               for shapes, others in itertools.combinations(by_rank.values(), 2))


def script_shape_odd_rank(facts: Facts) -> int | None:
    """The one rank whose tensors at a collective, by the script's own lines, share no size with any other
    rank's, while each of the others (two or more) shares one with another. None where no collective's lines
    single one out, or they single out different ranks."""
    odd = set()
    for by_rank in facts.script_shapes.values():
        apart = [rank for rank, shapes in by_rank.items()
                 if not any(shapes & others for other, others in by_rank.items() if other != rank)]
        if len(apart) == 1 and len(by_rank) >= 3:
            odd.add(apart[0])
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
