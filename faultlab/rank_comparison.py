"""Facts compared across ranks: which rank is at odds with the others, by the script's own lines (the tensor
sizes it prints at a collective, the epochs it counts) or by torch's Flight Recorder analyzer's report.

The facts themselves are read in log_facts.py.
"""

from __future__ import annotations

import collections
import itertools

from .log_facts import ANALYZER_ENTRY_LINES, Facts


def script_shape_odd_rank(facts: Facts) -> int | None:
    """The one rank whose tensor at a collective, by the script's own lines, has a size all the others (two or
    more, agreeing) do not. None where no collective's lines single one out, or they single out different ranks."""
    odd = set()
    for ranks in facts.script_shapes.values():
        groups = collections.defaultdict(list)
        for rank, shapes in ranks.items():
            groups[frozenset(shapes)].append(rank)
        sizes = sorted(len(members) for members in groups.values())
        if sizes[:1] == [1] and len(sizes) == 2 and sizes[1] >= 2:
            odd |= {members[0] for members in groups.values() if len(members) == 1}
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
