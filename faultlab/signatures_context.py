"""The signatures of what people run on a hang (py-spy's stacks, torch's Flight Recorder analyzer) and of
context lines: lines that carry facts (device counts, interfaces, exit codes, progress) for diagnose's
rules rather than a cause of their own.

What a signature is: signatures.py.
"""

from __future__ import annotations

from .flight_recorder.report import EXPECTED_RANKS, MISSING_RANKS, NO_DUMP_RANKS
from .signatures import Signature

S = Signature
# A script's own line of a rank's tensor at a collective ("Rank 3 tensor before allreduce: torch.Size([8])"): its
# rank as a label, the collective's name, the shape. Not all_to_all: its sizes differ across ranks by design.
SCRIPT_TENSOR_SHAPE_AT_COLLECTIVE = (r"(?:^|[\[(:|\]#]\s*)rank\W{0,3}(\d{1,6})\b.{0,120}?"
                                     r"\b(all_?reduce\w{0,16}|all_?gather\w{0,16}|reduce_?scatter\w{0,16}"
                                     r"|broadcast)\b.{0,80}?torch\.Size\(\[([\d, ]{0,80})\]\)")
# init's store barrier: its world size, and the ranks that reached it (torch <= 1.13's words, then torch 2's)
BARRIER_COUNT_WORDS = r"world_size=(\d+), (?:worker_count|num_workers_joined)=(\d+)"
CONTEXT: tuple[Signature, ...] = (
    # py-spy's dumps of hung ranks: read as stacks (a thread's header, then its frames, innermost first),
    # so the one main thread that waits outside every collective stands out (log_stacks.read_stacks).
    S("stack-idle-main-thread", "py-spy's dump of an idle main thread",
      r'^\s*Thread (?:0x)?[0-9A-Fa-f]+ \(idle\): "MainThread"', "neutral",
      "A py-spy dump: someone looked into a hang. A main thread that is idle outside every collective (waiting "
      "for its data, a lock, a queue) while the others wait in one is the rank that holds them all.", (),
      literals=(' (idle): "MainThread"',), suggests=("frozen-rank", "straggler-rank"), family="stacks",
      specificity=0.2, keep=256),
    S("stack-in-collective", "A py-spy frame inside a collective",
      r"^\s*\w+ \((?:\S*/)?distributed_c10d\.py:\d+\)", "neutral",
      "The thread above it is inside a torch.distributed call; stacks that wait in different collectives "
      "took different paths.", (), literals=("distributed_c10d.py:",), family="stacks", keep=256),
    # torch's Flight Recorder analyzer (python -m torch.distributed.flight_recorder.fr_trace, torchfrtrace) on
    # the ranks' dumps, its report pasted: older versions say "collective 5 at entry 4", newer "sequence number: 5".
    S("fr-trace-mismatch", "torch's Flight Recorder analyzer found ranks calling a collective differently",
      r"Error type: (?:COLLECTIVE_TYPE|SIZE_OR_SYNTAX|COLLECTIVE_DTYPE)_MISMATCH"
      r"|Input/output mismatch in the collective sequence number", "neutral",
      "Compared across the ranks' dumps, one collective differs in its type, its sizes or its dtype: the ranks "
      "called different collectives at the same point (the culprit rank is named).", (),
      literals=("_MISMATCH", "Input/output mismatch in the collective"), suggests=("collective-mismatch",),
      family="flight-recorder-report", specificity=0.9, keep=12),
    S("fr-trace-missing-ranks", "torch's Flight Recorder analyzer found ranks that never joined a collective",
      r"Not all ranks joining collective|" + MISSING_RANKS, "neutral",
      "Compared across the ranks' dumps, the ranks named never issued a collective the others issued: they "
      "called something else (a collective more or fewer), or are behind (slow, or stuck outside any "
      "collective).", (),
      literals=("Not all ranks joining collective", "missing ranks: {"),
      suggests=("collective-mismatch", "straggler-rank", "frozen-rank"), family="flight-recorder-report",
      specificity=0.75, keep=24),  # two lines an entry; the analyzer reports up to 10 entries by default
    S("fr-trace-missing-dumps", "torch's Flight Recorder analyzer had no dump from some ranks",
      NO_DUMP_RANKS, "neutral",
      "The ranks named left no Flight Recorder dump while the others did: they died, or hung too hard to write "
      "one (a main thread stuck outside torch, where the dump on timeout never fires).", (),
      literals=("missed FR dumps from ranks",), suggests=("frozen-rank", "rank-crash", "straggler-rank"),
      family="flight-recorder-report", specificity=0.6, keep=12),
    S("ctx-fr-expected-ranks", "The ranks of a collective's group, as torch's Flight Recorder analyzer lists them",
      r"\b" + EXPECTED_RANKS, "neutral",
      "Beside the ranks missing from a collective: where all but one are missing, that one called it alone.", (),
      literals=("expected ranks: {",), effect="context", keep=12),
    # -- context: lines that carry facts for diagnose's rules, no cause of their own ----------------
    S("ctx-worker-exit", "A worker's exit code as the launcher saw it",
      r"failed \(exitcode: -?\d+\) local_rank: \d+|exitcode\s*:\s*-?\d+ \(pid|rank\s*:\s*\d+ \(local_rank: \d+\)",
      "neutral", "Exit code, local rank and pid of the worker that failed first.", (),
      literals=("failed (exitcode:", "(local_rank:", "exitcode  :"), effect="context", keep=16),
    S("ctx-set-device", "The call that picks this process's GPU", r"set_device\(", "neutral",
      "Which variable chooses the device: rank, local_rank, or something else.", (), literals=("set_device(",),
      effect="context"),
    S("ctx-devices", "Device counts and indices",
      r"[Dd]evice [Cc]ount:? ?\d+|device_count\(\)\s*[=:]\s*\d+|CUDA_VISIBLE_DEVICES(?:=\S+|: \[)|VISIBLE GPUS: \d|cuda:\d+"
      r"|type='cuda', index=\d+|[Ss]et(?:ting)? device to \d+|cudaDev \d+", "neutral",
      "How many devices a process sees, and which index it asked for.", (),
      literals=("evice Count", "evice count", "device_count()", "CUDA_VISIBLE_DEVICES", "VISIBLE GPUS: ", "cuda:",
                "type='cuda', index=",
                "device to ", "cudaDev "), effect="context"),
    S("ctx-topology", "Node, process and world counts",
      r"--nnodes[= ]\d+|--nproc[_-]per[_-]node[= ]\d+|\bnnodes[=: ]+\d+|\bnranks \d+|WORLD_SIZE=\d+"
      r"|world_size=\d+|\bsize=\d+\)|Num processes: \d+|num_nodes[= ]\d+|Running on the following workers: "
      r"|Multi-processing is handled by Slurm"
      r"|Starting with \d+ processes|num_local_procs=\d+",  # Lightning's count of processes, DeepSpeed's
      "neutral", "How many nodes and ranks the job has.", (),
      literals=("nnodes", "nproc_per_node", "nproc-per-node", "nranks ", "WORLD_SIZE=", "world_size=", ", size=", "Num processes: ", "num_nodes",
                "Running on the following workers: ", "Multi-processing is handled by Slurm", "Starting with ",
                "num_local_procs="),
      effect="context"),
    S("ctx-workers-restarted", "torchrun restarted its workers",
      r"(?:attempts left|new nodes from group_rank=\d+); will restart worker group", "neutral",
      "The elastic agent started its workers again (after a failure, or as nodes joined): each announces its rank "
      "once more.", (),
      literals=("will restart worker group",), effect="context", keep=1),
    # Its own signature: a log full of topology lines would leave it past ctx-topology's lines kept.
    S("ctx-one-process-launcher", "accelerate's launcher of a job of one process", r", in simple_launcher\b",
      "neutral", "accelerate launched one process (its simple launcher, in the launcher's traceback): whatever "
      "killed it, no rank of a distributed job died.", (), literals=("in simple_launcher",), effect="context",
      keep=1),
    # Backslashed paths: Windows, where torch >= 2.4 builds lack libuv, the default store backend torchrun's
    # agent creates before any worker starts.
    S("ctx-windows-launcher-frame", "A frame of torchrun's (or accelerate's) own launch code, on Windows",
      r'File "[^"]*\\(?:torch\\distributed\\(?:run|launcher\\api)\.py|torchrun\.exe\\__main__\.py'
      r'|accelerate\\commands\\launch\.py)", line \d+, in ', "neutral",
      "The launcher's own traceback on Windows: when it is the only failure, the launcher failed before its "
      "workers ran, as creating its store does where torch was built without libuv.", (),
      literals=("\\torch\\distributed\\run.py", "\\torch\\distributed\\launcher\\api.py", "\\torchrun.exe\\",
                "\\accelerate\\commands\\launch.py"),
      effect="context", keep=1),
    S("ctx-rank-announced", "A process announces its global rank and the size of the world",
      r"GLOBAL_RANK: \d+, MEMBER: \d+/\d+", "neutral",
      "Lightning's processes each say which member of the world they are: the ranks that never said so never "
      "started.", (), literals=("GLOBAL_RANK: ",), effect="context", keep=64),
    S("ctx-interfaces", "The socket interfaces NCCL chose",
      r"NET/Socket ?: ?Using|Bootstrap ?: ?Using|^\s*\[\d+\](?:br-|veth|docker|virbr|cni|flannel)", "neutral",
      "Which interfaces NCCL will use: docker bridges and veths beside the real NIC are a classic trap.", (),
      literals=("NET/Socket : Using", "Bootstrap : Using", "]br-", "]veth", "]docker", "]virbr", "]cni", "]flannel"),
      effect="context", keep=24),
    S("ctx-shm", "Lines that name /dev/shm or its size", r"/dev/shm|--shm-size|shm_size|--ipc[= ]host", "neutral",
      "A path under /dev/shm or a container's shm size: which file system a full-disk error is about.", (),
      literals=("/dev/shm", "shm-size", "shm_size", "ipc=host", "ipc host"), effect="context"),
    S("ctx-work-progress", "Where each rank's collectives stand",
      r"last enqueued (?:NCCL )?work: \d+, last completed (?:NCCL )?work: \d+", "neutral",
      "The last collective a rank enqueued and completed: ranks that disagree are out of step.", (),
      literals=("last enqueued",), effect="context"),
    S("ctx-progress-bar", "A progress bar (tqdm's, datasets' map)", r"\b\d{1,3}%\|", "neutral",
      "Work going on, as a progress bar shows it: in a hang, whether the main process was still busy (tokenizing, "
      "caching) while the others waited for it.", (), literals=("%|",), effect="context", keep=1),
    S("ctx-rank-progress", "A training script's own progress line, naming its rank and epoch",
      # the rank first, near the line's start, as a label ("[rank0]:", "]:Rank:2", "| Rank 3"), not a value
      # ("median rank 12", "lora rank 8"); the first 256 lines per rank are read
      r"(?i)^.{0,120}?(?:^|[\[(:|\]]\s*)rank\W{0,3}\d{1,6}\b.{0,160}?\bepoch\b\W{0,3}\d",
      "neutral",
      "Where each rank stands in training by its own count: in lockstep training every rank is in the same epoch "
      "at a given step, so ranks whose lines disagree ran different numbers of steps (and so of collectives).", (),
      literals=("poch", "POCH"), prefilter=("rank", "epoch"), effect="context", keep=256),
    S("ctx-rank-tensor-shape", "A script's own line of a rank's tensor shape at a collective",
      r"(?i)^.{0,120}?" + SCRIPT_TENSOR_SHAPE_AT_COLLECTIVE, "neutral",
      "What each rank passes to a collective, as the script prints it: one collective takes tensors of one size "
      "on every rank, so ranks whose sizes differ do not pair up.", (),
      literals=("torch.Size([",), effect="context", keep=256),
    S("ctx-stack-thread", "A thread's header in a py-spy dump",
      r'^\s*Thread (?:0x)?[0-9A-Fa-f]+ \((?:idle|active|active\+gil|gil)\)(?:: "[^"]{0,100}")?\s*$', "neutral",
      "Where one thread's stack begins: its frames follow, innermost first (py-spy leaves out a name it cannot read).",
      (), literals=(" (idle)", " (active)", " (active+gil)", " (gil)"), effect="context", keep=256),
    S("ctx-stack-waiting-frame", "A py-spy frame waiting on a lock, a queue or a data loader",
      r"^\s*\w+ \((?:\S*/)?(?:threading|queue|selectors|multiprocessing/connection|multiprocessing/queues"
      r"|torch/utils/data/dataloader)\.py:\d+\)", "neutral",
      "The thread above it waits in Python for something other than its peers.", (),
      literals=("threading.py:", "queue.py:", "queues.py:", "selectors.py:", "connection.py:", "dataloader.py:"),
      effect="context", keep=256),
    S("ctx-stack-helper-frame", "A py-spy frame of a process that is not a rank",
      r"^\s*(?:join|start_processes|spawn) \(\S*torch/multiprocessing/spawn\.py:\d+\)"
      r"|^\s*_worker_loop \(\S*torch/utils/data/_utils/worker\.py:\d+\)"
      r"|^\s*\w+ \(\S*torch/distributed/elastic/agent/\S*\.py:\d+\)", "neutral",
      "The stack above it is mp.spawn's parent, a DataLoader worker or torchrun's agent: it waits by design.", (),
      literals=("multiprocessing/spawn.py:", "data/_utils/worker.py:", "distributed/elastic/agent/"),
      effect="context", keep=256),
    S("ctx-store-being-created", "A frame of a rank creating its TCPStore client or server",
      r"c10d::TCPStore::(?:TCPStore|waitForWorkers)\(|, in _create_(?:c10d|tcp)_store\b", "neutral",
      "The trace was taken while this process created its store and counted itself in: no collective had run, "
      "so a connection lost there was lost during the store's own handshake.", (),
      literals=("c10d::TCPStore::", "in _create_c10d_store", "in _create_tcp_store"), effect="context", keep=64),
    # Its own signature: a paste wrapped inside the barrier's long line keeps the counts on a line of their own
    S("ctx-barrier-count", "The world size of init's store barrier, and how many ranks reached it",
      BARRIER_COUNT_WORDS, "neutral",
      "How many ranks counted themselves in at the store against the world size: one or two missing is a rank "
      "late or dead; half the world or more is nodes elsewhere; more than the world is another launch's ranks.", (),
      # its waiting lines come every few seconds until the timeout: half an hour of them is kept
      literals=("worker_count=", "num_workers_joined="), effect="context", keep=256),
    S("ctx-nccl-init-complete", "NCCL finished creating a communicator", r"Init COMPLETE", "neutral",
      "The ranks connected: a peer lost after this is lost mid-job, not a bootstrap that never connected.", (),
      literals=("Init COMPLETE",), effect="context", keep=1),
)
