"""The network half of the signature catalog, and what a signature is.

A signature is a pattern over one line of a rank's output or a launcher's log, grouped with
its siblings into a family by meaning (every wording of a failed launcher-variable lookup,
every refused or timed-out connection, every IB port event ...), with the role it usually
plays (the culprit's own error, a victim waiting for someone else, or neutral context) and
its effect: a primary sign of a cause, a side effect that follows any failure (exit
warnings, torn-down workers, victims' watchdog lines), or context that only carries facts
(device counts, interfaces, node counts) for diagnose's rules. Patterns are written from
real torch/gloo/NCCL/DeepSpeed/accelerate output and tolerate neighbouring versions.
This module holds the signatures of ports and addresses; signatures_transport.py those of NCCL's
and gloo's transports; signatures_devices.py those of the job's devices and teardown;
signatures_job.py those of its own setup and processes; signatures_context.py py-spy's stacks and
context lines; symptoms.py matches them all.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

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
    where: tuple[str, ...] = EVERYWHERE  # (): diagnose reads them, recordings do not (context, faultlab's own doing)
    # Literal fragments every matching line contains: diagnose searches for these first.
    literals: tuple[str, ...] = ()
    # Where a literal alone is common in ordinary output ("Epoch" on every line of a training log): two words every
    # matching line holds in this order, in any case, searched for in the literals' place.
    prefilter: tuple[str, str] | tuple[()] = ()
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
# torch >= 2.4's libuv store server: "... failed to listen on any local network address. port: 29500, useIpv6:
# false, code: -98, name: EADDRINUSE, message: address already in use" (useIpv6 printed 0 or false by version).
LIBUV_LISTEN_FAILED = (r"server socket has failed to (?:bind|listen on any local network address)\. port: \d+, "
                       r"useIpv6: (?:\d|true|false), code: ")
LIBUV_EADDRINUSE = r"(?:98|48|4091)\b"  # libuv's negative errno: Linux, macOS, Windows (libuv's own numbering)
# vLLM, SGLang, verl and Megatron-Core take another port themselves when theirs is taken ("... Retrying with a
# new port.", "..., trying port N", "... Binding to a random available port instead."): the run went on, so the
# line is no failure
PORT_TAKEN_BUT_RECOVERED = (r"(?!.{0,20}?(?:[Rr]etrying with a new port|[Bb]inding to a random available port"
                            r"|trying port \d+))")
NETWORK: tuple[Signature, ...] = (
    # -- ports and addresses -------------------------------------------------------------
    S("port-busy-check", "The launcher found the port taken before starting",
      rf"another process is utilizing it|[Pp]ort \S* ?is already in use{PORT_TAKEN_BUT_RECOVERED}", "culprit",
      "accelerate (and other launchers) check MASTER_PORT first and name it taken by another process.",
      literals=("another process is utilizing it", "is already in use"), suggests=("port-in-use",),
      family="port-taken", specificity=0.9),
    S("store-create-cut", "A traceback that ends where the store is created",
      r"^(?:\[rank\d+\]: )?\s+(?:store = |return )?TCPStore\(", "culprit",
      "The trace was cut before its message, at the line that creates the TCPStore: the store's port was "
      "taken on the host, or the others could not reach it. Weak, so any primary sign outranks it.",
      literals=("TCPStore(",), suggests=("port-in-use", "wrong-master-port", "wrong-master-addr"),
      family="store-create", effect="side", specificity=0.4),
    S("address-in-use", "Store server cannot bind MASTER_PORT (EADDRINUSE)",
      rf"(?i)address already in use{PORT_TAKEN_BUT_RECOVERED}|EADDRINUSE|errno: 98\b"
      r"|Only one usage of each socket address|errno: 10048\b"
      # HCCL (Ascend NPUs): EJ0003, and its listen failure that asks whether another process holds the port
      r"|The IP address and port have been bound already|whether the port is being used by other process"
      # torch elastic's store, once its retries of a taken port are spent
      r"|on \S+, port: \d+ already in use"
      # torch >= 2.4's libuv store cut before the code's name: EADDRINUSE is -98 on Linux, -48 on macOS, -4091 on Windows
      rf"|{LIBUV_LISTEN_FAILED}-{LIBUV_EADDRINUSE}",
      "culprit",
      "Something else already listens on MASTER_PORT on the master node.",
      literals=("address already in use", "Address already in use", "EADDRINUSE", "errno: 98", "useIpv6: ",
                "Only one usage of each socket address", "errno: 10048", "port have been bound already",
                "port is being used by other process", "already in use"),
      # alone it reads as a leftover process or another job on the node; a second node 0 is told by the rules
      suggests=("port-in-use", "shared-master-port"), family="port-taken", specificity=0.9),
    S("server-bind-failed", "Store server failed to bind its port",
      # libuv's EADDRINUSE is address-in-use's; its other codes (EACCES -13 ...) only here
      r"socket has failed to bind to \S+(?: \(errno: \d+|\.?\s*$)"
      rf"|{LIBUV_LISTEN_FAILED}-(?!{LIBUV_EADDRINUSE})\d+"
      # the reason cut off (a paste, or a note that kept only the first line)
      r"|server socket has failed to listen on any local network address\.?\s*$", "culprit",
      "The store server could not bind MASTER_PORT; the errno says why (98: taken, 13: a port below 1024). "
      "torch >= 2.4's libuv server words it 'failed to bind (or to listen ...). port: ..., code: ..., name: ...'.",
      literals=("has failed to bind", "has failed to listen on any local network address"),
      suggests=("port-in-use",), family="port-taken", specificity=0.6),
    S("master-port-invalid", "MASTER_PORT or the rendezvous port is not a port number",
      r"port must have value from 0 to 65535|rendezvous: port number missing"
      r"|port number of the rendezvous endpoint .{0,300}? must be an integer", "culprit",
      "The port given to the store (MASTER_PORT, init_method's tcp://host:port, --rdzv_endpoint) is missing or "
      "out of range: the launch command or the environment spells it wrong.",
      literals=("port must have value from 0 to 65535", "port number missing", "port number of the rendezvous endpoint"),
      suggests=("wrong-master-port",), family="port-config", specificity=0.85),
    S("client-connect-timeout", "Client timed out connecting to the store",
      # the line may end at the duration, or a few letters into "while", where a wrap or a paste cut it
      r"client socket has timed out after \d+m?s(?:\s+w|\s*$)|connect\(\) timed out(?:\.|\s*$)"
      # torch >= 2.4's retry line, which names the host, where the connect itself timed out; oneCCL's key-value
      # store (Intel GPUs)
      r"|TCP client failed to connect/validate to host \S+ - timed out \([^)]{0,100}\): Connection timed"
      r"|kvs_init: connection time \(\d+\) >= limit",
      "culprit", "This process dialed host:port and no store answered there before the deadline: packets dropped on "
      "the way, no such host, or a host up where nothing listened yet (torch retries refusals until it gives up): "
      "a store host that came up too late, or the wrong port.",
      literals=("client socket has timed out", "connect() timed out", "failed to connect/validate to host",
                "kvs_init: connection time"),
      suggests=("firewall", "wrong-master-addr", "late-store-host", "wrong-master-port"), family="connect-failed"),
    S("no-route-to-host", "No host answers at the address dialed",
      r"^(?!.*ssh: connect to host)(?:.*No route to host|.*failed to connect to any network address of"
      r"|.*Network is unreachable)", "culprit",
      "Nothing on the link answers for that address: a wrong MASTER_ADDR, or a host that is down.",
      literals=("No route to host", "failed to connect to any network address", "Network is unreachable"),
      suggests=("wrong-master-addr", "link-down"), family="connect-failed"),
    S("connection-refused", "Connection refused", r"(?i)^(?!.*ssh: connect to host).*connection refused", "culprit",
      "Nothing listens at the address dialed (or a firewall rejects it).", literals=("onnection refused",),
      suggests=("wrong-master-port", "firewall", "wrong-socket-interface"), family="connect-failed",
      specificity=0.7),
    S("client-connect-failed", "Client could not connect to the store's address",
      # not torch's first try of localhost over IPv6, which fails (errno 97/99) on a host without it before the
      # IPv4 try: a warning, not the failure
      r"client socket has failed to connect to (?!\[(?:localhost|::1)\]:\d+ \(errno: 9[79]\b)"
      r".{0,300}?\((?:errno|system error): -?\d+", "culprit",
      "This process could not reach MASTER_ADDR:MASTER_PORT; the errno says how (111 refused, 110 timed "
      "out, 113 no route, 22 or 10049 an address that is not valid).",
      literals=("client socket has failed to connect",),
      suggests=("wrong-master-addr", "firewall", "wrong-master-port"), family="connect-failed", specificity=0.7),
    S("connect-timed-out", "A TCP connect timed out: nothing answered the SYN",
      r"connect (?:to \S+ )?returned Connection timed out|connect \[[^\]]{1,300}\]:\d+: Connection timed out"
      r"|The server socket on \S+ has timed out, will retry|SO_ERROR: Connection timed out"
      # torch <= 1.8's store client, as the exception's whole message
      r"|^(?:RuntimeError: )?Connection timed out\s*$", "culprit",
      "NCCL, gloo or torch dialed an address and no answer came at all (not even a refusal): a firewall "
      "dropping packets, an interface the peer cannot route to, or a host that is down.",
      literals=("returned Connection timed out", ": Connection timed out", "has timed out, will retry",
                "Connection timed out"),
      suggests=("firewall", "wrong-socket-interface", "wrong-master-addr"), family="connect-failed", specificity=0.75),
    S("ssh-unreachable", "The launcher could not reach a node over ssh",
      r"was not reachable via ssh|ssh exited with exit code 255|ssh: connect to host \S+ port \d+: ", "culprit",
      "DeepSpeed's and pdsh's multi-node launch start every node over ssh: a host key, an ssh port or a login "
      "that fails is not the job's own network setup.",
      literals=("was not reachable via ssh", "ssh exited with exit code 255", "ssh: connect to host"),
      family="ssh", outside=True),
    S("name-not-resolved", "A host name does not resolve",
      r"gai error: -\d+|Name or service not known|Temporary failure in name resolution|[Hh]ost not found"
      r"|nodename nor servname|getaddrinfo failed|No address associated with hostname|gaierror"
      r"|\[Errno -[2358]\]|hostname of the rendezvous endpoint .{0,300}? must be a dot-separated list"
      r"|Unable to detect suitable master address|No such host is known", "culprit",
      "A host name (MASTER_ADDR, the rendezvous endpoint, this host's own name) has no address here, or is "
      "not a host name at all.",
      literals=("gai error", "Name or service not known", "Temporary failure in name resolution", "ost not found",
                "nodename nor servname", "getaddrinfo failed", "No address associated with hostname", "gaierror",
                "[Errno -2]", "[Errno -3]", "[Errno -5]", "[Errno -8]", "hostname of the rendezvous endpoint",
                "Unable to detect suitable master address", "No such host is known"),
      # a pod's name resolves only once the pod runs: a store host started late reads the same
      suggests=("wrong-master-addr", "late-store-host"), family="name-resolution"),
    S("rendezvous-connect-failed", "The launcher could not reach the rendezvous store",
      # (not a keep-alive that failed so, rendezvous-keepalive-failed's: that store had been reached; nor the
      # shutdown that every exit path tries, joined or not, after a run that succeeded too)
      r"(?<!error of type )RendezvousConnectionError|connection to the C10d store has failed", "culprit",
      "This node's launcher could not connect to --rdzv_endpoint: wrong host or port, or blocked.", ("launcher",),
      literals=("RendezvousConnectionError", "connection to the C10d store has failed"),
      suggests=("wrong-master-addr", "firewall", "wrong-master-port"), family="connect-failed", specificity=0.7),
    S("rendezvous-keepalive-failed", "A launcher lost the rendezvous store after joining it",
      r"has failed to send a keep-alive heartbeat to the rendezvous", "victim",
      "torchrun's agents send keep-alives to the c10d store only once they joined the rendezvous: the store was "
      "reached, then went away with its host (node 0's agent), after a failure there or with its machine.",
      ("launcher",), literals=("keep-alive heartbeat",), suggests=("store-host-lost", "rank-crash"),
      family="peer-lost", effect="side", specificity=0.5),
    S("rendezvous-closed", "The rendezvous was closed before this node could join it",
      r"RendezvousClosedError", "victim",
      "The other nodes' launchers had already closed the rendezvous: they finished, or gave up after a "
      "worker failed past --max-restarts; this node came late or was left behind.", ("launcher",),
      literals=("RendezvousClosedError",), suggests=("rank-crash", "world-size-mismatch"), family="waiting",
      effect="side", specificity=0.4),
    S("store-not-listening-yet", "Nothing listens at the store's address yet: the client keeps retrying",
      r"No socket on \(\S+, \d+\) is listening yet", "victim",
      "torch's store client found the address refusing and retries (an INFO line): the store host is late, or "
      "this rank dials a port (or host) where no store will ever listen.",
      literals=("is listening yet",), suggests=("wrong-master-port", "late-store-host", "wrong-master-addr"),
      family="connect-failed", effect="side", specificity=0.5),
    S("rendezvous-timeout", "The rendezvous timed out waiting for nodes", r"RendezvousTimeoutError", "victim",
      "This launcher waited for the other nodes to join the rendezvous; some never came.", ("launcher",),
      literals=("RendezvousTimeoutError",), suggests=("wrong-master-addr", "firewall", "world-size-mismatch"),
      family="waiting", specificity=0.6),
    S("store-wait-timeout", "Store wait timed out for keys other ranks never wrote",
      r"wait timeout after \d+ms|Timed out after \d+ seconds waiting for keys|got error: Socket Timeout"
      r"|waitForInput: socket .{0,300}? timed out after \d+ms|(?:DistStoreError|RuntimeError): (?:The inner error: )?(?:Socket|Wait) [Tt]imeout\s*$",
      "victim",
      "This rank waited for other ranks to register; the keys name the ranks that never came.",
      literals=("wait timeout after", "waiting for keys", "Socket Timeout", "waitForInput: socket", "Wait timeout"),
      suggests=("straggler-rank", "wrong-master-port", "wrong-socket-interface", "rank-crash"),
      family="waiting", specificity=0.6),
    # A FileStore (init_method="file://...") is a shared file: no port or interface to get wrong.
    S("filestore-wait-timeout", "A FileStore get timed out for a key other ranks never wrote",
      r"Timeout waiting for key: \S+ after \d+ ?ms|got error: Timeout waiting for key", "victim",
      "This rank waited in the shared store file for a key another rank had to write (NCCL's id, a barrier's "
      "count): that rank was late or had died.", literals=("Timeout waiting for key",),
      suggests=("straggler-rank", "rank-crash"), family="waiting", specificity=0.6),
    S("store-barrier-waiting", "Ranks still waiting at init's store barrier",
      # torch <= 1.13 names the rank next, torch 2 the seconds waited so far
      r"Waiting in store based barrier to initialize process group for (?:rank|[\d.]+ seconds)", "victim",
      "init_process_group's barrier logs this while fewer ranks than the world size have arrived "
      "(worker_count, num_workers_joined in torch 2, below world_size): a slow or missing rank, or a wrong world "
      "size.",
      literals=("Waiting in store based barrier",), suggests=("straggler-rank", "world-size-mismatch", "rank-crash"),
      family="waiting", effect="side", specificity=0.4),
    S("store-barrier-timeout", "The store-based barrier of init_process_group timed out",
      r"(?i)timed out initializing process group in store based barrier"
      # SGLang's barrier after loading the model, as rank 0 words it
      r"|could finish the model loading, but there are other ranks that didn't", "victim",
      "Fewer ranks than the world size reached the barrier (init_process_group's, or a server's after loading "
      "the model): the rest are late, dead, or were never started.",
      literals=("store based barrier", "there are other ranks that didn't"),
      suggests=("straggler-rank", "world-size-mismatch", "rank-crash"),
      family="waiting", specificity=0.6),
    S("rank-assignment-timeout", "A launcher waited at the store for its workers' ranks, which never came",
      r"wait timeout after \d+ms, keys: \S*torchelastic/assigned_ranks/\d+", "victim",
      "This node's launcher reached a store and waited there for the ranks node 0's launcher assigns; node 0 "
      "never wrote them: it is not hosting this store (another job's, on the same address and port), or it "
      "died after hosting it. The key's prefix is the --rdzv_id this node runs under.", ("launcher",),
      literals=("torchelastic/assigned_ranks/",), suggests=("shared-master-port", "world-size-mismatch"),
      family="rank-assignment", specificity=0.7),
    S("store-ping-mismatch", "The store at MASTER_ADDR:MASTER_PORT is not this job's",
      # torch <= 2.2 found out later, when a wait's answer came in another protocol's shape
      r"Ping failed, invalid (?:nonce|value) returned|(?:Stop_waiting|wait_canceled) response is expected", "culprit",
      "The client's handshake got an answer it did not expect: another job's store, or another program, "
      "listens on that address and port.",
      literals=("Ping failed, invalid", "response is expected"), suggests=("shared-master-port", "port-in-use"),
      family="rank-assignment",
      specificity=0.7),
    S("rendezvous-clients-timeout", "Master's store timed out waiting for the other nodes",
      r"Timed out after \d+ seconds waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined", "victim",
      "Node 0's launcher waited for the other nodes' launchers, and not all came.",
      literals=("waiting for clients", "waiting for workers"),
      suggests=("wrong-master-port", "wrong-master-addr", "firewall", "duplicate-node-rank"), family="waiting",
      specificity=0.7),
    S("split-world", "Several nodes each host a store and wait for clients: the job split",
      r"Timed out after \d+ seconds waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined", "culprit",
      "Only the store host prints 'clients joined'; on several nodes at once it means several stores, "
      "each node its own master (MASTER_ADDR=localhost, or node rank 0 everywhere).", ("launcher",),
      literals=("waiting for clients", "waiting for workers"), suggests=("split-world",), family="split-world", specificity=0.9,
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
      r"use_libuv was requested but PyTorch was buil[dt] without libuv|(?:buil[dt]|compiled) without libuv support"
      r"|libuv TCPStore backend does not support initialization with an listen fd",
      "culprit",
      "torch's default store backend (libuv, since 2.4) is missing from this build, or cannot take the listening "
      "socket it was handed: set USE_LIBUV=0 (or use_libuv=False) to use the legacy store. torch 2.4-2.6 spell "
      "it 'build without'.",
      literals=("without libuv", "does not support initialization with an listen fd"),
      suggests=("store-backend-unavailable",), family="store-backend",
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
      r"(?i:failed to recv), got 0 bytes|Failed to send, sent 0 bytes|(?:send|recv)\w{0,40} failed on SocketImpl"
      r"|got error: Connection reset by peer"
      # torch <= 2.1's store client, as the exception's whole message
      r"|^(?:RuntimeError|torch\.distributed\.DistNetworkError): (?:Connection reset by peer|Broken pipe)\s*$",
      "victim",
      "The store's server (node 0's launcher) went away: usually torn down after another failure; lost while the "
      "store was still being created, the server reset the handshake (a rule reads that).",
      literals=("ailed to recv", "Failed to send, sent 0 bytes", "failed on SocketImpl", "Connection reset by peer",
                "Broken pipe"),
      suggests=("rank-crash", "store-host-lost"),
      family="peer-lost", effect="side", specificity=0.6),
    S("connection-closed-by-peer", "A peer's connection dropped mid-collective",
      r"Connection closed by peer|Read error \[[^\]]{0,100}\]:\d+: Connection reset by peer"
      r"|Socket (?:unexpectedly )?closed \[|writev \[[^\]]{0,100}\]:\d+: (?:Broken pipe|Connection reset by peer)"
      r"|short read: got \d+ bytes while expecting to read", "victim",
      "The rank on the other end of a gloo pair died or was torn down: find which one.",
      literals=("Connection closed by peer", "Connection reset by peer", "closed [", "writev [", "short read: got"),
      suggests=("rank-crash", "collective-mismatch", "link-down"), family="peer-lost", effect="side",
      specificity=0.7),
)
