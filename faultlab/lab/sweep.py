"""The all_reduce bandwidth sweep: program text added to the experiment, and its output read back.

Preflight adds the sweep to the experiment's program, after its all_reduce and before
destroy_process_group, so the same ranks that torch's launcher started measure the link:
for each message size (8 B, then doubling up to a byte bound) a few warm-up all_reduces,
then timed ones. The definitions are nccl-tests': time is each rank's average per
all_reduce, averaged over the ranks; algbw = bytes / time; busbw = algbw * 2(n-1)/n, what
each rank's link carries in a ring all_reduce, comparable across group sizes (0 for one rank).
Rank 0 prints a table the way nccl-tests does; `read_sweep` reads it back from its stdout.

The sweep has a time budget every rank applies alike: before each size it predicts that
size's cost from the last one (linearly in bytes) out of the rank-averaged times, which
every rank holds the same, and stops when the budget would be exceeded. Pure: no torch.
"""

from __future__ import annotations

import dataclasses
import re

from .program import CodePatch

MIN_BYTES = 8
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_SECONDS = 10.0
WARMUP_ITERATIONS = 2
TIMED_ITERATIONS = 5
ELEMENT_BYTES = 4  # float32, as nccl-tests' default
HEADER = "# all_reduce bandwidth sweep"
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", re.MULTILINE)
END = re.compile(r"^# sweep (done|stopped): (.*)$", re.MULTILINE)

_BLOCK = """\

# The all_reduce bandwidth sweep, with nccl-tests' definitions: per size, {warmup} warm-up then
# {iters} timed all_reduces of float32; time = each rank's average, averaged over the ranks;
# algbw = bytes / time; busbw = algbw * 2(n-1)/n (what each link carries in a ring).
# It calls torch's all_reduce itself (distributed_c10d), not the name faultlab's worker wraps
# to log phase events: those file writes would count in the small sizes' times.
SWEEP_MAX_BYTES, SWEEP_SECONDS = {max_bytes}, {seconds}
all_reduce = dist.distributed_c10d.all_reduce
world = dist.get_world_size()


def finish():
    if device == "cuda":
        torch.cuda.synchronize()


if rank == 0:
    print(f"{header} on {{BACKEND}}: {{world}} rank(s), float32 sum, {warmup} warm-up + {iters} timed "
          f"iterations per size, up to {{SWEEP_MAX_BYTES}} B or {{SWEEP_SECONDS}} s", flush=True)
    if world == 1:
        print("# one rank: no link is crossed (NCCL's in-place all_reduce moves no data at all); "
              "the times are the call's own cost", flush=True)
    print("#     size B     count      time us    algbw GB/s    busbw GB/s", flush=True)
size, last, spent, stopped = {min_bytes}, None, 0.0, None
while size <= SWEEP_MAX_BYTES:
    cost = {all_iters} * last[1] * size / last[0] if last else 0.0
    if spent + cost > SWEEP_SECONDS:
        stopped = f"before {{size}} B: about {{cost:.1f}} s more would overrun the {{SWEEP_SECONDS}} s budget"
        break
    buffer = torch.ones(size // {element}, device=device)
    for _ in range({warmup}):
        all_reduce(buffer)
    finish()
    start = time.perf_counter()
    for _ in range({iters}):
        all_reduce(buffer)
    finish()
    took = torch.tensor([(time.perf_counter() - start) / {iters}], dtype=torch.float64, device=device)
    all_reduce(took)
    seconds = took.item() / world
    algbw = size / seconds / 1e9
    if rank == 0:
        print(f"{{size:>12}}  {{size // {element}:>8}}  {{seconds * 1e6:>11.2f}}  {{algbw:>12.4f}}  "
              f"{{algbw * 2 * (world - 1) / world:>12.4f}}", flush=True)
    last, spent, size = (size, seconds), spent + {all_iters} * seconds, size * 2
if rank == 0:
    ending = f"stopped: {{stopped}}" if stopped else f"done: every size up to {{SWEEP_MAX_BYTES}} B"
    print(f"# sweep {{ending}}, {{spent:.2f}} s timed", flush=True)
"""


BYTE_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def parse_bytes(text: str) -> int | None:
    """'65536', '64K', '64M', '1G' (binary units) -> bytes; None if it is none of those."""
    match = re.fullmatch(r"(\d+)([KMG]?)(?:i?B)?", text.strip(), re.IGNORECASE)
    return int(match.group(1)) * BYTE_UNITS[match.group(2).upper()] if match else None


@dataclasses.dataclass(frozen=True)
class SweepSettings:
    max_bytes: int = DEFAULT_MAX_BYTES  # the largest message; sizes double from 8 B up to it
    seconds: float = DEFAULT_SECONDS  # the time the timed and warm-up all_reduces may take in all


def patch(settings: SweepSettings) -> CodePatch:
    """The sweep as a change to the program: inserted before destroy_process_group."""
    text = _BLOCK.format(
        warmup=WARMUP_ITERATIONS, iters=TIMED_ITERATIONS, all_iters=WARMUP_ITERATIONS + TIMED_ITERATIONS,
        max_bytes=settings.max_bytes, seconds=settings.seconds, min_bytes=MIN_BYTES, element=ELEMENT_BYTES,
        header=HEADER,
    )
    # The block's own braces were doubled for this format; render_program formats once more.
    return CodePatch("shutdown", before=text.replace("{", "{{").replace("}", "}}") + "\n")


@dataclasses.dataclass(frozen=True)
class Point:
    bytes: int
    seconds: float  # per all_reduce, averaged over the ranks

    def algbw(self) -> float:
        """GB/s (1e9 bytes), as nccl-tests."""
        return self.bytes / self.seconds / 1e9

    def busbw(self, world: int) -> float:
        return self.algbw() * 2 * (world - 1) / world


@dataclasses.dataclass(frozen=True)
class Sweep:
    """What rank 0 printed: its points, and how the sweep ended ('' if it never did)."""

    world: int
    points: tuple[Point, ...]
    ending: str

    @property
    def peak_busbw(self) -> float | None:
        return max((point.busbw(self.world) for point in self.points), default=None)

    @property
    def peak_algbw(self) -> float | None:
        return max((point.algbw() for point in self.points), default=None)


def read_sweep(stdout: str, world: int) -> Sweep | None:
    """The sweep rank 0 printed, or None if it printed none (it failed before, or no sweep ran)."""
    start = stdout.find(HEADER)
    if start < 0:
        return None
    text = stdout[start:]
    points = tuple(Point(int(size), float(micros) / 1e6) for size, _, micros, _, _ in ROW.findall(text)
                   if float(micros) > 0)
    ended = END.search(text)
    return Sweep(world, points, f"{ended.group(1)}: {ended.group(2)}" if ended else "")
