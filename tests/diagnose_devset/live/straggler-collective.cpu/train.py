import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

BACKEND = 'gloo'
TIMEOUT = timedelta(seconds=5)

dist.init_process_group(BACKEND, timeout=TIMEOUT)
rank = dist.get_rank()
local_rank = int(os.environ["LOCAL_RANK"])
device = "cpu"
if BACKEND == "nccl":
    torch.cuda.set_device(local_rank)
    device = "cuda"
x = torch.ones(1, device=device) * rank
if rank == 0:
    time.sleep(8.0)  # validation pass that only this rank does
dist.all_reduce(x)
print(f"Rank {rank}: {x.item()}", flush=True)
dist.destroy_process_group()
