"""The cause catalog: what goes wrong in distributed startup and collectives, and what to do.

Scenarios name their cause from here; drills, scoring, runbooks and diagnose share it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Cause:
    id: str
    title: str
    what: str  # what it is
    confirm: str  # how to confirm it, and tell it from look-alikes
    fix: str
    prevent: str


CAUSES: tuple[Cause, ...] = (
    Cause(
        id="healthy",
        title="Nothing is wrong",
        what="Every rank joins, the all_reduce gives N(N-1)/2 on every rank, every process exits 0.",
        confirm="Each rank prints the same, correct value; no warnings beyond the launcher's banner.",
        fix="Nothing to fix.",
        prevent="Keep this run as the baseline you compare failures with.",
    ),
    Cause(
        id="wrong-master-port",
        title="A node or rank dials the wrong MASTER_PORT",
        what=(
            "The rendezvous store listens on node 0's MASTER_PORT. A node launched with another "
            "--master_port (or a rank whose environment carries another MASTER_PORT) connects to a "
            "port nobody listens on, retries until its timeout, and never joins; everyone else waits."
        ),
        confirm=(
            "The store's wait timeout names the keys of the ranks that never arrived; node 0's "
            "launcher reports how many clients joined. Compare the port in the culprit's "
            "'trying to connect to (host, port)' with the port node 0 listens on."
        ),
        fix="Launch every node with the same --master_port (and MASTER_ADDR) as node 0.",
        prevent="Derive MASTER_PORT once, in the job template, and pass it to every node; never per node.",
    ),
    Cause(
        id="port-in-use",
        title="MASTER_PORT is already taken on the master",
        what=(
            "Another process (a stale run, another job) already listens on MASTER_PORT, so node 0 "
            "cannot start the rendezvous store."
        ),
        confirm="'address already in use' (EADDRINUSE) from the store server on node 0; `ss -ltnp` shows the holder.",
        fix="Stop the stale process, or pick a free MASTER_PORT for the job.",
        prevent="Clean up after failed jobs (destroy_process_group, kill the tree); allocate ports per job.",
    ),
    Cause(
        id="missing-set-device",
        title="torch.cuda.set_device(local_rank) is missing",
        what=(
            "Without set_device every rank on a node uses cuda:0. NCCL refuses a communicator with "
            "two ranks on one GPU."
        ),
        confirm="NCCL 'Duplicate GPU detected : rank 0 and rank 1 both on CUDA device ...' on every rank of the node.",
        fix="Call torch.cuda.set_device(local_rank) right after init_process_group, before any CUDA work.",
        prevent="Use LOCAL_RANK (not RANK) for the device, in one helper every script shares.",
    ),
    Cause(
        id="rank-as-device-id",
        title="The global rank is used as the CUDA device id",
        what=(
            "set_device(rank) works on node 0 but on node 1 asks for device 'rank', which does "
            "not exist there: each node only has local_rank devices."
        ),
        confirm="'CUDA error: invalid device ordinal' on the first rank of node 1; node 0's ranks are victims.",
        fix="Use torch.cuda.set_device(local_rank) (int(os.environ['LOCAL_RANK'])).",
        prevent="Test on 2 nodes before scaling; on one node rank == local_rank hides the bug.",
    ),
    Cause(
        id="missing-destroy-process-group",
        title="destroy_process_group() is never called",
        what=(
            "The process group outlives its use: a second init_process_group in the same process "
            "fails, and NCCL warns at exit that resources may leak."
        ),
        confirm="'trying to initialize the default process group twice!' or the ProcessGroupNCCL exit warning.",
        fix="Call dist.destroy_process_group() when the distributed part ends (also on error paths).",
        prevent="Wrap setup/teardown in a context manager or try/finally.",
    ),
    Cause(
        id="wrong-socket-interface",
        title="GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME names a missing interface, or the wrong one is picked",
        what=(
            "The backend is told to use a network interface the host does not have, or, left to choose, "
            "picks one the other hosts cannot reach (loopback, docker0, a link-local address)."
        ),
        confirm=(
            "gloo 'Unable to find address for: <ifname>' (NCCL: no socket interface found) on the misconfigured "
            "node; or peers dialing a 127.x / 169.254.x / docker address in connect errors."
        ),
        fix="Set the variable to an interface that exists on every node and reaches the others (`ip -br addr`).",
        prevent="Set interface names per cluster in one place; check them in a preflight run.",
    ),
    Cause(
        id="world-size-mismatch",
        title="Nodes disagree on the size of the job",
        what=(
            "One node is launched with a different --nnodes or --nproc_per_node, so the launchers "
            "disagree on WORLD_SIZE and on who is in the job."
        ),
        confirm="Compare WORLD_SIZE / --nnodes / --nproc_per_node across nodes' launch lines; store timeouts wait for ranks that will never exist.",
        fix="Launch every node with identical --nnodes and --nproc_per_node.",
        prevent="Generate the launch command for all nodes from one template.",
    ),
    Cause(
        id="duplicate-node-rank",
        title="Two nodes launched with the same --node_rank",
        what="Two launchers claim the same node rank, so two workers claim each global rank and one rank range is missing.",
        confirm="Two processes print the same RANK; the store waits for the ranks of the missing node rank.",
        fix="Give each node a distinct --node_rank from 0 to nnodes-1.",
        prevent="Take the node rank from the scheduler (SLURM_NODEID, the pod index), never by hand.",
    ),
    Cause(
        id="rank-crash",
        title="One rank dies before the collective",
        what=(
            "A rank raises or is killed (OOM killer, a bad sample) before all_reduce; the others "
            "are torn down by the launcher or time out waiting for it."
        ),
        confirm="The earliest failure in time with its own error (a traceback, or exit by signal -9); the rest show teardown or timeouts.",
        fix="Fix the culprit's error (its own traceback), not the timeouts of the others.",
        prevent="Validate data and memory on one rank first; monitor dmesg for the OOM killer.",
    ),
    Cause(
        id="straggler-rank",
        title="One rank arrives far later than the others",
        what=(
            "A rank does slow extra work (preprocessing, validation, a checkpoint on rank 0) while "
            "the others already wait at the rendezvous or in a collective, past the timeout."
        ),
        confirm="Phase timings: the culprit enters init or all_reduce long after the others; the others' errors are timeouts.",
        fix="Move the slow work out of the collective path, do it on every rank, or raise the timeout deliberately.",
        prevent="Keep rank-0-only work short or outside the training loop; measure per-rank step times.",
    ),
    Cause(
        id="frozen-rank",
        title="One rank is frozen: alive, silent, and holding every collective",
        what=(
            "A rank's process stops running without dying: stopped by a signal (SIGSTOP, a debugger, "
            "a suspended container), stuck in uninterruptible I/O, or swapped out. It prints nothing "
            "and never errors; every other rank waits in the next collective until its timeout."
        ),
        confirm=(
            "The Flight Recorder: every other rank is inside the same collective and the frozen rank "
            "cannot even dump (no dump, state T or D in /proc/<pid>/stat); its last log line is old."
        ),
        fix="Find what stopped it (kill -CONT, the debugger, the node's dmesg), then restart the job from a checkpoint.",
        prevent="Watch per-rank heartbeats; dump the Flight Recorder on timeout so a silent rank stands out.",
    ),
    Cause(
        id="no-launcher",
        title="The script was started with plain python, not torchrun",
        what="Without a launcher, RANK, WORLD_SIZE, MASTER_ADDR and LOCAL_RANK are not set.",
        confirm="'environment variable RANK expected, but not set' from init_process_group's env:// rendezvous.",
        fix="Start it with torchrun --nnodes ... --nproc_per_node ... (or set the variables yourself).",
        prevent="Ship a launch script with the training script; fail early if LOCAL_RANK is missing.",
    ),
    Cause(
        id="too-few-gpus",
        title="More ranks per node than the node has GPUs",
        what="--nproc_per_node exceeds the visible GPUs, so a local rank asks for a device that does not exist.",
        confirm="'invalid device ordinal' on the highest local ranks of every node; check CUDA_VISIBLE_DEVICES and nvidia-smi.",
        fix="Set --nproc_per_node to the number of visible GPUs.",
        prevent="Derive nproc_per_node from torch.cuda.device_count() in the launch script.",
    ),
    Cause(
        id="collective-mismatch",
        title="Ranks call different collectives, or different shapes",
        what=(
            "One rank skips the all_reduce or passes a tensor of another shape; the collective "
            "never matches up and hangs until the timeout, or fails with a size error."
        ),
        confirm="TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch; otherwise timeouts in the collective on the others.",
        fix="Make every rank call the same collectives in the same order with the same shapes.",
        prevent="Avoid rank-dependent control flow around collectives; run with DETAIL in CI.",
    ),
    Cause(
        id="wrong-reduce-op",
        title="A wrong reduce op gives a silently wrong result",
        what="The job runs and exits 0 on every rank, but the reduced value is not the sum it should be.",
        confirm="Only a comparison with the expected value shows it: every rank's value differs from N(N-1)/2.",
        fix="Use ReduceOp.SUM (then divide by the world size if you want a mean).",
        prevent="Unit-test collectives against a known answer; assert on the healthy baseline.",
    ),
    Cause(
        id="wrong-master-addr",
        title="A node dials a MASTER_ADDR where no host answers",
        what="One node is launched with a wrong --master_addr (a stale IP, another cluster's head node) and never reaches the store.",
        confirm="Node 0 reports 'N/M clients joined'; the culprit's launcher times out connecting to an address that is not node 0's. `ping`/`ip route get` from the culprit.",
        fix="Launch every node with node 0's address as --master_addr.",
        prevent="Take MASTER_ADDR from the scheduler (the first host of the allocation), never from a config file.",
    ),
    Cause(
        id="shared-master-port",
        title="Two jobs use the same MASTER_ADDR:MASTER_PORT",
        what=(
            "Two live jobs (a sweep's siblings, two teams' jobs packed on the same nodes, both on torchrun's "
            "default port 29500) name the same store. The job that starts second cannot bind the port on the "
            "shared head node (EADDRINUSE), but its other nodes reach the first job's store and are answered: "
            "without --rdzv_id both jobs run under torchrun's default id and share every key, so those nodes "
            "take the first job's rank assignment and their ranks join its world as duplicates of its ranks; "
            "with an own --rdzv_id they wait there for a rank assignment that never comes."
        ),
        confirm=(
            "EADDRINUSE from the store host while another node of the same job got through rendezvous (its ranks "
            "passed init_process_group, then lost a peer at the head node's address), or waited for "
            "'.../torchelastic/assigned_ranks/N'; `ss -ltnp 'sport = :PORT'` on the head node names the other "
            "job's torchrun, alive and well, not a stale process."
        ),
        fix=(
            "Do not kill the holder: it is a healthy job. Relaunch with a port of its own "
            "(--master_port derived from the job id) and --rdzv_id=$JOB_ID."
        ),
        prevent=(
            "Derive MASTER_PORT from the scheduler's job id (e.g. 29500 + SLURM_JOB_ID % 1000, or --standalone on "
            "one node) and always pass --rdzv_id=$JOB_ID, so two jobs never share a store's keys."
        ),
    ),
    Cause(
        id="split-world",
        title="The job splits into several worlds, each with its own master",
        what=(
            "Nodes disagree on who the master is: a launch script that falls back to MASTER_ADDR=localhost "
            "(or $(hostname) evaluated on every node) and a node rank that defaults to 0. Each such node hosts "
            "a store of its own and waits there for the others, who are waiting at theirs: a hang at startup "
            "in which no worker ever starts."
        ),
        confirm=(
            "'Timed out after N seconds waiting for clients. 1/M clients joined.' on several nodes at once: "
            "only the store host prints that line, so two of them mean two stores. Compare each node's "
            "--master_addr and --node_rank (the launcher's command line or its environment)."
        ),
        fix="Launch every node with the first host of the allocation as --master_addr and its own --node_rank.",
        prevent=(
            "Derive MASTER_ADDR once, from the scheduler's host list (the first host of SLURM_JOB_NODELIST), "
            "never from localhost or the node's own host name; fail the launch script when it is unset."
        ),
    ),
    Cause(
        id="late-store-host",
        title="The store host (node 0) starts after the other nodes",
        what=(
            "With static rendezvous node 0's launcher hosts the TCPStore. When node 0 comes up late (slow "
            "boot, image pull, a scheduler that starts nodes one by one), every other node dials a port "
            "nobody listens on yet and retries. Within the rendezvous timeout the job only starts late; past "
            "it, every other node fails, and node 0, arriving last, waits alone for clients that gave up."
        ),
        confirm=(
            "The other nodes' launchers log connection refused / 'retrying' or time out connecting to node 0's "
            "address (the right address and port); node 0's launcher log starts seconds after theirs and ends "
            "with 'waiting for clients. 1/N clients joined'. Compare the launchers' start times."
        ),
        fix="Start the store host first (or all nodes together), or raise the rendezvous timeout above the start skew.",
        prevent=(
            "Launch all nodes through one scheduler step (srun, a JobSet) so they start together; budget the "
            "rendezvous timeout for the slowest node's start, image pull included."
        ),
    ),
    Cause(
        id="store-host-lost",
        title="The store host vanishes mid-job",
        what=(
            "Node 0 hosts the TCPStore for the whole job. When that host dies (power, preemption, OOM of the "
            "agent), the store goes with it: every other rank loses its peers on node 0 in the next collective "
            "and the store behind it. Their errors are loud, but they are victims; the culprit is the node "
            "that went silent."
        ),
        confirm=(
            "Every surviving rank fails at once with a connection closed/reset by peer (gloo) or a store "
            "error; node 0's ranks and launcher leave no error of their own, only an end (SIGKILL, or nothing "
            "at all). Check node 0's host: uptime, the kernel log, the scheduler's node events."
        ),
        fix="Bring the node back or replace it and restart from the last checkpoint; the other ranks were fine.",
        prevent=(
            "Checkpoint often; run elastic (torchrun --max-restarts with a c10d rendezvous whose store is "
            "not on a preemptible node); watch the store host's health, it is a single point of failure."
        ),
    ),
    Cause(
        id="listen-backlog-overflow",
        title="More ranks connect at once than the store's listen backlog holds",
        what=(
            "Every rank's first act is a TCP connect to the store host. The kernel queues connections the "
            "store has not accepted yet up to the listen backlog (net.core.somaxconn caps it); past that, "
            "connections are dropped or reset. Ranks retry, so the job usually starts, seconds late; with "
            "thousands of ranks and short timeouts, some fail."
        ),
        confirm=(
            "Ranks log 'TCP client failed to connect/validate to host ... - retrying ...: Connection reset by "
            "peer' and join about a second late; `sysctl net.core.somaxconn` on the store host is smaller than "
            "the ranks that start together; `nstat -az TcpExtListenOverflows` counts drops. With "
            "TORCH_CPP_LOG_LEVEL=INFO the store warns 'Starting store with N workers but somaxconn is M'."
        ),
        fix="Raise net.core.somaxconn on the store host above the job's rank count, or stagger the ranks' start.",
        prevent=(
            "Set somaxconn in the node image (4096 is the default since Linux 5.4; older kernels had 128); "
            "start large jobs in waves; measure your own knee with `faultlab storm`."
        ),
    ),
    Cause(
        id="store-backend-unavailable",
        title="The TCPStore backend asked for is not in this torch build",
        what=(
            "Since torch 2.4 the TCPStore server runs on libuv by default; a torch built without libuv (some "
            "Windows and custom builds) fails to create the store unless told to use the legacy one."
        ),
        confirm="'use_libuv was requested but PyTorch was built without libuv support' from the store host.",
        fix="Set USE_LIBUV=0 (env:// and tcp:// rendezvous) or pass use_libuv=False to TCPStore; or install a build with libuv.",
        prevent="Pin the torch build per cluster and run a one-node preflight (`faultlab run healthy`) after each upgrade.",
    ),
    Cause(
        id="firewall",
        title="A firewall blocks the store's port or the data plane",
        what=(
            "Packets between nodes are dropped (silent: connects time out) or rejected (refused at once). "
            "With MASTER_PORT open but other ports blocked, rendezvous succeeds and the backend's own "
            "connections fail."
        ),
        confirm="From the blocked side, a connect that times out (DROP) or is refused (REJECT); `nft list ruleset` / `iptables -S` on the hosts; the store works but gloo/NCCL connects fail.",
        fix="Open MASTER_PORT and the backend's port range between all nodes of the job.",
        prevent="Run a two-node preflight of every new node pool; pin NCCL/gloo port ranges and open them.",
    ),
    Cause(
        id="link-down",
        title="A node's network link goes down during the job",
        what="After the job started, one node loses its link: its peers wait in a collective until the timeout.",
        confirm="The ranks of one node fail together after a period of silence; `ip link` on that node shows the link down; the kernel log shows the carrier loss.",
        fix="Restore the link (or drain the node) and restart from the last checkpoint.",
        prevent="Monitor link state and error counters; keep checkpoints frequent enough to lose little.",
    ),
    Cause(
        id="shm-exhausted",
        title="/dev/shm is too small or not writable (NCCL, DataLoader workers)",
        what=(
            "NCCL moves data between GPUs of one host through shared-memory segments in /dev/shm. "
            "Containers get 64 MB of /dev/shm by default, which NCCL outgrows as soon as it builds "
            "its rings; the communicator fails at init or at the first collective. DataLoader workers "
            "pass batches through /dev/shm too, and die of a bus error when it is full."
        ),
        confirm=(
            "NCCL WARN 'Error while creating shared memory segment /dev/shm/nccl-...' or 'posix_fallocate "
            "failed: No space left on device' (NCCL_DEBUG=WARN), or 'DataLoader worker ... killed by signal: Bus "
            "error'; `df -h /dev/shm` inside the container."
        ),
        fix="Give the container more shared memory (docker --shm-size=8g, or --ipc=host; an emptyDir of medium Memory on Kubernetes).",
        prevent="Set the shm size in the job template of every GPU container; check it in a preflight.",
    ),
    Cause(
        id="nccl-without-gpu",
        title="The nccl backend on a host without GPUs",
        what="NCCL needs CUDA devices; on a CPU-only host (or a torch built without CUDA) init fails.",
        confirm="'Distributed package doesn't have NCCL built in' or no CUDA GPUs are available.",
        fix="Use the gloo backend on CPU, or run on a host with GPUs and a CUDA build of torch.",
        prevent="Choose the backend from torch.cuda.is_available() in one place.",
    ),
)

CAUSES_BY_ID = {cause.id: cause for cause in CAUSES}
