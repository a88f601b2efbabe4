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
grads = torch.ones(1, device=device)
dist.all_reduce(grads)  # training step 1
if rank == 0:
    val_loss = torch.ones(1, device=device)  # validation, only on this rank
    dist.all_reduce(val_loss)
dist.all_reduce(x)
print(f"Rank {rank}: {x.item()}", flush=True)
dist.destroy_process_group()
