"""The signatures of the job's own setup and its processes.

What a signature is, and the ports and addresses: signatures.py; NCCL's and gloo's transports:
signatures_transport.py; the job's devices and teardown: signatures_devices.py; py-spy's stacks and the context
lines that only carry facts: signatures_context.py.
"""

from __future__ import annotations

from .signatures import Signature

# The variables a launcher (torchrun, srun, mpirun, deepspeed, accelerate) sets for each process.
LAUNCHER_VARIABLES = (r"(?:RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR|MASTER_PORT"
                      r"|SLURM_PROCID|SLURM_LOCALID|SLURM_NTASKS|OMPI_COMM_WORLD_\w+|PMI_RANK|PMI_SIZE|JSM_NAMESPACE_\w+)")

S = Signature
# The host killing a process for memory, as the kernel's OOM killer, a memory cgroup, systemd-oomd, SLURM,
# Kubernetes and Ray word it; out-of-memory's other wordings are a process failing to allocate (log_facts
# tells the two apart by these).
HOST_MEMORY_KILL = (r"Out of memory: Kill(?:ed)? process|oom-kill(?:er)?:|invoked oom-killer|oom[_-]kill events?"
                    r"|: Out Of Memory|\bOOMKilled\b|Memory cgroup out of memory: Kill"
                    r"|Killed process \d+ \(\S+\) total-vm|systemd-oomd\[\d+\]: Killed|exceeded (?:job )?memory limit"
                    r"|ray\.exceptions\.OutOfMemoryError")
JOB: tuple[Signature, ...] = (
    # -- the job's own setup -------------------------------------------------------------------
    S("nccl-not-available", "The nccl backend is not available here",
      r"doesn't have NCCL[\s\"']*built in|NCCL is not available|No CUDA GPUs are available|Found no NVIDIA driver"
      r"|ProcessGroupNCCL is only supported with G|NCCL support is not compiled|not compiled with NCCL support"
      r"|no CUDA-capable device is detected|Unable to proceed, no GPU resources available"
      # Lightning's accelerator check, before any process group
      r"|can not run on your system since the accelerator is not available|GPUs requested but none are available"
      # ROCm's hipified torch and RCCL; Intel's XPUs; accelerate's and detectron2's own checks
      r"|No HIP GPUs are available|no ROCm-capable device is detected|No XPU devices are available"
      r"|Your assigned backend nccl is not ava[il]{2}able|cuda is not available\. Please check your installation",
      "culprit",
      "nccl was requested on a host (or a torch build) without CUDA GPUs.",
      literals=("doesn't have NCCL", "NCCL is not available", "No CUDA GPUs", "no NVIDIA driver",
                "only supported with G", "NCCL support is not compiled", "not compiled with NCCL support",
                "no CUDA-capable device is detected", "no GPU resources available",
                "since the accelerator is not available", "GPUs requested but none are available", "No HIP GPUs",
                "no ROCm-capable device", "No XPU devices", "Your assigned backend nccl is not",
                "cuda is not available. Please check"),
      suggests=("nccl-without-gpu",), family="backend", specificity=0.85),
    S("torch-without-cuda", "This torch was built without CUDA", r"Torch not compiled with CUDA enabled", "culprit",
      "A CPU-only torch build cannot give nccl (or any CUDA work) a GPU; a script meant for one may fail "
      "here for other reasons too.", literals=("not compiled with CUDA",), suggests=("nccl-without-gpu",),
      family="backend", specificity=0.55),
    S("rank-env-missing", "Launcher variables missing (RANK, WORLD_SIZE, ...)",
      r"environment variable [A-Z_]+ expected, but not set|Could not find '[A-Z_]+' in the \w+ environment"
      # torch <= 1.0's env:// wording
      r"|(?:rank|world_size|world size|master_addr|master_port) is not set but it is required for env://"
      r"|KeyError: '(?:RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR|MASTER_PORT"
      r"|SLURM_(?:PROCID|LOCALID|NTASKS|NODEID|JOB_ID)|OMPI_COMM_WORLD_\w+|PMI_RANK|PMI_SIZE|PMIX_RANK)'"
      r"|_env_error\(\"(?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT)\"\)"
      # init_method tcp:// or file://, or a store, without a launcher's rank and world size; get_node_local_rank()
      r"|(?:tcp|file):// rendezvous: (?:rank|world size) parameter missing|world_size must be positive if using store"
      r"|LOCAL_RANK is not in the environment"
      # A KeyError's message alone, where a paste lost the "KeyError: " before it.
      r"|^\s*'(?:RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR|MASTER_PORT)'\s*$"
      # mmengine, composer, Lightning's LSF environment, accelerate
      r"|[Ee]nvironment variable `?" + LAUNCHER_VARIABLES + r"`? (?:is not set|not found)"
      r"|`" + LAUNCHER_VARIABLES + r"` env was not set"
      # Megatron-Core's and torchtitan's own checks
      # (not torch-neuronx's warning that it defaults the variable and goes on)
      r"|\b" + LAUNCHER_VARIABLES + r" (?:environment variable not set(?!, (?:defaulting|assuming|using))"
      r"|must be set before)",
      "culprit",
      "The script was not started by torchrun or the launcher it expects (srun, mpirun, deepspeed, accelerate, "
      "colossalai run), or the launcher variables were wiped.",
      literals=("expected, but not set", "Could not find '", "is not set but it is required for env://",
                "KeyError: 'RANK'", "KeyError: 'LOCAL_", "KeyError: 'WORLD_SIZE'", "KeyError: 'NODE_RANK'", "KeyError: 'MASTER_", "KeyError: 'GROUP_RANK'",
                "KeyError: 'SLURM_", "KeyError: 'OMPI_COMM_WORLD_", "KeyError: 'PMI", "_env_error(", "RANK'",
                "SIZE'", "MASTER_ADDR'", "MASTER_PORT'", "parameter missing", "world_size must be positive",
                "nvironment variable", "env was not set", "LOCAL_RANK is not in the environment",
                "must be set before"),
      suggests=("no-launcher",), family="launcher-variable", specificity=0.95),
    # A trace cut before its message says less than the message would: it counts as a side effect, so
    # any primary sign (the device error of set_device(int(os.environ["LOCAL_RANK"]))) outranks it.
    S("launcher-variable-read", "A traceback cut at the line that reads a launcher variable",
      r"^(?:\[rank\d+\]: )?\s+(?:return\s+|[\w.]+\s*=\s*)?(?:int|str)?\(?\s*os\.(?:environ\[|getenv\(|environ\.get\()"
      r"\s*['\"]" + LAUNCHER_VARIABLES + r"['\"]\s*[\])]\)?\s*$", "culprit",
      "The last frame of a trace cut short reads RANK, LOCAL_RANK ... from the environment: most often the "
      "variable was missing (no launcher).",
      literals=("environ['", 'environ["', "getenv(", "environ.get("), suggests=("no-launcher",),
      family="launcher-variable", effect="side", specificity=0.9),
    S("main-process-barrier", "A rank's trace stopped where ranks wait for the main process to finish alone",
      r"main_process_first\(|torch_distributed_zero_first\(|wait_for_everyone\(\)", "victim",
      "transformers' main_process_first, accelerate's wait_for_everyone, YOLO's torch_distributed_zero_first: "
      "the other ranks wait in a barrier while rank 0 preprocesses or downloads; past the process group's "
      "timeout (30 minutes by default) they fail there. Rank 0 is slow, not broken.",
      literals=("main_process_first(", "zero_first(", "wait_for_everyone()"),
      suggests=("straggler-rank", "rank-crash"), family="waiting", specificity=0.6),
    S("default-group-missing", "A collective ran before any process group existed",
      r"Default process group (?:has not been|is not) initialized", "culprit",
      "Distributed code ran in a process where init_process_group never ran: most often a script meant for "
      "torchrun (or --launcher pytorch) started with plain python; sometimes a code path (SyncBatchNorm, an "
      "evaluation helper) that assumes a group on a single-process run.",
      literals=("Default process group has not been initialized", "Default process group is not initialized"),
      suggests=("no-launcher",),
      family="launcher-variable", specificity=0.5),
    S("launcher-not-used", "The framework found no launcher around the script",
      r"parallel_mode != ParallelMode\.DISTRIBUTED\. In order to use Torch DDP, launch your script with"
      r"|The .srun. command is available on your system but is not used"
      r"|(?:^|- )Distributed environment: (?:DistributedType\.)?NO\s*$"
      r"|NotImplementedError: Only DistributedDataParallel is supported", "neutral",
      "transformers found a process group its own arguments know nothing of; Lightning found srun unused inside a "
      "SLURM allocation; accelerate's state printout says one process and no distributed set-up; MoCo's code (and "
      "its many forks) refuses to run outside its distributed mode: the script was started with plain python "
      "where a launcher (torchrun, srun, accelerate launch, the script's own spawning mode) was meant to start it. "
      "Runs meant for one process print these too, so alone they leave 'not in the catalog' first.",
      literals=("In order to use Torch DDP, launch your script with", "is available on your system but is not used",
                "Distributed environment: ", "Only DistributedDataParallel is supported"),
      suggests=("no-launcher",), family="launcher-variable", specificity=0.45),
    S("launcher-none", "The script found itself alone, or told it had no launcher, where a job was meant",
      r"Invalid launcher type: [Nn]one\b|Engine world size \(\d+\) != Runtime world size \(1\)", "culprit",
      "mmengine's and mmcv's init_dist was handed the launcher 'none' (or None), which OpenMMLab-style scripts "
      "are given (--launcher none) when started with plain python; a TensorRT-LLM engine built for several ranks "
      "ran in one process: torchrun, srun or mpirun was meant to start them.",
      literals=("Invalid launcher type: none", "Invalid launcher type: None", "Runtime world size (1)"),
      suggests=("no-launcher",), family="launcher-variable", specificity=0.85),
    S("deepspeed-mpi-discovery", "DeepSpeed found no launcher variables and fell back to MPI discovery",
      r"Not using the DeepSpeed or dist launchers|No module named '?mpi4py'?", "culprit",
      "deepspeed.init_distributed looks for MPI when RANK, WORLD_SIZE, MASTER_ADDR ... are missing: the "
      "script was started with plain python instead of deepspeed or torchrun (mpi4py is then what fails).",
      literals=("Not using the DeepSpeed or dist launchers", "mpi4py"),
      suggests=("no-launcher",), family="launcher-variable", specificity=0.7),
    S("collective-mismatch-detail", "Ranks called different collectives (DETAIL or NCCL's check)",
      r"Detected mismatch between collectives on ranks|Mismatch between collective|Mismatched collective detected"
      r"|NET/IB ?: ?(?:req \d+/\d+ tag \S+ peer \S+ )?collective mismatch error|input shapes into the collective are mismatched across ranks"
      r"|Error when verifying shape tensors for collective|Cannot apply desired operation due to shape mismatches"
      r"|Mismatched \w+ tensor shapes|Collectives differ in the following aspects"
      r"|Received data size doesn't match expected size\. Is there a distributed collective mismatch"
      # HCCL (Ascend NPUs) compares the two ends' operation before it connects them
      r"|\[ParameterConflict\]CMD information \w+ check fail",
      "culprit", "Ranks called different collectives or shapes; the message names both sides (torch's DETAIL "
      "checks, NCCL's, HCCL's, accelerate's and Horovod's).",
      literals=("ismatch between collective", "Mismatched collective detected", "collective mismatch error",
                "mismatched across ranks", "verifying shape tensors for collective", "due to shape mismatches",
                "tensor shapes", "Collectives differ in the following aspects", "data size doesn't match expected size",
                "[ParameterConflict]CMD information"),
      suggests=("collective-mismatch",),
      family="collective-stall", specificity=0.95),
    S("nccl-net-message-truncated", "NCCL got more bytes from a peer than it had posted for",
      r"NET/Socket ?: ?(?:peer \S+ )?message truncated|message truncated : receiving \d+ bytes instead of \d+",
      "culprit", "A peer sent more than this rank expected at the same step: the ranks called collectives of "
      "different sizes, or run with different NCCL settings (NCCL_PROTO, NCCL_ALGO).",
      literals=("message truncated",), suggests=("collective-mismatch",), family="collective-stall",
      specificity=0.75),
    S("gloo-message-too-long", "gloo got more bytes from a peer than its receive buffer holds",
      # gloo's check in its TCP pair, before and after its buffers took offsets
      r"op\.preamble\.(?:roffset \+ op\.preamble\.)?length <= op\.(?:nbytes|buf->size_)", "culprit",
      "A peer sent more than this rank posted for at the same step: the ranks passed tensors of different sizes "
      "to one collective (gloo aborts the process on its failed check).",
      literals=("op.preamble.",), suggests=("collective-mismatch",), family="collective-stall", specificity=0.8),
    S("workers-out-of-sync", "The framework found its workers out of step with each other",
      r"workers have fallen out of sync|gradients are inconsistent between workers"
      r"|(?:parameters|gradients) (?:are|were) not (?:synchroni[sz]ed|the same) across (?:ranks|workers)", "culprit",
      "fairseq's all_gather_list and gradient check (and their kin) compare what the workers exchanged: one "
      "worker took another path (an extra or a skipped step, a different batch count) or sent other data.",
      literals=("fallen out of sync", "inconsistent between workers", "across ranks", "across workers"),
      suggests=("collective-mismatch", "rank-crash"), family="collective-stall", specificity=0.7),
    S("monitored-barrier-missing-ranks", "DETAIL's monitored barrier names the ranks that never arrived",
      r"Ranks? [\d, ]+ failed to pass monitoredBarrier"
      r"|successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank \d+"
      r"|Rank \d+ timed out in monitoredBarrier after \d+",  # rank 0's deadline passed before every rank answered
      "victim",
      "Rank 0 waited at TORCH_DISTRIBUTED_DEBUG=DETAIL's barrier; the ranks it names took another path.",
      literals=("monitoredBarrier",), suggests=("collective-mismatch", "straggler-rank"), family="collective-stall"),
    S("size-mismatch", "Tensor sizes differ across ranks",
      r"(?i)(?:size|length) mismatch|sizes? (?:do|does) not match|Expected .{0,200}? to have the same size", "culprit",
      "Ranks passed tensors of different shapes to one collective.", literals=("ismatch", "not match", "same size"),
      suggests=("collective-mismatch",), family="collective-stall", specificity=0.5),
    S("nccl-invalid-usage", "NCCL invalid usage",
      r"ncclInvalidUsage|NCCL (?:error in: .{0,300}?, |Error 5: |error: )invalid usage", "culprit",
      "NCCL rejected how it was called; the 'Last error' line says why. Raised while the communicator is "
      "created, it is most often two ranks on one GPU (no set_device, or more ranks than GPUs).",
      literals=("ncclInvalidUsage", "invalid usage"), suggests=("missing-set-device", "too-few-gpus"),
      family="device-index", specificity=0.35),
    # -- a process stops without dying ----------------------------------------------------------
    S("kernel-hung-task", "The kernel found a task blocked in it for minutes",
      r"\bINFO: task \S+:\d+ blocked for more than \d+ seconds", "culprit",
      "The kernel's hung-task detector: a process asleep in the kernel, uninterruptibly, on I/O that does not "
      "return (a hung NFS or Lustre mount, a failing disk). As a rank it neither runs nor dies, and holds every "
      "collective.", literals=("blocked for more than",),
      suggests=("frozen-rank", "straggler-rank"), family="frozen", specificity=0.7),
    # One look at a process's state: a moment in uninterruptible sleep is ordinary I/O, where the kernel's report
    # above means minutes; but ps's or /proc's view of a rank is what someone looking into a hang posts
    S("process-stopped-or-in-disk-sleep", "A process seen stopped, or asleep in the kernel on I/O",
      r"^State:\s+(?:D \(disk sleep\)|T \(stopped\)|t \(tracing stop\))"  # /proc/<pid>/status
      # ps -o pid,stat,wchan: D (disk sleep), T (stopped) or t (a debugger's), and where in the kernel it waits
      r"|^\s*\d+\s+[DTt][sNl<+LWz]{0,4}\s+(?:nfs_|rpc_wait|io_schedule|do_signal_stop|ptrace_stop|folio_wait"
      r"|wait_on_page|fuse_|jbd2_|xfs_|ext4_|blk_|ll_file|ldlm_|mmfs)\w*", "culprit",
      "A process stopped by a signal or a debugger, or asleep in the kernel on I/O: where it stays so (a hung "
      "mount, a stopped container), a rank that neither runs nor dies holds every collective.",
      literals=("State:", "nfs_", "rpc_wait", "io_schedule", "do_signal_stop", "ptrace_stop", "folio_wait",
                "wait_on_page", "fuse_", "jbd2_", "xfs_", "ext4_", "blk_", "ll_file", "ldlm_", "mmfs"),
      suggests=("frozen-rank", "straggler-rank"), family="frozen", specificity=0.65),
    # -- a process dies ---------------------------------------------------------------------
    S("out-of-memory", "A rank ran out of GPU or host memory",
      r"(?:CUDA|HIP) out of memory|OutOfMemoryError|CUDA error: out of memory|DefaultCPUAllocator: (?:can't allocate"
      r"|not enough) memory|Cuda failure 'out of memory'|Failed to CUDA (?:calloc|malloc|host alloc)(?: async)? \d+ bytes|"
      + HOST_MEMORY_KILL, "culprit",
      "This rank could not allocate GPU memory (or the host's OOM killer chose it) and died; the others then "
      "time out or are torn down.",
      literals=("out of memory", "OutOfMemoryError", "DefaultCPUAllocator", "Out of memory: Kill", "oom-kill",
                "oom_kill", "Out Of Memory", "OOMKilled", "Failed to CUDA ", "Killed process", "systemd-oomd",
                "memory limit"),
      suggests=("rank-crash",), family="exit"),
    S("nccl-shm-failed", "NCCL cannot create or attach its shared-memory segments",
      r"Error while (?:creating|attaching to) shared memory segment|posix_fallocate failed|failed to extend /dev/shm"
      r"|shm_open failed|failed to create shared memory file|Could not map \S*/dev/shm", "culprit",
      "/dev/shm is too small (a container's 64 MB default) or not writable for NCCL's segments; a failed "
      "attach to a peer's segment is another matter.",
      literals=("shared memory segment", "posix_fallocate failed", "failed to extend /dev/shm", "shm_open failed",
                "failed to create shared memory file", "Could not map "),
      suggests=("shm-exhausted",), family="shm", specificity=0.85),
    S("dataloader-worker-died", "A DataLoader worker exited unexpectedly",
      r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\)? exited unexpectedly", "culprit",
      "A worker process died without a Python error: /dev/shm too small for its batches, or the host's "
      "OOM killer.", literals=("exited unexpectedly",), suggests=("shm-exhausted", "rank-crash"),
      family="shm", specificity=0.45),
    S("dataloader-bus-error", "A DataLoader worker died of a bus error (shared memory)",
      r"killed by signal: Bus error|insufficient shared memory", "culprit",
      "DataLoader workers hand batches over through /dev/shm; a full /dev/shm kills them with SIGBUS.",
      literals=("killed by signal: Bus error", "insufficient shared memory"), suggests=("shm-exhausted",),
      family="shm", specificity=0.85),
    S("torch-shm-failed", "torch could not place a tensor in shared memory (/dev/shm)",
      r"unable to (?:write to file|open shared memory object|mmap \d+ bytes from file|allocate shared memory)"
      # MindIE's check of /dev/shm (a GPU kernel's "shared memory is not enough" is on-chip memory, not this)
      r"|\bshm_open\b.{0,300}?(?:No space|Cannot allocate)|[Ss]hared memory available is not enough"
      r"|[Aa]vailable shared memory size is not enough",
      "culprit",
      "DataLoader workers and torch.multiprocessing hand tensors over in /dev/shm files (</torch_...>); "
      "a full /dev/shm fails the write. 'Too many open files' is the descriptor limit instead.",
      literals=("unable to write to file", "unable to open shared memory object", "unable to mmap",
                "unable to allocate shared memory", "hared memory available is not enough",
                "vailable shared memory size is not enough"),
      suggests=("shm-exhausted",), family="shm", specificity=0.8),
    S("no-space-left", "A device has no space left (ENOSPC)", r"No space left on device|\bENOSPC\b|\[Errno 28\]",
      "culprit", "A write found its file system full: /dev/shm (NCCL's segments, DataLoader batches) or a disk; "
      "the path it names, or NCCL's wording around it, tells which.",
      literals=("No space left on device", "ENOSPC", "[Errno 28]"), suggests=("shm-exhausted",), family="shm",
      specificity=0.3),
    S("killed-by-sigbus", "A process died of a bus error (SIGBUS)",
      r"exitcode\s*:\s*-7\b|(?i:signal) 7 \(SIGBUS\) received by PID|terminated with signal SIGBUS"
      r"|died with <Signals\.SIGBUS|exits with return code = -7\b|^Bus error|\bBus error \(core dumped\)"
      r"|Fatal Python error: Bus error|[Rr]eceived signal SIGBUS|Caught signal 7 \(Bus error"
      r"|srun: error: \S+: tasks? [\d,-]+: Bus error|noticed that process rank \d+ with PID \S+ on node \S+ exited on signal 7\b",
      "culprit", "A mapped page could not be backed: most often a full /dev/shm under shared tensors; "
      "otherwise a crash of its own.",
      literals=("exitcode", "SIGBUS", "return code = -7", "Bus error", "exited on signal 7"),
      suggests=("shm-exhausted", "rank-crash"), family="shm", specificity=0.6, keep=16),
    S("nccl-system-error", "NCCL: unhandled system error", r"unhand?led system error|ncclSystemError", "culprit",
      "A system call inside NCCL failed (shared memory, sockets); NCCL_DEBUG=WARN prints which one.",
      literals=("unhandled system error", "unhanled system error", "ncclSystemError"),
      # Alone, the line was one of these causes in 7 of the development set's 13 public logs that show nothing else.
      suggests=("shm-exhausted", "wrong-socket-interface", "firewall"), family="nccl-error", specificity=0.55),
    S("nccl-internal-error", "NCCL: internal error",
      r"internal error - please report this issue|ncclInternalError|NCCL Error 3: internal error", "culprit",
      "NCCL's catch-all for a check that failed: most often a bootstrap that mixed interfaces or hosts "
      "(NCCL_SOCKET_IFNAME), a fabric problem, or NCCL versions that differ across nodes.",
      literals=("internal error - please report", "ncclInternalError", "NCCL Error 3"),
      suggests=("wrong-socket-interface", "link-down", "shm-exhausted"), family="nccl-error", specificity=0.3),
    S("cuda-fault", "A CUDA kernel or the GPU itself failed (not a distributed-setup mistake)",
      r"illegal memory access|device-side assert triggered|uncorrectable ECC|unspecified launch failure|CUBLAS_STATUS_[A-Z_]+"
      r"|CUDNN_STATUS_[A-Z_]+|misaligned address|illegal instruction was encountered|GPU has fallen off the bus"
      r"|\bXid\b\D{0,40}\d", "culprit",
      "A kernel faulted, an assertion fired on the device, or the GPU reported a hardware error: a bug or a "
      "failing GPU, which the catalog of distributed-setup causes does not hold.",
      literals=("illegal memory access", "device-side assert triggered", "uncorrectable ECC", "unspecified launch failure",
                "CUBLAS_STATUS_", "CUDNN_STATUS_", "misaligned address", "illegal instruction was encountered",
                "fallen off the bus", "Xid"),
      family="cuda", outside=True),
    S("library-load-failed", "A shared library is missing or does not match",
      r"^(?:\[rank\d+\]: )?(?:ImportError|OSError): .*(?:undefined symbol|cannot open shared object file"
      r"|version `GLIBC)", "culprit",
      "torch, NCCL or an extension was built against another library than the one loaded: an installation "
      "problem, not a distributed-setup one.", ("rank",),
      literals=("undefined symbol", "cannot open shared object file", "version `GLIBC"), family="cuda", outside=True),
    S("tensor-on-wrong-device", "A tensor on the wrong device for the backend or the op",
      r"No backend type associated with device type (?:cpu|cuda)|Tensors must be CUDA and dense"
      r"|Expected all tensors to be on the same device", "culprit",
      "A CPU tensor reached an NCCL collective (or a CUDA tensor gloo, or two devices met in one op): the "
      "program's own placement, not the job's setup. A 'cpu:gloo,cuda:nccl' backend or moving the tensor fixes it.",
      ("rank",), literals=("No backend type associated with device type", "Tensors must be CUDA and dense",
                           "Expected all tensors to be on the same device"), family="cuda", outside=True),
    S("ddp-unused-parameters", "DDP found parameters that took no part in the loss",
      r"Expected to have finished reduction in the prior iteration|parameters that were not used in producing (?:the )?loss"
      r"|did not receive grad for rank \d+", "culprit",
      "DistributedDataParallel waits for a gradient of every parameter; some never got one (a branch the forward "
      "skipped, a frozen head still registered): find_unused_parameters=True or a model fix, not the job's setup.",
      ("rank",), literals=("finished reduction in the prior iteration", "not used in producing", "did not receive grad"),
      family="model", outside=True),
    S("nccl-world-size-mismatch", "NCCL's bootstrap root saw ranks disagree on the world",
      r"Bootstrap Root : mismatch in (?:rank count|info) from procs|Invalid rank requested : \d+/\d+"
      r"|Bootstrap Root : localId \d+ is out of range", "culprit",
      "Ranks registered with NCCL's bootstrap root with different rank counts (or a rank beyond the count): "
      "the launchers disagree on the world size.",
      literals=("Bootstrap Root : mismatch in", "Invalid rank requested", "is out of range"),
      suggests=("world-size-mismatch",), family="world", specificity=0.85),
    S("launcher-topology-mismatch", "The trainer's devices or nodes differ from what the launcher started",
      r"in Lightning, but the (?:number of (?:tasks per node|nodes) configured in SLURM"
      r"|product \(\d+ \* \d+\) does not match)"
      r"|in your SLURM bash script, but this variable is not supported"
      r"|You requested \d+ GPUs but launched \d+ slurm tasks"
      # fairseq's pipelines against SLURM's tasks
      r"|SLURM --ntasks-per-node must match number of", "culprit",
      "Lightning compares its devices/num_nodes with SLURM's --ntasks-per-node/--nodes (or torchrun's world size) "
      "and stops when they differ: the processes the launcher starts and the world the trainer expects disagree.",
      literals=("in Lightning, but the", "in your SLURM bash script", "GPUs but launched",
                "SLURM --ntasks-per-node must match"),
      suggests=("world-size-mismatch",), family="world", specificity=0.85),
    S("world-size-views-differ", "The launcher's world size and torch's disagree",
      r"initialized with a value of \d+ for world size, but environment variable WORLD_SIZE has value \d+"
      r"|MPI world size \d+ does not match torch world size \d+"
      r"|Engine world size \(\d+\) != Runtime world size \((?!1\))\d+\)", "culprit",
      "composer and DeepSpeed compare the world size the process group was made with against the launcher's "
      "(WORLD_SIZE, MPI's), TensorRT-LLM its engine's against the run's: the launch and the script disagree on "
      "the size of the job.",
      literals=("for world size, but environment variable WORLD_SIZE", "does not match torch world size",
                "!= Runtime world size ("),
      suggests=("world-size-mismatch",), family="world", specificity=0.75),
    S("nccl-duplicate-rank", "Two processes registered the same rank with NCCL",
      r"Bootstrap Root : rank \d+ of \d+ ranks has already checked in", "culprit",
      "A rank checked in twice at NCCL's bootstrap root: two nodes with the same node rank, or two jobs "
      "sharing one root.", literals=("ranks has already checked in",),
      suggests=("duplicate-node-rank", "split-world"), family="world", specificity=0.85),
    S("nccl-foreign-connection", "NCCL accepted a connection from another world",
      # NCCL >= 2.28 words it "Socket magic mismatch from ..." and "Wrong socket type from ..."
      r"socketFinalizeAccept(?: from \S+)?: wrong (?:magic|type)|Socket magic mismatch from|Wrong socket type from",
      "culprit",
      "A connection to this rank's NCCL listener came from a process of another communicator: another job, or "
      "the other half of a split world, dialing an address it took for its own.",
      literals=("socketFinalizeAccept", "Socket magic mismatch from", "Wrong socket type from"),
      suggests=("shared-master-port", "split-world"), family="world", specificity=0.6),
    S("cuda-initialized-before-fork", "CUDA was initialized before the launcher could fork its workers",
      r"CUDA has been initialized before the .notebook_launcher. could create|can't create new processes if CUDA is "
      r"already initialized|should only be initialized inside your training function"
      r"|\(strategy='ddp\w*'\)` is not compatible with an interactive environment", "culprit",
      "A notebook or script touched the GPU before accelerate's notebook_launcher or Lightning forked the workers; "
      "forked processes cannot use CUDA initialized by their parent. Not the job's distributed setup.", ("rank",),
      literals=("CUDA has been initialized before", "if CUDA is already initialized",
                "should only be initialized inside your training function", "not compatible with an interactive"),
      family="launcher-args", outside=True),
    S("ib-reg-mr-failed", "InfiniBand memory registration failed",
      r"Call to ibv_reg_mr failed", "culprit",
      "The HCA could not register memory: the locked-memory limit (ulimit -l) or GPUDirect RDMA's peer-memory "
      "module, not the link.", ("rank",), literals=("ibv_reg_mr failed",), family="cuda", outside=True),
    S("fd-limit", "Too many open files", r"Too many open files|\bEMFILE\b", "culprit",
      "The process hit its descriptor limit (ulimit -n): many ranks' sockets, DataLoader workers' shared tensors.",
      ("rank",), literals=("Too many open files", "EMFILE"), family="limits", outside=True),
    S("launcher-arg-mismatch", "The script does not accept the launcher's --local-rank argument",
      r"error: unrecognized arguments: --local[-_]rank", "culprit",
      "torch.distributed.launch passes --local-rank (--local_rank before torch 2.0) to the script; a script whose "
      "argparse does not know that spelling stops at once. A launcher/script mismatch, not the job's setup.",
      ("rank",), literals=("unrecognized arguments: --local",), family="launcher-args", outside=True),
    S("cuda-runtime-broken", "CUDA itself fails under NCCL (driver, build or hardware)",
      r"CUDA driver version is insufficient|unhandled cuda error|ncclUnhandledCudaError|no kernel image is available"
      r"|is not compatible with the current PyTorch installation", "culprit",
      "The driver is older than the CUDA runtime, NCCL was built for another CUDA, or the GPU misbehaves: "
      "not a distributed-setup mistake.",
      literals=("driver version is insufficient", "unhandled cuda error", "ncclUnhandledCudaError",
                "no kernel image is available", "not compatible with the current PyTorch"),
      family="cuda", outside=True),
    S("launcher-signalled", "The launcher was stopped from outside",
      r"Received (?:Signals\.)?(?:SIG[A-Z]+|\d+) death signal, shutting down workers"
      r"|SignalException: Process \d+ got signal: \d+|Main process received SIG(?:TERM|INT), exiting"
      r"|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT "
      r"|^KeyboardInterrupt\s*$", "neutral",  # Python's own last line where Ctrl-C reached it
      "torchrun's agent (or DeepSpeed's launcher, or SLURM's step) got a signal and shut its workers down: a "
      "scheduler's time limit, a preemption, Ctrl-C, a deadline. With no error before it, the job had hung. "
      "Read by diagnose only: in faultlab's own runs the signal is faultlab's deadline.", (),
      literals=("death signal, shutting down workers", "SignalException: Process", "Main process received SIG",
                "CANCELLED AT ", "KeyboardInterrupt"),
      family="teardown", effect="side"),
    S("worker-torn-down", "Launcher tore workers down after a failure",
      r"(?:Sending|Terminating|Closing) process \d+ (?:closing|via) signal SIGTERM|(?:^|\] )Killing subprocess \d+",
      "victim",
      "The launcher killed the healthy workers of its node because another worker failed; the one it "
      "did not signal is the one that failed.", ("launcher",),
      literals=("closing signal SIGTERM", "via signal SIGTERM", "Killing subprocess"), family="teardown",
      effect="side", keep=256),
    S("killed-by-signal", "A worker was killed by a signal",
      r"exitcode\s*:\s*-(?:9|6|11)\b|(?i:signal) (?:9|6|11) \(SIG[A-Z]+\) received by PID"
      r"|terminated with signal SIG(?:KILL|ABRT|SEGV)|is killed by signal: Killed"
      r"|exits with return code = -(?:9|6|11)\b|died with <Signals\.SIG(?:KILL|ABRT|SEGV): \d+>"
      r"|^Killed\s*$|: line \d+: +\d+ Killed\s"
      r"|srun: error: \S+: tasks? [\d,-]+: (?:Killed|Segmentation fault|Aborted)"
      r"|(?:mpirun|prterun) noticed that process rank \d+ with PID \S+ on node \S+ exited on signal (?:9|6|11)\b"
      # Open MPI's and UCX's own reports from inside the dying process: "[host:pid] Signal: Segmentation fault
      # (11)", "[host:pid:0:tid] Caught signal 11 (Segmentation fault: address not mapped ...)". A SIGABRT after
      # a collective timed out is torch's watchdog's, and a rule dismisses it (log_exits tells the signal).
      r"|\] Signal: (?:Segmentation fault|Aborted|Killed) \((?:11|6|9)\)"
      r"|Caught signal (?:11|6) \((?:Segmentation fault|Aborted)"
      r"|Workers \(tasks / actors\) killed due to memory pressure \(OOM\)", "culprit",
      "A worker died by a signal (-9: SIGKILL, often the OOM killer) without a Python traceback; "
      "torchrun, DeepSpeed's and accelerate's launchers, srun, mpirun and Ray each word it their own way.",
      ("launcher",),
      literals=("exitcode", "received by PID", "terminated with signal", "killed by signal: Killed",
                "exits with return code = -", "died with <Signals.SIG", "Killed", "exited on signal",
                ": Segmentation fault", ": Aborted", "Caught signal", "killed due to memory pressure"),
      # a launcher's report takes two lines a worker: a node of 32 workers fits (whether another signal hides
      # past the lines kept decides whether a watchdog's aborts can be told apart)
      suggests=("rank-crash",), family="exit", specificity=0.75, keep=64),
    S("child-failed", "torchrun's failure report (Root Cause block)", r"Root Cause \(first observed failure\)",
      "neutral", "The launcher's first observed failure, which can be a victim that timed out first.", ("launcher",),
      literals=("Root Cause (first observed failure)",), family="exit", effect="side"),
    S("python-exception", "An uncaught Python exception",
      # torchrun's ChildFailedError is the launcher's report of a worker's failure, not a rank's own error
      r"^(?:\[rank\d+\]: )?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?<!ChildFailedError): ", "neutral",
      "The last line of a traceback: the error as Python raised it.", ("rank",), literals=("Error: ", "Exception: "),
      family="exit"),
)
