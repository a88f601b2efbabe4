"""The signature catalog (data) and the matcher (pure): real output lines -> Symptoms.

A signature is a pattern over one line of a rank's output or a launcher's log, grouped with
its siblings into a family by meaning (every wording of a failed launcher-variable lookup,
every refused or timed-out connection, every IB port event ...), with the role it usually
plays (the culprit's own error, a victim waiting for someone else, or neutral context) and
its effect: a primary sign of a cause, a side effect that follows any failure (exit
warnings, torn-down workers, victims' watchdog lines), or context that only carries facts
(device counts, interfaces, node counts) for diagnose's rules. Patterns are written from
real torch/gloo/NCCL/DeepSpeed/accelerate output and tolerate neighbouring versions.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Literal

from .records import Capture, Symptom

Role = Literal["culprit", "victim", "neutral"]
Effect = Literal["primary", "side", "context"]
EVERYWHERE = ("rank", "launcher")


@dataclasses.dataclass(frozen=True)
class Signature:
    id: str
    title: str
    pattern: str
    role: Role
    meaning: str
    where: tuple[str, ...] = EVERYWHERE  # () for context lines: diagnose reads them, recordings do not
    # Literal fragments every matching line contains: diagnose searches for these first.
    literals: tuple[str, ...] = ()
    # The causes this line points at before any recording is counted, the most frequent first
    # (empty: evidence to show, but no reason for a cause).
    suggests: tuple[str, ...] = ()
    family: str = ""
    effect: Effect = "primary"
    # How much this line alone says "one of the catalog's causes" rather than something else.
    specificity: float = 0.8
    # A known failure that is not one of the catalog's causes (a driver too old for the runtime).
    outside: bool = False
    keep: int = 3  # lines kept per file and rank
    # The line means this only when it comes from at least this many nodes (log files, for diagnose).
    on_nodes: int = 1

    @property
    def regex(self) -> re.Pattern:
        return re.compile(self.pattern)  # re keeps compiled patterns cached


S = Signature
SIGNATURES: tuple[Signature, ...] = (
    # -- ports and addresses -------------------------------------------------------------
    S("address-in-use", "Store server cannot bind MASTER_PORT (EADDRINUSE)",
      r"(?i)address already in use|EADDRINUSE|errno: 98\b", "culprit",
      "Something else already listens on MASTER_PORT on the master node.",
      literals=("address already in use", "Address already in use", "EADDRINUSE", "errno: 98"),
      suggests=("port-in-use", "duplicate-node-rank"), family="port-taken", specificity=0.9),
    S("server-bind-failed", "Store server failed to bind its port",
      r"socket has failed to bind to \S+ \(errno: \d+", "culprit",
      "The store server could not bind MASTER_PORT; the errno says why (98: taken, 13: a port below 1024).",
      literals=("has failed to bind to",), suggests=("port-in-use",), family="port-taken", specificity=0.6),
    S("client-connect-timeout", "Client timed out connecting to the store",
      r"client socket has timed out after \d+m?s while trying to connect to|connect\(\) timed out\. Original timeout",
      "culprit", "This process dialed host:port and nobody answered there: compare that port with node 0's.",
      literals=("client socket has timed out", "connect() timed out"),
      suggests=("wrong-master-port", "firewall", "wrong-master-addr"), family="connect-failed"),
    S("no-route-to-host", "No host answers at the address dialed",
      r"No route to host|failed to connect to any network address of", "culprit",
      "Nothing on the link answers for that address: a wrong MASTER_ADDR, or a host that is down.",
      literals=("No route to host", "failed to connect to any network address"),
      suggests=("wrong-master-addr", "link-down"), family="connect-failed"),
    S("connection-refused", "Connection refused", r"(?i)connection refused", "culprit",
      "Nothing listens at the address dialed (or a firewall rejects it).", literals=("onnection refused",),
      suggests=("wrong-master-port", "firewall", "wrong-socket-interface"), family="connect-failed",
      specificity=0.7),
    S("client-connect-failed", "Client could not connect to the store's address",
      r"client socket has failed to connect to .*\((?:errno|system error): -?\d+", "culprit",
      "This process could not reach MASTER_ADDR:MASTER_PORT; the errno says how (111 refused, 110 timed "
      "out, 113 no route, 22 or 10049 an address that is not valid).",
      literals=("client socket has failed to connect",),
      suggests=("wrong-master-addr", "firewall", "wrong-master-port"), family="connect-failed", specificity=0.7),
    S("name-not-resolved", "A host name does not resolve",
      r"gai error: -\d+|Name or service not known|Temporary failure in name resolution|[Hh]ost not found"
      r"|nodename nor servname|getaddrinfo failed", "culprit",
      "A host name (MASTER_ADDR, the rendezvous endpoint, this host's own name) has no address here.",
      literals=("gai error", "Name or service not known", "Temporary failure in name resolution", "ost not found",
                "nodename nor servname", "getaddrinfo failed"),
      suggests=("wrong-master-addr",), family="name-resolution"),
    S("rendezvous-connect-failed", "The launcher could not reach the rendezvous store",
      r"RendezvousConnectionError|connection to the C10d store has failed", "culprit",
      "This node's launcher could not connect to --rdzv_endpoint: wrong host or port, or blocked.", ("launcher",),
      literals=("RendezvousConnectionError", "connection to the C10d store has failed"),
      suggests=("wrong-master-addr", "firewall", "wrong-master-port"), family="connect-failed", specificity=0.7),
    S("rendezvous-timeout", "The rendezvous timed out waiting for nodes", r"RendezvousTimeoutError", "victim",
      "This launcher waited for the other nodes to join the rendezvous; some never came.", ("launcher",),
      literals=("RendezvousTimeoutError",), suggests=("wrong-master-addr", "firewall", "world-size-mismatch"),
      family="waiting", specificity=0.6),
    S("store-wait-timeout", "Store wait timed out for keys other ranks never wrote",
      r"wait timeout after \d+ms|Timed out after \d+ seconds waiting for keys|got error: Socket Timeout"
      r"|waitForInput: socket .* timed out after \d+ms", "victim",
      "This rank waited for other ranks to register; the keys name the ranks that never came.",
      literals=("wait timeout after", "waiting for keys", "Socket Timeout", "waitForInput: socket"),
      suggests=("straggler-rank", "wrong-master-port", "wrong-socket-interface", "rank-crash"),
      family="waiting", specificity=0.6),
    S("rendezvous-clients-timeout", "Master's store timed out waiting for the other nodes",
      r"Timed out after \d+ seconds waiting for clients\. \d+/\d+ clients joined", "victim",
      "Node 0's launcher waited for the other nodes' launchers, and not all came.",
      literals=("waiting for clients",),
      suggests=("wrong-master-port", "wrong-master-addr", "firewall", "duplicate-node-rank"), family="waiting",
      specificity=0.7),
    S("split-world", "Several nodes each host a store and wait for clients: the job split",
      r"Timed out after \d+ seconds waiting for clients\. \d+/\d+ clients joined", "culprit",
      "Only the store host prints 'clients joined'; on several nodes at once it means several stores, "
      "each node its own master (MASTER_ADDR=localhost, or node rank 0 everywhere).", ("launcher",),
      literals=("waiting for clients",), suggests=("split-world",), family="split-world", specificity=0.9,
      on_nodes=2),
    S("store-connect-reset-retry", "A rank's connection to the store was reset during its handshake, and retried",
      r"TCP client failed to connect/validate to host \S+ - retrying \(try=\d+[^)]*\): Connection reset by peer",
      "victim", "The store host reset the connection before the handshake finished: its listen backlog "
      "(net.core.somaxconn) overflowed as many ranks connected at once. The rank retries and usually joins late.",
      literals=("failed to connect/validate to host",), suggests=("listen-backlog-overflow",), family="store-backlog",
      specificity=0.8),
    S("store-somaxconn-warning", "The store host's listen backlog is smaller than the workers it expects",
      r"Starting store with \d+ workers but somaxconn is \d+", "culprit",
      "The store host's net.core.somaxconn is below the number of workers the store was started for; under "
      "torchrun that number is the node count, while every rank connects: the real shortfall is larger.",
      literals=("but somaxconn is",), suggests=("listen-backlog-overflow",), family="store-backlog",
      specificity=0.85),
    S("libuv-store-unavailable", "The libuv TCPStore was requested but this torch was built without libuv",
      r"use_libuv was requested but PyTorch was built without libuv support", "culprit",
      "torch's default store backend (libuv, since 2.4) is missing from this build: set USE_LIBUV=0 (or "
      "use_libuv=False) to use the legacy store. Wording from torch 2.13's library.",
      literals=("built without libuv support",), suggests=("store-backend-unavailable",), family="store-backend",
      specificity=0.95),
    S("libuv-store-server-error", "The libuv store server failed on a client connection",
      r"Failed to accept client due to|Client sent invalid command\. client:|Error processing client message:"
      r"|Failed to setup read callback\. client:", "culprit",
      "The store host's libuv server (torch >= 2.4's default) could not accept or parse a client: too many "
      "connections, or a client of another protocol or torch version on MASTER_PORT. Wording from torch 2.13's "
      "library; the legacy server's failures read 'TCPStoreMasterDaemon ...'.",
      literals=("Failed to accept client due to", "Client sent invalid command", "Error processing client message",
                "Failed to setup read callback"), suggests=("listen-backlog-overflow",), family="store-server",
      specificity=0.5),
    S("legacy-store-server-error", "The legacy store server (USE_LIBUV=0) failed",
      r"TCPStoreMasterDaemon::run\(\) failed|Unexpected poll revent on the master's listening socket", "culprit",
      "The store host's legacy server thread died or saw its listening socket fail; every rank loses the store "
      "after it. Wording from torch 2.13's library.",
      literals=("TCPStoreMasterDaemon::run() failed", "Unexpected poll revent on the master's listening socket"),
      suggests=("store-host-lost", "listen-backlog-overflow"), family="store-server", specificity=0.5),
    S("store-recv-failed", "Lost the connection to the TCPStore",
      r"Failed to recv, got 0 bytes|recvValue failed on SocketImpl", "victim",
      "The store's server (node 0's launcher) went away: usually torn down after another failure.",
      literals=("Failed to recv", "recvValue failed"), suggests=("rank-crash", "rank-as-device-id"),
      family="peer-lost", effect="side", specificity=0.6),
    S("connection-closed-by-peer", "A peer's connection dropped mid-collective",
      r"Connection closed by peer|Read error \[[^\]]*\]:\d+: Connection reset by peer", "victim",
      "The rank on the other end of a gloo pair died or was torn down: find which one.",
      literals=("Connection closed by peer", "Connection reset by peer"),
      suggests=("rank-crash", "collective-mismatch", "link-down"), family="peer-lost", effect="side",
      specificity=0.7),
    # -- NCCL and gloo transports -------------------------------------------------------------
    S("nccl-connect-failed", "NCCL could not connect to a peer",
      r"NCCL WARN .*Connect to \S+ failed|Call to connect (?:returned|failed)", "culprit",
      "NCCL dialed a peer's advertised address and could not reach it: often the wrong interface "
      "(docker0, a veth, a second NIC) was chosen, or a firewall drops NCCL's ports.",
      literals=("Connect to ", "Call to connect"), suggests=("wrong-socket-interface", "firewall", "wrong-master-addr"),
      family="connect-failed", specificity=0.75),
    S("nccl-remote-error", "NCCL lost a peer",
      r"remote process exited or there was a network error|ncclRemoteError|Connection closed by remote peer",
      "victim", "The NCCL peer on the other end went away: it crashed, or the link between them failed.",
      literals=("remote process exited", "ncclRemoteError", "Connection closed by remote peer"),
      suggests=("rank-crash", "link-down", "firewall"), family="peer-lost", specificity=0.65),
    S("ib-port-event", "An InfiniBand/RoCE port went down or flapped",
      r"NET/IB\w* ?: ?Got async event ?: ?port (?:error|down)|IBV_EVENT_PORT_ERR|IBV_EVENT_LID_CHANGE", "culprit",
      "The HCA reported a port event: a cable, a switch port or the link training failed.",
      literals=("Got async event", "IBV_EVENT_PORT_ERR", "IBV_EVENT_LID_CHANGE"), suggests=("link-down",),
      family="ib-port", specificity=0.85),
    S("ib-completion-error", "An InfiniBand/RoCE transfer completed with an error",
      r"NET/IB\w* ?: ?Got completion (?:from peer \S+ )?with (?:error|status=) ?\d+|NET/IB\w* Got completion error \d+",
      "culprit", "Error 12 is a transport retry timeout: the two NICs cannot reach each other (link, routing, "
      "RoCE setup); other codes follow a peer that went away.",
      literals=("Got completion",), suggests=("link-down", "rank-crash"), family="ib-port", specificity=0.75),
    S("ib-qp-failed", "NCCL could not set up an InfiniBand queue pair",
      r"Call to ibv_(?:modify|create)_qp failed", "culprit",
      "Queue pair setup failed: often fabric configuration (GID index, rails that only reach their own "
      "index, RoCE routing) rather than a failed link.",
      literals=("ibv_modify_qp failed", "ibv_create_qp failed"), suggests=("link-down",), family="ib-port",
      specificity=0.3),
    S("collective-timeout", "Collective timed out waiting for a peer",
      r"Timed out waiting \d+ms for (?:recv|send) operation|Watchdog caught collective operation timeout"
      r"|NCCL communicator was aborted", "victim",
      "This rank waited in a collective for a peer that never joined it.",
      literals=("Timed out waiting", "Watchdog caught collective", "communicator was aborted"),
      suggests=("straggler-rank", "collective-mismatch", "link-down"), family="collective-stall", effect="side",
      specificity=0.6),
    S("duplicate-gpu", "NCCL: two ranks on one GPU", r"Duplicate GPU detected", "culprit",
      "Two ranks of one communicator use the same CUDA device: set_device(local_rank) is missing.",
      literals=("Duplicate GPU detected",), suggests=("missing-set-device", "too-few-gpus"), family="device-index",
      specificity=0.7),
    S("invalid-device-ordinal", "CUDA: invalid device ordinal", r"invalid device ordinal", "culprit",
      "This rank asked for a CUDA device index the node does not have.", literals=("invalid device ordinal",),
      suggests=("too-few-gpus", "rank-as-device-id"), family="device-index", specificity=0.85),
    S("destroy-not-called", "destroy_process_group() was not called before exit",
      r"destroy_process_group\(\) was not called before program exit|process group has NOT been destroyed before",
      "neutral", "The process group was never torn down; resources may leak.",
      literals=("destroy_process_group() was not called", "has NOT been destroyed"),
      suggests=("missing-destroy-process-group",), family="teardown", effect="side", specificity=0.9),
    S("default-pg-twice", "Default process group initialized twice",
      r"trying to initialize the default process group twice", "culprit",
      "init_process_group ran again in a process whose group was never destroyed.",
      literals=("default process group twice",), suggests=("missing-destroy-process-group",), family="teardown",
      specificity=0.9),
    S("gloo-connect-failed", "gloo could not connect to a peer's advertised address", r"Gloo connectFullMesh failed",
      "victim", "Read remote=[...]: a peer advertised an address this rank cannot reach; 127.0.0.1 means "
      "that peer's GLOO_SOCKET_IFNAME (or host name) points at its loopback.",
      literals=("Gloo connectFullMesh failed",), suggests=("wrong-socket-interface", "firewall"),
      family="connect-failed"),
    S("gloo-no-address", "gloo cannot find the socket interface", r"Unable to find address for", "culprit",
      "GLOO_SOCKET_IFNAME names an interface this host does not have.", literals=("Unable to find address for",),
      suggests=("wrong-socket-interface",), family="interface", specificity=0.9),
    S("nccl-no-interface", "NCCL finds no socket interface",
      r"(?i)no socket interface found|Bootstrap : no socket interface|No usable listening interface"
      r"|is neither AF_INET\(2\) nor AF_INET6|Socket creation failed : Address family not supported", "culprit",
      "NCCL has no usable socket interface: NCCL_SOCKET_IFNAME names one this host lacks, or the "
      "container has nothing but loopback.",
      literals=("o socket interface", "o usable listening interface", "is neither AF_INET",
                "Address family not supported"),
      suggests=("wrong-socket-interface",), family="interface", specificity=0.9),
    S("gloo-loopback-fallback", "gloo fell back to the loopback address",
      r"Unable to resolve hostname to a \(local\) address\. Using the loopback", "culprit",
      "The host name resolves to no local address, so gloo advertises 127.0.0.1 and its peers dial themselves.",
      literals=("Unable to resolve hostname to a (local) address",), suggests=("wrong-socket-interface",),
      family="interface", specificity=0.9),
    # -- the job's own setup -------------------------------------------------------------------
    S("nccl-not-available", "The nccl backend is not available here",
      r"doesn't have NCCL built in|NCCL is not available|No CUDA GPUs are available|Found no NVIDIA driver"
      r"|ProcessGroupNCCL is only supported with GPUs|NCCL support is not compiled", "culprit",
      "nccl was requested on a host (or a torch build) without CUDA GPUs.",
      literals=("NCCL built in", "NCCL is not available", "No CUDA GPUs", "no NVIDIA driver",
                "only supported with GPUs", "NCCL support is not compiled"),
      suggests=("nccl-without-gpu",), family="backend", specificity=0.95),
    S("rank-env-missing", "Launcher variables missing (RANK, WORLD_SIZE, ...)",
      r"environment variable (?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) expected, but not set"
      r"|KeyError: '(?:RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|GROUP_RANK)'"
      r"|_env_error\(\"(?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT)\"\)"
      r"|^(?:\[rank\d+\]: )?\s+.*environ\[['\"](?:RANK|LOCAL_RANK|WORLD_SIZE)['\"]\]", "culprit",
      "The script was not started by torchrun or another launcher (or the launcher variables were wiped); "
      "a traceback cut short may end at the indented line that read the variable.",
      literals=("expected, but not set", "KeyError: 'RANK'", "KeyError: 'LOCAL_RANK'", "KeyError: 'WORLD_SIZE'",
                "KeyError: 'LOCAL_WORLD_SIZE'", "KeyError: 'MASTER_", "KeyError: 'GROUP_RANK'", "_env_error(",
                "environ['RANK']", 'environ["RANK"]', "environ['LOCAL_RANK']", 'environ["LOCAL_RANK"]',
                "environ['WORLD_SIZE']", 'environ["WORLD_SIZE"]'),
      suggests=("no-launcher",), family="launcher-variable", specificity=0.95),
    S("collective-mismatch-detail", "Ranks called different collectives (DETAIL or NCCL's check)",
      r"Detected mismatch between collectives on ranks|Mismatch between collective|Mismatched collective detected",
      "culprit", "Ranks called different collectives or shapes; the message names both sides.",
      literals=("ismatch between collective", "Mismatched collective detected"), suggests=("collective-mismatch",),
      family="collective-stall", specificity=0.95),
    S("monitored-barrier-missing-ranks", "DETAIL's monitored barrier names the ranks that never arrived",
      r"Ranks? [\d, ]+ failed to pass monitoredBarrier", "victim",
      "Rank 0 waited at TORCH_DISTRIBUTED_DEBUG=DETAIL's barrier; the ranks it names took another path.",
      literals=("monitoredBarrier",), suggests=("collective-mismatch", "straggler-rank"), family="collective-stall"),
    S("size-mismatch", "Tensor sizes differ across ranks",
      r"(?i)(?:size|length) mismatch|sizes? (?:do|does) not match|Expected .* to have the same size", "culprit",
      "Ranks passed tensors of different shapes to one collective.", literals=("ismatch", "not match", "same size"),
      suggests=("collective-mismatch",), family="collective-stall", specificity=0.5),
    S("nccl-invalid-usage", "NCCL invalid usage", r"ncclInvalidUsage", "neutral",
      "NCCL rejected how it was called; the 'Last error' line says why.", literals=("ncclInvalidUsage",)),
    # -- a process dies ---------------------------------------------------------------------
    S("out-of-memory", "A rank ran out of GPU memory", r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory",
      "culprit", "This rank could not allocate GPU memory and died; the others then time out or are torn down.",
      literals=("out of memory", "OutOfMemoryError"), suggests=("rank-crash",), family="exit"),
    S("nccl-shm-failed", "NCCL cannot create or attach its shared-memory segments",
      r"Error while (?:creating|attaching to) shared memory segment|posix_fallocate failed|failed to extend /dev/shm"
      r"|shm_open failed", "culprit",
      "/dev/shm is too small (a container's 64 MB default) or not writable for NCCL's segments; a failed "
      "attach to a peer's segment is another matter.",
      literals=("shared memory segment", "posix_fallocate failed", "failed to extend /dev/shm", "shm_open failed"),
      suggests=("shm-exhausted",), family="shm", specificity=0.85),
    S("dataloader-bus-error", "A DataLoader worker died of a bus error (shared memory)",
      r"killed by signal: Bus error|insufficient shared memory", "culprit",
      "DataLoader workers hand batches over through /dev/shm; a full /dev/shm kills them with SIGBUS.",
      literals=("killed by signal: Bus error", "insufficient shared memory"), suggests=("shm-exhausted",),
      family="shm", specificity=0.85),
    S("nccl-system-error", "NCCL: unhandled system error", r"unhandled system error|ncclSystemError", "culprit",
      "A system call inside NCCL failed (shared memory, sockets); NCCL_DEBUG=WARN prints which one.",
      literals=("unhandled system error", "ncclSystemError"),
      suggests=("shm-exhausted", "wrong-socket-interface", "firewall"), family="nccl-error", specificity=0.35),
    S("cuda-runtime-broken", "CUDA itself fails under NCCL (driver, build or hardware)",
      r"CUDA driver version is insufficient|unhandled cuda error|ncclUnhandledCudaError|no kernel image is available"
      r"|is not compatible with the current PyTorch installation", "culprit",
      "The driver is older than the CUDA runtime, NCCL was built for another CUDA, or the GPU misbehaves: "
      "not a distributed-setup mistake.",
      literals=("driver version is insufficient", "unhandled cuda error", "ncclUnhandledCudaError",
                "no kernel image is available", "not compatible with the current PyTorch"),
      family="cuda", outside=True),
    S("worker-torn-down", "Launcher tore workers down after a failure",
      r"(?:Sending|Terminating|Closing) process \d+ (?:closing|via) signal SIGTERM|^Killing subprocess \d+", "victim",
      "The launcher killed the healthy workers of its node because another worker failed; the one it "
      "did not signal is the one that failed.", ("launcher",),
      literals=("closing signal SIGTERM", "via signal SIGTERM", "Killing subprocess"), family="teardown",
      effect="side", keep=256),
    S("killed-by-signal", "A worker was killed by a signal",
      r"exitcode\s*:\s*-(?:9|6|11)\b|(?i:signal) (?:9|6|11) \(SIG[A-Z]+\) received by PID"
      r"|terminated with signal SIG(?:KILL|ABRT|SEGV)|is killed by signal: Killed"
      r"|exits with return code = -(?:9|6|11)\b|died with <Signals\.SIG(?:KILL|ABRT|SEGV): \d+>", "culprit",
      "A worker died by a signal (-9: SIGKILL, often the OOM killer) without a Python traceback; "
      "torchrun, DeepSpeed's and accelerate's launchers each word it their own way.", ("launcher",),
      literals=("exitcode", "received by PID", "terminated with signal", "killed by signal: Killed",
                "exits with return code = -", "died with <Signals.SIG"),
      suggests=("rank-crash",), family="exit", specificity=0.75, keep=16),
    S("child-failed", "torchrun's failure report (Root Cause block)", r"Root Cause \(first observed failure\)",
      "neutral", "The launcher's first observed failure, which can be a victim that timed out first.", ("launcher",),
      literals=("Root Cause (first observed failure)",), family="exit", effect="side"),
    S("python-exception", "An uncaught Python exception",
      r"^(?:\[rank\d+\]: )?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): ", "neutral",
      "The last line of a traceback: the error as Python raised it.", ("rank",), literals=("Error: ", "Exception: "),
      family="exit"),
    # -- context: lines that carry facts for diagnose's rules, no cause of their own ----------------
    S("ctx-worker-exit", "A worker's exit code as the launcher saw it",
      r"failed \(exitcode: -?\d+\) local_rank: \d+|exitcode\s*:\s*-?\d+ \(pid|rank\s*:\s*\d+ \(local_rank: \d+\)",
      "neutral", "Exit code, local rank and pid of the worker that failed first.", (),
      literals=("failed (exitcode:", "(local_rank:", "exitcode  :"), effect="context", keep=16),
    S("ctx-set-device", "The call that picks this process's GPU", r"set_device\(", "neutral",
      "Which variable chooses the device: rank, local_rank, or something else.", (), literals=("set_device(",),
      effect="context"),
    S("ctx-devices", "Device counts and indices",
      r"[Dd]evice [Cc]ount:? ?\d+|device_count\(\)\s*[=:]\s*\d+|CUDA_VISIBLE_DEVICES=\S+|cuda:\d+"
      r"|type='cuda', index=\d+|[Ss]et(?:ting)? device to \d+|cudaDev \d+", "neutral",
      "How many devices a process sees, and which index it asked for.", (),
      literals=("evice Count", "evice count", "device_count()", "CUDA_VISIBLE_DEVICES=", "cuda:", "type='cuda', index=",
                "device to ", "cudaDev "), effect="context"),
    S("ctx-topology", "Node, process and world counts",
      r"--nnodes[= ]\d+|--nproc[_-]per[_-]node[= ]\d+|\bnnodes[=: ]+\d+|\bnranks \d+|WORLD_SIZE=\d+"
      r"|world_size=\d+|\bsize=\d+\)", "neutral", "How many nodes and ranks the job has.", (),
      literals=("nnodes", "nproc_per_node", "nproc-per-node", "nranks ", "WORLD_SIZE=", "world_size=", ", size="),
      effect="context"),
    S("ctx-interfaces", "The socket interfaces NCCL chose",
      r"NET/Socket ?: ?Using|Bootstrap ?: ?Using|^\s*\[\d+\](?:br-|veth|docker|virbr|cni|flannel)", "neutral",
      "Which interfaces NCCL will use: docker bridges and veths beside the real NIC are a classic trap.", (),
      literals=("NET/Socket : Using", "Bootstrap : Using", "]br-", "]veth", "]docker", "]virbr", "]cni", "]flannel"),
      effect="context", keep=24),
    S("ctx-work-progress", "Where each rank's collectives stand",
      r"last enqueued (?:NCCL )?work: \d+, last completed (?:NCCL )?work: \d+", "neutral",
      "The last collective a rank enqueued and completed: ranks that disagree are out of step.", (),
      literals=("last enqueued",), effect="context"),
)

SIGNATURES_BY_ID = {signature.id: signature for signature in SIGNATURES}


_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?")


def _is_traceback_source(line: str) -> bool:
    """An indented line of a Python traceback (a frame or its source), not the error itself."""
    return _RANK_PREFIX.sub("", line).startswith((" ", "\t"))


def match_text(text: str, signatures: Iterable[Signature] = SIGNATURES) -> dict[str, tuple[str, int]]:
    """Signature id -> (representative line, number of matching lines) for one output.

    The representative line is the first match that is not the source line of a traceback
    frame (the `raise ...` that quotes the message), else the first match."""
    found: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    for signature in signatures:
        regex = signature.regex
        matches = [line.rstrip() for line in lines if regex.search(line)]
        if matches:
            best = next((line for line in matches if not _is_traceback_source(line)), matches[0])
            found[signature.id] = (best, len(matches))
    return found


def match_capture(capture: Capture) -> tuple[Symptom, ...]:
    """Every signature found in every rank's output and every launcher's log."""
    symptoms = []
    rank_signatures = [s for s in SIGNATURES if "rank" in s.where]
    launcher_signatures = [s for s in SIGNATURES if "launcher" in s.where]
    for rank in capture.ranks:
        for signature_id, (line, count) in match_text(rank.stderr + "\n" + rank.stdout, rank_signatures).items():
            symptoms.append(_symptom(signature_id, f"rank {rank.shown_rank}", rank.node, rank.local_rank,
                                     rank.shown_rank, line, count))
    for node in capture.nodes:
        for signature_id, (line, count) in match_text(node.log, launcher_signatures).items():
            symptoms.append(_symptom(signature_id, f"node {node.node} launcher", node.node, None, None, line, count))
    return tuple(symptom for symptom in symptoms
                 if on_enough_nodes(symptom.id, {other.node for other in symptoms if other.id == symptom.id}))


def on_enough_nodes(signature_id: str, nodes: set) -> bool:
    """Whether a signature was seen on as many nodes (or log files) as it needs to mean what it says."""
    return len(nodes) >= SIGNATURES_BY_ID[signature_id].on_nodes


def _symptom(signature_id, source, node, local_rank, rank, line, count) -> Symptom:
    signature = SIGNATURES_BY_ID[signature_id]
    return Symptom(
        id=signature_id,
        title=signature.title,
        role=signature.role,
        source=source,
        node=node,
        local_rank=local_rank,
        rank=rank,
        line=line,
        count=count,
    )
