"""Pairs of nodes compared by the bus bandwidth their all_reduce sweeps reached.

Each pair's figure is its peak busbw over the sizes it measured. Pairs are compared with
pairs only: the run across all nodes is shown but not judged, since more ranks can be
slower for reasons of their own (an oversubscribed fabric between switches; on the
practice cluster, ranks sharing two CPUs). The reference is the median, over the nodes,
of the best figure any pair with that node reached: a node's best pair shows what its
links can do, and the median of those is what the cluster's links do, even with three
nodes, where two of the three pairs hold the bad one. A pair below SLOW_FRACTION of the
reference is slow. A node is slow when every pair it is in is slow and some pair is not;
a slow pair of two nodes that are not slow is a slow link. Pure.
"""

from __future__ import annotations

import dataclasses
import statistics

# A group below this fraction of the reference is slow: far outside the run-to-run spread of
# a healthy link (a few tens of percent), well inside what a degraded link costs (a link
# trained at a lower speed, a NIC on the wrong PCIe root, traffic falling back to TCP).
SLOW_FRACTION = 0.5


@dataclasses.dataclass(frozen=True)
class Judgement:
    reference: float | None  # GB/s; None when fewer than two groups were measured
    slow_groups: tuple[tuple[str, ...], ...]
    slow_nodes: tuple[str, ...]
    slow_links: tuple[tuple[str, str], ...]


def judge(nodes: tuple[str, ...], figures: dict[tuple[str, ...], float]) -> Judgement:
    """`figures`: each measured pair's peak busbw (GB/s)."""
    if len(figures) < 2:
        return Judgement(None, (), (), ())
    best = [max(value for group, value in figures.items() if node in group)
            for node in nodes if any(node in group for group in figures)]
    reference = statistics.median(best)
    slow = tuple(group for group, value in figures.items() if value < SLOW_FRACTION * reference)
    fast = [group for group in figures if group not in slow]
    slow_nodes = tuple(node for node in nodes if fast and any(node in group for group in figures)
                       and all(group in slow for group in figures if node in group))
    links = tuple(group for group in slow if len(group) == 2 and not set(group) & set(slow_nodes))
    return Judgement(reference, slow, slow_nodes, links)
