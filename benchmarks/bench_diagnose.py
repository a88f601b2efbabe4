"""diagnose throughput and memory, side by side for growing inputs of real log text.

    python benchmarks/bench_diagnose.py [--sizes 50,100,200] [--files 2000]   (MB)

The text is real torch output (the stderr of faultlab's own runs and NCCL's reference
lines), repeated to each size. Each size is read by a fresh process; the table shows MB/s
and the peak memory of its largest process (flat memory: the same for every size). The goal is
>= 200 MB/s on the 2-core machine this project is built on. Then the largest size is split
into --files per-rank files, as a job of that many ranks leaves them, and read by one
process and by diagnose's default (a process per core), side by side.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLE = """\
[W1202 16:37:43.887555352 socket.cpp:469] [c10d] waitForInput: poll for socket SocketImpl(fd=28, addr=[::ffff:127.0.0.1]:50842, remote=[::ffff:127.0.0.1]:47219) returned 0, likely a timeout
Traceback (most recent call last):
  File "train.py", line 11, in <module>
  File "/usr/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83, in wrapper
    return func(*args, **kwargs)
frame #3: <unknown function> + 0x163b752 (0x7fab6183b752 in /usr/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so)
I1202 16:37:43.000000 1234 torch/distributed/elastic/agent/server/api.py:525] [default] Starting worker group
step 1200 loss 2.3141 lr 0.000300 tokens/s 181234
step 1201 loss 2.3129 lr 0.000300 tokens/s 181540
"""
ERRORS = (
    "[rank3]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/3\n"
    "[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60\n"
)

WATCHDOG = ("[rank{rank}]:[E1206 18:44:12.{usec:06d}346 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=466119168, "
            "NumelOut=466119168, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n")

PROGRESS = "Epoch {epoch}: {percent:3d}%|{bar:<10}| {step}/100000 [01:02<03:04, 44.10it/s, loss={loss}, v_num=0]\n"

MEASURE = """
import json, resource, sys, time
from pathlib import Path
from faultlab import diagnose
start = time.perf_counter()
found = diagnose.diagnose([Path(sys.argv[1])], workers=int(sys.argv[2]) or None)
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the (large) benchmark process.
own_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "bytes": found.bytes, "culprits": found.culprits,
                  "peak_kb": max(own_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss),
                  "top": found.causes[0].cause if found.causes else None}))
"""


def measure(path: Path, workers: int = 0) -> dict:
    """diagnose on `path` in a fresh process; workers 0: diagnose's default (a process per core)."""
    return json.loads(subprocess.run([sys.executable, "-c", MEASURE, str(path), str(workers)], capture_output=True,
                                     text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="50,100,200", help="input sizes in MB")
    parser.add_argument("--files", type=int, default=2000, help="per-rank files the largest size is split into")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faultlab-bench-") as work:
        block = (SAMPLE * 2000).encode()
        print(f"{'MB':>6} {'MB/s':>8} {'peak MB':>8}  top cause")
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(work) / f"job-{size}.log"
            with open(path, "wb") as out:
                written = 0
                while written < size << 20:
                    out.write(block)
                    written += len(block)
                out.write(ERRORS.encode())
            result = measure(path)
            megabytes = result["bytes"] / 1e6
            print(f"{megabytes:6.0f} {megabytes / result['seconds']:8.0f} {result['peak_kb'] / 1024:8.0f}  {result['top']}")
            path.unlink()
        # One error repeated on every line (an NCCL watchdog flooding the log): every line is a hit.
        flood = Path(work) / "flood.log"
        with open(flood, "wb") as out:
            line = ERRORS.splitlines()[0].encode() + b"\n"
            out.write(line * ((size << 20) // len(line)))
        result = measure(flood)
        megabytes = result["bytes"] / 1e6
        print(f"{megabytes:6.0f} {megabytes / result['seconds']:8.0f} {result['peak_kb'] / 1024:8.0f}  {result['top']}"
              "  (one error on every line)")
        # The same flood as real logs write it: every line differs (timestamp, rank, sequence number).
        with open(flood, "wb") as out:
            written, number = 0, 0
            while written < size << 20:
                lines = "".join(WATCHDOG.format(rank=n % 512, usec=n % 1000000, seq=1580 + n // 512)
                                for n in range(number, number + 10000)).encode()
                out.write(lines)
                written, number = written + len(lines), number + 10000
        result = measure(flood)
        megabytes = result["bytes"] / 1e6
        print(f"{megabytes:6.0f} {megabytes / result['seconds']:8.0f} {result['peak_kb'] / 1024:8.0f}  {result['top']}"
              "  (an error on every line, every line different)")
        # A training log as scripts write it: their progress (an epoch, a progress bar) on every line, every line
        # different: no failure, and no fact past the first bar.
        with open(flood, "wb") as out:
            written, number = 0, 0
            while written < size << 20:
                lines = "".join(PROGRESS.format(epoch=n // 100000, percent=n % 101, bar="#" * (n % 101 // 10),
                                                step=n % 100000, loss=n % 997) for n in range(number, number + 10000))
                out.write(lines.encode())
                written, number = written + len(lines), number + 10000
        result = measure(flood)
        megabytes = result["bytes"] / 1e6
        print(f"{megabytes:6.0f} {megabytes / result['seconds']:8.0f} {result['peak_kb'] / 1024:8.0f}  {result['top']}"
              "  (a training script's progress on every line)")
        # One huge line, a literal every few bytes (a stranger's file): the time grows with its length, not its square.
        seconds = {}
        for megabytes in (4, 16):
            flood.write_bytes(b"[rank0] epoch Error %| " * ((megabytes << 20) // 23) + b"\n")
            seconds[megabytes] = measure(flood)["seconds"]
        print(f"one line of 4 MB, then of 16 MB, a literal every few bytes: {seconds[16] / seconds[4]:.1f} times "
              "as long (4: linear)")
        flood.unlink()
        ranks = Path(work) / "ranks"
        ranks.mkdir()
        per_file = block[: (size << 20) // args.files]
        per_file = per_file[: per_file.rfind(b"\n") + 1]
        for rank in range(args.files):
            # rank 7 fails on its own; every other rank waits for it
            tail = ERRORS.splitlines()[1].replace("[rank1]", "[rank7]") if rank == 7 else ERRORS.splitlines()[0].replace(
                "[rank3]", f"[rank{rank}]")
            (ranks / f"rank{rank}.log").write_bytes(per_file + tail.encode() + b"\n")
        serial, parallel = measure(ranks, workers=1), measure(ranks)
        megabytes = serial["bytes"] / 1e6
        print(f"\n{args.files} per-rank files, {megabytes:.0f} MB: one process {megabytes / serial['seconds']:.0f} MB/s, "
              f"a process per core {megabytes / parallel['seconds']:.0f} MB/s (speed-up {serial['seconds'] / parallel['seconds']:.2f}); "
              f"culprits {parallel['culprits']}")


if __name__ == "__main__":
    main()
