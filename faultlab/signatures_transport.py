"""The signatures of NCCL's, gloo's and TensorPipe's transports: the connections ranks make to each other once
the store has brought them together, and the interfaces they use.

What a signature is, and the ports and addresses: signatures.py.
"""

from __future__ import annotations

from .signatures import Signature

S = Signature
TRANSPORT: tuple[Signature, ...] = (
    S("nccl-connect-failed", "NCCL could not connect to a peer",
      r"NCCL WARN .{0,80}?Connect to \S+ failed|socket\w{0,40}Connect: Connect to \S+ failed|Call to connect (?:returned|failed)"
      # NCCL >= 2.27 names its socket calls ncclOsSocket*; its retries spent, it says how many it made
      r"|socket(?:Start|Poll)Connect: exceeded (?:retries|timeouts)|[Ss]ocketPollConnect: [Cc]onnect to \S+"
      r"|exceeded error retry count",
      "culprit",
      "NCCL dialed a peer's advertised address and could not reach it: often the wrong interface "
      "(docker0, a veth, a second NIC) was chosen, or a firewall drops NCCL's ports.",
      literals=("Connect to ", "Call to connect", "Connect: exceeded", "ocketPollConnect: connect to ",
                "exceeded error retry count"),
      suggests=("wrong-socket-interface", "firewall", "wrong-master-addr"),
      family="connect-failed", specificity=0.75),
    S("nccl-remote-error", "NCCL lost a peer",
      r"remote process exited or there was a network error|ncclRemoteError|Connection closed by remote peer"
      r"|Call to (?:recv from|send to) \S+ failed : |Socket recv failed while polling for opId"
      r"|Failed to execute operation Connect from rank \d+|Error encountered progressing operation=Connect"
      r"|Proxy Call to rank \d+ failed \(Connect\)|HCCL_E_REMOTE",
      "victim", "The NCCL peer on the other end went away (or its proxy could not be reached to connect): it "
      "crashed, or the link between them failed.",
      literals=("remote process exited", "ncclRemoteError", "Connection closed by remote peer", "Call to recv from",
                "Call to send to", "Socket recv failed while polling", "operation Connect from rank",
                "progressing operation=Connect", "failed (Connect)", "HCCL_E_REMOTE"),
      suggests=("rank-crash", "link-down", "firewall"), family="peer-lost", specificity=0.65),
    S("framework-lost-a-peer", "Horovod or Ray lost a rank or a node",
      r"Horovod has been shut down\. This was caused by an exception on one of the ranks"
      r"|has been marked dead because the (?:detector|monitor) has missed too many heartbeats", "victim",
      "The framework above the collectives saw a rank fail or a node stop answering: that rank crashed, "
      "or its host or the network to it went away.",
      literals=("Horovod has been shut down", "missed too many heartbeats"), suggests=("rank-crash", "link-down"),
      family="peer-lost", specificity=0.6),
    S("hccl-heartbeat-lost", "HCCL (Ascend NPUs) lost a peer's heartbeat",
      r"ExceptionType:\[Heartbeat Lost Occurred\]", "victim",
      "HCCL, torch_npu's collective library, stopped hearing from the device it names (IP/ID): its process "
      "exited, or the network to it failed.",
      literals=("Heartbeat Lost Occurred",), suggests=("rank-crash", "link-down"), family="peer-lost",
      specificity=0.7),
    S("store-should-dump-failed", "The NCCL watchdog could not reach the store any more",
      r"Failed to check the \"should dump\" flag on TCPStore|Failed to get exception dump flag from the global store",
      "victim",
      "Printed by every surviving rank once the store's host (rank 0's launcher) is gone: after another failure, "
      "or when rank 0 finished and exited first.",
      literals=('Failed to check the "should dump" flag', "Failed to get exception dump flag"),
      suggests=("rank-crash", "store-host-lost"),
      family="peer-lost", effect="side", specificity=0.3),
    S("ib-port-event", "An InfiniBand/RoCE port went down or flapped",
      # (a device name has no spaces or colons: a bounded token keeps a long line of "NET/IB:" linear)
      # (NCCL <= 2.18 print every event as "Got async event : <event>", 2.19-2.26 every non-fatal one as "Got
      # async error event: <event>": a port active again, an SM or GID change is not the link failing)
      r"NET/IB\w* ?: ?(?:[^\s:]+:\d+ )?Got async (?:event ?: ?[\w ]{0,40}?(?:error|fatal)|error event: port error)"
      r"|NET/IB\w* ?: ?\S{1,64} async (?:fatal|non-fatal) event"
      # NCCL >= 2.29 warns of non-fatal events too (port active, an SM change): only a port error is the link;
      # its opt-in IB resiliency (NCCL_IB_RESILIENCY_PORT_FAILOVER) marks a device failed, or gives up
      r"|Got non-fatal async event: port error|NET/IB: Fatal error\. Detected \d+ failed devices"
      r"|NET/IB: Device \d+ marked as failed"
      r"|IBV_EVENT_(?:PORT_ERR|LID_CHANGE|DEVICE_FATAL|GID_CHANGE)|IB Async event on \S+: (?:port error|GID table change"
      r"|local catastrophic error|LID change)", "culprit",
      "The HCA reported an asynchronous event (port error, a catastrophic or work-queue error, a changed GID): "
      "a cable, a switch port, the link training or the adapter failed.",
      literals=("Got async event", "Got async error event: port error", "async fatal event", "async non-fatal event", "non-fatal async event: port error",
                "IBV_EVENT_", "IB Async event on", "failed devices out of", "marked as failed"),
      suggests=("link-down",),
      family="ib-port", specificity=0.85),
    S("kernel-link-down", "The kernel saw a network link go down",
      # bounded gaps: a line of thousands of "state DOWN" must not take quadratic time
      r"\b(?:mlx[45]_core|ixgbe|i40e|ice|bnxt_en|e1000e|igb|tg3|ena|gve|virtio_net)\b.{0,80}?\b(?:NIC )?[Ll]ink (?:is )?[Dd]own"
      r"|\b(?:ib|eth|en[ops]|bond|hsn)\w*: (?:[Ll]ink (?:is )?[Dd]own|carrier lost)"
      r"|Port module event: .{0,80}?[Cc]able unplugged"
      r"|\bstate:? (?:\d: )?DOWN\b.{0,40}?\bphys(?:ical)?[ _]state:? (?:\d: )?(?:POLLING|DISABLED|Polling|Disabled)"
      r"|Physical state: (?:Polling|Disabled)",
      "culprit", "The NIC's driver (dmesg, journalctl -k) or the port's status (ibstat, ibv_devinfo) says the link "
      "is down: a cable, a switch port or the adapter; the job's transfers over that link then fail.",
      literals=("ink down", "ink is down", "ink Down", "ink is Down", "carrier lost", "able unplugged", "DOWN",
                "Physical state: "),
      suggests=("link-down",), family="ib-port", specificity=0.85),
    S("ib-completion-error", "An InfiniBand/RoCE transfer completed with an error",
      r"NET/IB\w* ?: ?Got completion (?:from peer \S+ )?with (?:error|status=) ?(?:IBV_WC_\w+\()?\d+"
      r"|NET/IB\w* Got completion error \d+"
      r"|IBV_WC_RETRY_EXC_ERR|transport retry counter exceeded",
      "culprit", "Error 12 is a transport retry timeout: the two NICs cannot reach each other (link, routing, "
      "RoCE setup); other codes follow a peer that went away.",
      literals=("Got completion", "IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
      suggests=("link-down", "rank-crash"), family="ib-port", specificity=0.75),
    S("ib-qp-failed", "NCCL could not set up an InfiniBand queue pair",
      r"Call to ibv_(?:modify|create)_qp failed", "culprit",
      "Queue pair setup failed: often fabric configuration (GID index, rails that only reach their own "
      "index, RoCE routing) rather than a failed link.",
      literals=("ibv_modify_qp failed", "ibv_create_qp failed"), suggests=("link-down",), family="ib-port",
      specificity=0.3),
    S("collective-timeout", "Collective timed out waiting for a peer",
      r"Timed out waiting (?:\d+ ?m?s )?for (?:recv|send)(?: operation)?|(?:Watchdog c|\] C)aught collective operation timeout"
      r"|NCCL communicator was aborted|WorkNCCL::checkTimeout|(?:Read|Write) timeout \[[^\]]{0,100}\]"
      r"|Application timeout caused pair closure|WorkNCCL\(.{0,400}?\) timed out in blocking wait"
      r"|Timeout at NCCL work: \d+|Received a (?:dump signal due to a collective timeout|global timeout) from"
      r"|Work ran time out after \d+ milliseconds"
      # the watchdog's line as people quote it: its WorkNCCL(...) and duration without "Watchdog caught", or
      # its duration broken onto a line of its own (not a wrap's last piece, which the line joined reads)
      r"|WorkNCCL\(.{0,400}?\) ran for \d+|^\s*ran for \d+ milliseconds before timing out",
      "victim", "This rank waited in a collective for a peer that never joined it.",
      literals=("Timed out waiting", "Watchdog caught collective", "communicator was aborted", "WorkNCCL::checkTimeout",
                "Read timeout [", "Write timeout [", "Application timeout caused pair closure",
                "Timeout at NCCL work", "Received a dump signal", "timed out in blocking wait",
                "Received a global timeout", "Caught collective operation timeout", "Work ran time out after",
                # one literal for both quoted forms: each literal a watchdog line holds costs a flood of them a hit
                "ran for "),
      suggests=("straggler-rank", "collective-mismatch", "link-down"), family="collective-stall", effect="side",
      specificity=0.6),
    S("hccl-collective-timeout", "HCCL (Ascend NPUs) timed out waiting for a remote rank",
      r"has not received the Notify record from remote rank|Remote Rank did not send the data in time", "victim",
      "torch_npu's collective library waited for a peer that never joined the collective.",
      literals=("Notify record from remote rank", "did not send the data in time"),
      suggests=("straggler-rank", "collective-mismatch", "link-down"), family="collective-stall", effect="side",
      specificity=0.6),
    S("horovod-stall", "Horovod found some ranks waiting for the rest at a collective",
      r"submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks"
      r"|is stalled for longer than \d+ seconds\. Will shutdown",
      "victim", "Horovod's stall check: some ranks submitted a tensor the others did not, for over a minute: the "
      "ranks took different paths (different tensors or counts), or one is late or stuck.",
      literals=("waiting for remainder of ranks", "is stalled for longer than"),
      suggests=("collective-mismatch", "straggler-rank"),
      family="collective-stall", effect="side", specificity=0.6),
    S("watchdog-hang", "The NCCL watchdog itself hung",
      r"Heartbeat monitor timed out!|watchdog got stuck for \d+ seconds|detected no heartbeat of its watchdog"
      r"|due to ProcessGroupNCCL watchdog hang", "victim",
      "The watchdog thread stopped making progress: a CUDA or NCCL call hung (a collective whose peer never came, "
      "a GPU or link that stopped answering), and the process is taken down.",
      literals=("Heartbeat monitor timed out", "watchdog got stuck for", "detected no heartbeat of its watchdog",
                "due to ProcessGroupNCCL watchdog hang"), suggests=("straggler-rank", "link-down"),
      family="collective-stall", effect="side", specificity=0.4),
    S("desync-report", "torch's desync report names the ranks that never joined",
      r"are the lagging ranks that caused this timeout|ranks that caused the desync are"
      r"|joined but didn't finish collective #\d+|but didn't join collective #\d+", "victim",
      "With TORCH_NCCL_DESYNC_DEBUG the timed-out rank asks the store where every rank is: the ranks it names "
      "never joined (dead, slow) or joined another collective.",
      literals=("lagging ranks that caused this timeout", "ranks that caused the desync", "but didn't finish collective",
                "but didn't join collective"), suggests=("straggler-rank", "collective-mismatch", "rank-crash"),
      family="collective-stall", specificity=0.7),
    S("gloo-connect-failed", "gloo could not connect to a peer's advertised address", r"Gloo connectFullMesh failed",
      "victim", "Read remote=[...]: a peer advertised an address this rank cannot reach; 127.0.0.1 means "
      "that peer's GLOO_SOCKET_IFNAME (or host name) points at its loopback.",
      literals=("Gloo connectFullMesh failed",), suggests=("wrong-socket-interface", "firewall"),
      family="connect-failed"),
    S("gloo-no-address", "gloo cannot find the socket interface",
      r"Unable to find (?:address|interface) for|Cannot resolve \S+ to a \(local\) address", "culprit",
      "GLOO_SOCKET_IFNAME names an interface this host does not have, or (without it) the host's own name "
      "resolves to no local address.",
      literals=("Unable to find address for", "Unable to find interface for", "to a (local) address"),
      suggests=("wrong-socket-interface",), family="interface", specificity=0.9),
    S("nccl-no-interface", "NCCL (or HCCL) finds no socket interface",
      r"(?i)no socket interface found|Bootstrap : no socket interface|No usable listening interface"
      r"|is neither AF_INET\(2\) nor AF_INET6|Socket creation failed : Address family not supported"
      r"|NET/Socket ?: ?[Nn]o interface found|[Nn]o interface found in the same subnet"
      r"|by HCCL_SOCKET_IFNAME, but not found in the environment"
      # Horovod's driver for the address it was given; oneCCL for the interface it was told to use
      r"|No interface is found for address|can't find interface \S+ to get host IP", "culprit",
      "NCCL (or HCCL on Ascend NPUs) has no usable socket interface: NCCL_SOCKET_IFNAME (HCCL_SOCKET_IFNAME) "
      "names one this host lacks, or the container has nothing but loopback.",
      literals=("o socket interface", "o usable listening interface", "is neither AF_INET",
                "Address family not supported", "o interface found", "by HCCL_SOCKET_IFNAME, but not found",
                "No interface is found for address", "to get host IP"),
      suggests=("wrong-socket-interface",), family="interface", specificity=0.9),
    S("no-common-interface", "Horovod's tasks share no interface they can reach each other on",
      r"Unable to find a set of common task-to-task communication interfaces", "culprit",
      "Horovod's driver probes every task's interfaces from the others and found none all of them reach: the "
      "nodes' interfaces differ (names, subnets), or a firewall drops the probes.",
      literals=("common task-to-task communication interfaces",), suggests=("wrong-socket-interface", "firewall"),
      family="interface", specificity=0.8),
    S("nccl-bind-unavailable", "NCCL cannot bind the address of the interface it chose",
      r"Call to bind failed ?: ?Cannot assign requested address", "culprit",
      "The address NCCL picked is not one this host can listen on (an IPv6 link-local address of ib0 without "
      "its scope, an address that is not this host's): set NCCL_SOCKET_IFNAME to the interface the nodes share.",
      literals=("Call to bind failed",), suggests=("wrong-socket-interface",), family="interface", specificity=0.8),
    # torch.distributed.rpc's TensorPipe advertises the address of the interface its host name resolves to (or
    # TP_SOCKET_IFNAME's), as gloo does; libuv's words follow "rv < 0: " and the errno's name.
    S("tensorpipe-connect-failed", "TensorPipe (torch RPC) could not reach a peer's advertised address",
      r"encountered error when sending outgoing request #\d+ to \S+: E(?:CONNREFUSED|TIMEDOUT|HOSTUNREACH|NETUNREACH)"
      r"|(?:[Cc]onnection refused|(?:host|network) is unreachable|[Nn]o route to host|connection timed out) "
      r"\(this error originated at tensorpipe", "culprit",
      "An RPC worker dialed the address a peer advertised and was refused or got no answer, after the store had "
      "brought them together: the peer advertised an interface others cannot reach (set TP_SOCKET_IFNAME), or a "
      "firewall stands between them. TensorPipe dials a peer when first needed, so a peer already dead refuses too.",
      literals=("encountered error when sending outgoing request", "originated at tensorpipe"),
      suggests=("wrong-socket-interface", "firewall", "rank-crash"), family="connect-failed", specificity=0.7),
    S("tensorpipe-peer-lost", "TensorPipe (torch RPC) lost a peer it had reached",
      r"encountered error when (?:reading incoming|sending outgoing) (?:request|response) (?:from|to) \S+: "
      r"(?:eof|EOF|ECONNRESET|EPIPE)\b|(?:eof|end of file|connection reset by peer|broken pipe) \(this error originated at "
      r"tensorpipe",
      "victim", "A connection to another RPC worker ended (end of file, a reset, a broken pipe): that worker died or "
      "was torn down.", literals=("encountered error when", "originated at tensorpipe"), suggests=("rank-crash",),
      family="peer-lost", effect="side", specificity=0.5),
    S("tensorpipe-bind-unavailable", "TensorPipe cannot listen on the address it chose",
      r"tensorpipe/transport/\w+/listener\w*\.cc:\d+ \"rv < 0: (?:invalid argument|address not available)", "culprit",
      "TensorPipe's listener could not bind the address it picked for this host: an IPv6 link-local address "
      "without its scope, or an address that is not this host's; set TP_SOCKET_IFNAME.",
      literals=("rv < 0: ",), suggests=("wrong-socket-interface",), family="interface", specificity=0.8),
    S("gloo-loopback-fallback", "gloo fell back to the loopback address",
      r"Unable to resolve hostname to a \(local\) address\. Using the loopback", "culprit",
      "The host name resolves to no local address, so gloo advertises 127.0.0.1 and its peers dial themselves.",
      literals=("Unable to resolve hostname to a (local) address",), suggests=("wrong-socket-interface",),
      family="interface", specificity=0.9),
    S("nccl-version-skew", "NCCL versions differ across ranks",
      r"Message truncated : received \d+(?:,\d+)? bytes instead of|Mismatched NCCL (?:git )?versions? detected"
      r"|NCCL version mismatch with remote peer", "culprit",
      "A bootstrap message of another size than expected, or NCCL's own version check: the ranks run different "
      "NCCL versions.", ("rank",),
      literals=("Message truncated : received", "Mismatched NCCL", "version mismatch with remote peer"),
      family="cuda", outside=True),
    # NCCL INFO traces an error code back through the functions it passed; code 2 is ncclSystemError.
    S("nccl-bootstrap-failed", "NCCL's bootstrap failed on a system call",
      r"NCCL INFO bootstrap\.cc:\d+ -> 2\b", "culprit",
      "NCCL traced a system error back through its bootstrap: the ranks' first connections to each other, over the "
      "interface NCCL picked (its OOB or Bootstrap line), failed. The warning that names the call and the address "
      "was not kept; NCCL_DEBUG=WARN on every node prints it.",
      literals=("bootstrap.cc:",), suggests=("wrong-socket-interface", "firewall"), family="nccl-error",
      specificity=0.5),
)
