"""py-spy dumps read as stacks: which thread waits where, and in which collective.

A thread's header line is followed by its frames, innermost first; diagnose's rules compare the
stacks of the ranks' loops (log_facts keeps them with the other facts).
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math
import re

STACK_THREAD = re.compile(r'\((idle|active|active\+gil|gil)\)(?:: "([^"]*)")?')
STACK_DEPTH = 256  # lines below a thread's header that can still be its frames
FRAGMENT_GAP = 3  # collective frames this close, with no header, are one stack (broadcast_object_list's broadcast)
SIGNATURES = {  # the signatures whose lines make up stacks, and what each line is
    "ctx-stack-thread": "thread", "stack-idle-main-thread": "thread", "stack-in-collective": "collective",
    "ctx-stack-waiting-frame": "waiting", "ctx-stack-helper-frame": "helper"}
FRAME_FUNCTION = re.compile(r"(\w+) \([^()\s]*\.py:\d+\)")  # py-spy's "function (file.py:line)", past any prefix
COLLECTIVE_CALLS = frozenset({"all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "reduce",
                              "gather", "scatter", "barrier", "point-to-point"})
COLLECTIVE_VARIANTS = {"broadcast_object_list": "broadcast", "all_gather_object": "all_gather", "gather_object": "gather",
                       "scatter_object_list": "scatter", "all_gather_into_tensor": "all_gather",
                       "_all_gather_base": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
                       "_reduce_scatter_base": "reduce_scatter", "all_to_all_single": "all_to_all",
                       # a pipeline's ranks wait in send and recv at once: point-to-point, not a mismatch
                       "send": "point-to-point", "recv": "point-to-point", "isend": "point-to-point",
                       "irecv": "point-to-point"}


@dataclasses.dataclass(frozen=True)
class Stack:
    """One thread of a py-spy dump (or several whose identical stacks the paste shows once)."""

    thread: str  # the header's thread name ('' for a fragment without its header, or a nameless thread)
    in_collective: bool  # some frame is inside torch.distributed
    waits: bool  # its innermost frame waits in Python: on a lock, a queue, a data loader
    collective: str = ""  # the collective its innermost frame inside torch.distributed is in
    helper: bool = False  # a process that is not a rank: a launcher, mp.spawn's parent, a DataLoader worker

    @property
    def rank_loop(self) -> bool:
        """Could be a rank's training loop: a main thread (or a thread no header names) of no helper process."""
        return self.thread in ("MainThread", "") and not self.helper


def read_stacks(evidence) -> list[Stack]:
    """Threads of py-spy dumps from their header and frame lines: a thread's frames are the lines
    below its header, innermost first, up to the next header, read per file and rank (a collector
    may interleave ranks' lines). Headers on consecutive lines share the frames below the last of
    them (a paste that shows identical stacks once). Frames in a collective that no header owns (a
    paste of stack fragments) make a stack each, frames a few lines apart counting as one."""
    lines = collections.defaultdict(dict)  # (path, rank) -> line number -> (kind, line)
    for item in evidence:
        lines[item.path, item.rank][item.line_number] = (SIGNATURES[item.signature], item.line)
    stacks = []
    for numbered in lines.values():
        at = sorted(numbered)
        headers = [number for number in at if numbered[number][0] == "thread"]
        owned = set()
        for index, number in enumerate(headers):
            if index + 1 < len(headers) and headers[index + 1] == number + 1:
                continue  # the next header shares these frames: they are counted under it
            first = number + 1
            last = min(headers[index + 1] if index + 1 < len(headers) else math.inf, first + STACK_DEPTH)
            frames = [(line_number, *numbered[line_number])
                      for line_number in at[bisect.bisect_left(at, first):bisect.bisect_left(at, last)]]
            owned.update(line_number for line_number, _, _ in frames)
            shared = [number]
            while shared[-1] - 1 in numbered and numbered[shared[-1] - 1][0] == "thread":
                shared.append(shared[-1] - 1)
            for header_at in shared:
                header = STACK_THREAD.search(numbered[header_at][1])
                stacks.append(Stack(thread=(header[2] or "") if header else "",
                                    in_collective=any(kind == "collective" for _, kind, _ in frames),
                                    waits=numbered.get(first, ("",))[0] == "waiting",
                                    collective=_innermost_collective(frames),
                                    helper=any(kind == "helper" for _, kind, _ in frames)))
        loose = [(number, *numbered[number]) for number in at
                 if numbered[number][0] == "collective" and number not in owned]
        fragments = [[frame] for frame in loose[:1]]
        for previous, frame in zip(loose, loose[1:]):
            if frame[0] - previous[0] > FRAGMENT_GAP:
                fragments.append([])
            fragments[-1].append(frame)
        stacks += [Stack(thread="", in_collective=True, waits=False, collective=_innermost_collective(fragment))
                   for fragment in fragments]
    return stacks


def _innermost_collective(frames) -> str:
    """The collective the innermost of these frames is in, its object and tensor variants named as
    the call they make ('' when none is)."""
    for _, kind, line in frames:
        name = FRAME_FUNCTION.search(line)
        if kind == "collective" and name:
            call = COLLECTIVE_VARIANTS.get(name[1], name[1])
            if call in COLLECTIVE_CALLS:
                return call
    return ""


def in_different_collectives(stacks: list[Stack]) -> bool:
    """Ranks' loops wait in different collectives (all_reduce here, broadcast there): they took different paths."""
    return len({stack.collective for stack in stacks if stack.collective and stack.rank_loop}) > 1


def main_thread_waits_apart(stacks: list[Stack]) -> bool:
    """A main thread waits outside every collective, on a lock, a queue or its data: in a hang, the
    rank that holds the others (they wait in the collective it never reached)."""
    return any(stack.thread == "MainThread" and not stack.helper and stack.waits and not stack.in_collective
               for stack in stacks)
