"""A real gloo job for the Flight Recorder tests: every rank all_reduces once; then MODE decides.

skip: the last rank never joins the second all_reduce (it dumps from a thread, then sleeps);
swap: rank 1 broadcasts where the others all_reduce. Each rank dumps its recorder to
<FR_OUT>/nccl_trace_rank_<rank> when its second collective ends or raises.
"""

import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def dump() -> None:
    data = torch._C._distributed_c10d._dump_fr_trace(includeStackTraces=False)
    path = os.path.join(os.environ["FR_OUT"], f"nccl_trace_rank_{os.environ['RANK']}")
    with open(path + ".tmp", "wb") as file:
        file.write(data)
    os.replace(path + ".tmp", path)


dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ["FR_TIMEOUT_S"])))
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.ones(4) * rank
dist.all_reduce(x)
mode = os.environ["FR_MODE"]
if mode == "skip" and rank == world - 1:
    threading.Timer(0.5, dump).start()
    time.sleep(60)
    sys.exit(0)
try:
    if mode == "swap" and rank == 1:
        dist.broadcast(x, 0)
    else:
        dist.all_reduce(x)
finally:
    dump()
