"""The experiment's program text: the seed program, its named injection points, the diff.

The program a worker runs is real Python source, rendered from the seed program with the
scenario's code-level faults applied at named injection points. `faultlab show --code`
prints the same text, so what a trainee reads is exactly what ran. Pure: no torch.
"""

from __future__ import annotations

import dataclasses
import difflib

PROGRAM_NAME = "train.py"

# The seed program, as named blocks in order. Faults replace a block or add lines around it.
SEED_BLOCKS: tuple[tuple[str, str], ...] = (
    (
        "header",
        "import os\n"
        "import time\n"
        "from datetime import timedelta\n"
        "\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "\n"
        "BACKEND = {backend!r}\n"
        "TIMEOUT = timedelta(seconds={timeout_s})\n",
    ),
    ("before_init", ""),
    (
        "init",
        "\n"
        "dist.init_process_group(BACKEND, timeout=TIMEOUT)\n"
        "rank = dist.get_rank()\n"
        'local_rank = int(os.environ["LOCAL_RANK"])\n',
    ),
    (
        "device",
        'device = "cpu"\n'
        'if BACKEND == "nccl":\n'
        "    torch.cuda.set_device(local_rank)\n"
        '    device = "cuda"\n',
    ),
    ("tensor", "x = torch.ones(1, device=device) * rank\n"),
    ("before_collective", ""),
    ("collective", "dist.all_reduce(x)\n"),
    ("report", 'print(f"Rank {{rank}}: {{x.item()}}", flush=True)\n'),
    ("shutdown", "dist.destroy_process_group()\n"),
    ("after_shutdown", ""),
)
INJECTION_POINTS = tuple(name for name, _ in SEED_BLOCKS)


@dataclasses.dataclass(frozen=True)
class CodePatch:
    """One change to the seed program at a named injection point."""

    point: str
    replace: str | None = None  # new text of the block; None keeps it
    before: str = ""  # lines inserted before the block
    after: str = ""  # lines inserted after the block

    def __post_init__(self) -> None:
        if self.point not in INJECTION_POINTS:
            raise ValueError(f"unknown injection point {self.point!r}")


def render_program(backend: str, timeout_s: float, patches: tuple[CodePatch, ...] = ()) -> str:
    """The program text for a backend and timeout, with `patches` applied in order."""
    blocks = {name: text for name, text in SEED_BLOCKS}
    for patch in patches:
        text = blocks[patch.point] if patch.replace is None else patch.replace
        blocks[patch.point] = patch.before + text + patch.after
    timeout_text = int(timeout_s) if float(timeout_s).is_integer() else timeout_s
    source = "".join(blocks[name] for name in INJECTION_POINTS)
    return source.format(backend=backend, timeout_s=timeout_text)


def program_diff(healthy: str, broken: str) -> str:
    """A unified diff from the healthy program to the broken one ('' when equal)."""
    return "".join(
        difflib.unified_diff(
            healthy.splitlines(keepends=True),
            broken.splitlines(keepends=True),
            fromfile=f"healthy/{PROGRAM_NAME}",
            tofile=f"broken/{PROGRAM_NAME}",
        )
    )
