"""Facts read from the lines diagnose kept: the numbers and names its rules decide with.

A line that matched a signature often carries more than its wording: the device index a rank
asked for, how many devices it sees, the address it dialed and whether that is a loopback,
the errno, the collective and sequence number a rank was stuck in (how workers ended: log_exits).
Each reader below takes the lines of the signatures that carry such a value.
"""

from __future__ import annotations

import collections
import dataclasses
import ipaddress
import re

from . import line_ranks, log_exits, log_stacks
from .flight_recorder.report import CULPRIT_RANK, EXPECTED_RANKS, MISSING_RANKS, NO_DUMP_RANKS
from .signatures_context import BARRIER_COUNT_WORDS, SCRIPT_TENSOR_SHAPE_AT_COLLECTIVE
from .signatures_job import HOST_MEMORY_KILL

NUMBER = r"(-?\d+)"
ADDRESS_FORMS = (  # host and port in the ways torch, gloo and NCCL print them
    # [host]:port, the port left out or a placeholder; the host an address or a dotted name, never [rank3]
    re.compile(r"\[((?:\d{1,3}\.){3}\d{1,3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]+|localhost|[\w-]+(?:\.[\w-]+)+)\](?::(\d*))?"),
    re.compile(r"\(\s*([^,()\s]+),\s*(\d+)\)"),  # (host, port)
    re.compile(r"connect to \(\s*([^,()\s]+)()\s*$"),  # (host, port) with the port cut off by a wrap
    re.compile(r"(?:to|from|remote peer) ([A-Za-z0-9_.:-]+)<(\d+|\.\.\.)>"),  # NCCL's host<port>, the port elided
)
# gloo's pair read end-of-file, or a reset, from a peer it had connected to: reached, then closed.
PEER_HUNG_UP = re.compile(r"Connection closed by peer|Read error \[[^\]]{0,100}\]:\d+: Connection reset by peer")
ERRNO = re.compile(r"(?:errno|system error|error)[: =]+(-?\d+)|\((\d+)\)\s*$")
GAI_ERRNO = re.compile(r"gai error: (-\d+)")
# Windows sockets number the same failures their own way: refused, timed out, no route, network
# unreachable, address in use, access denied.
WINSOCK_AS_POSIX = {10061: 111, 10060: 110, 10065: 113, 10051: 101, 10048: 98, 10013: 13}
SEQUENCE = re.compile(r"SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(\d+))?")
FINGERPRINT = re.compile(r"Rank (\d+) is running (?:inconsistent )?collective: CollectiveFingerPrint\("
                         r"(?:SequenceNumber=(\d+),? ?)?OpType=(\w+)(?:, TensorShape=\[([^\]]{0,200})\])?")
# read with findall, every one on a line: a paste's lines may come joined into one
SCRIPT_TENSOR_SHAPE = re.compile(SCRIPT_TENSOR_SHAPE_AT_COLLECTIVE, re.IGNORECASE)
# A training script's own progress line: its rank, its epoch and the step within it ([i/N], step i, iter i).
SCRIPT_RANK = re.compile(r"(?i)(?:^|[\[(:|\]]\s*)rank\W{0,3}(\d{1,6})\b")  # as a label, as ctx-rank-progress has it
SCRIPT_EPOCH = re.compile(r"(?i)\bepoch\b\W{0,3}(\d{1,6})\b")
SCRIPT_STEP = re.compile(r"(?i)\[\s*(\d{1,9})\s*/\s*(?:\d+|all)\s*\]|\b(?:step|iter(?:ation)?)\b\W{0,3}(\d{1,9})\b")
WORK_PROGRESS = re.compile(r"last enqueued (?:NCCL )?work: (\d+), last completed (?:NCCL )?work: (\d+)")
SET_DEVICE_ARG = re.compile(r"set_device\(((?:[^()]|\((?:[^()]|\([^()]{0,100}\)){0,100}\)){0,200})\)?")
MODULO = re.compile(r"[\w)\]]\s*%\s*[\w(]")  # a % between operands, not after a format string
# What a set_device argument is made of: the local rank, the global rank (a variable, get_rank(), $RANK)
LOCAL_RANK_WORD = re.compile(r"local[_-]?rank", re.IGNORECASE)
GLOBAL_RANK_WORD = re.compile(r"get_rank\(\)|\b(?:global_)?rank\b", re.IGNORECASE)
DEVICE_COUNT = re.compile(r"[Dd]evice [Cc]ount:? ?(\d+)|device_count\(\)\s*[=:]\s*(\d+)")
VISIBLE_DEVICES = re.compile(r"CUDA_VISIBLE_DEVICES(?:=([\d,]+)|: \[([\d, ]*)\])|only has: \[([\d, ]*)\]"
                             r"|VISIBLE GPUS: ([\d, ]+)")
DEVICE_INDEX = re.compile(r"cuda:(\d+)|index=(\d+)\)|[Ss]et(?:ting)? device to (\d+)|cudaDev (\d+)|set_device\((\d+)\)"
                          r"|SetDevice for id:(\d+)")
NODES = re.compile(r"nnodes[= :]+(?:\d+:)?(\d+)|num_nodes[= ](\d+)")  # an elastic 1:4 counts as its most
# DeepSpeed's multi-node runner names its hosts: "Running on the following workers: a,b".
WORKER_HOSTS = re.compile(r"Running on the following workers: (\S+)")
PER_NODE = re.compile(r"nproc[_-]per[_-]node[= ](\d+)|num_local_procs=(\d+)")  # torchrun's, DeepSpeed's
WORLD = re.compile(r"\bnranks (\d+)|WORLD_SIZE=(\d+)|world_size=(\d+)|\bsize=(\d+)\)|Num processes: (\d+)"
                   r"|MEMBER: \d+/(\d+)|Starting with (\d+) processes")
ANNOUNCED_RANK = re.compile(r"GLOBAL_RANK: (\d+), MEMBER:")
DUPLICATE = re.compile(r"rank (\d+) and rank (\d+) both on CUDA device")
MEMORY_KILL = re.compile(HOST_MEMORY_KILL)
NCCL_LINE = re.compile(r"\bNCCL (?:WARN|INFO)\b")  # NCCL's own log line
INTERFACE = re.compile(r"\[\d+\]([A-Za-z][\w.@-]*):|Using ([A-Za-z][\w.@-]*):")
BRIDGE_NAMES = ("br-", "veth", "docker", "virbr", "cni", "flannel")
BARRIER_COUNT = re.compile(BARRIER_COUNT_WORDS)
AWAITED_KEY = re.compile(r"keys?: \[?'?([^\s,']+?)/(\d+)'?\]?(?:[\s,]|$)")
# NCCL's bootstrap through the store names the rank whose unique id never came.
AWAITED_UNIQUE_ID = re.compile(r"retrieving ncclUniqueId from \[(\d+)\]")
# torch's desync report and gloo's monitored barrier name the ranks the others waited for.
LAGGING_RANKS = re.compile(r"\[([\d, ]+)\] (?:are the lagging ranks|joined but didn't finish"
                           r"|finished collective #\d+, but didn't join)|waiting for send/recv from rank (\d+)")
# torch's Flight Recorder analyzer names the ranks at odds, those without a dump, and each entry's group and
# the ranks missing from it.
ANALYZER_AT_FAULT = re.compile(f"{CULPRIT_RANK}|{NO_DUMP_RANKS}")
ANALYZER_MISSING = re.compile(MISSING_RANKS)
ANALYZER_EXPECTED = re.compile(EXPECTED_RANKS)
PATH = re.compile(r"""(?:^|[\s'"<(])(/[\w.@+-]+(?:/[\w.@+-]+)*)""")
SHM_PATHS = ("/dev/shm", "/torch_", "/nccl-")  # /dev/shm itself, and the names shm_open gives its files
IB_CODE = re.compile(r"(?:with error|status=|completion error) ?(?:IBV_WC_\w+\()?(\d+)")  # NCCL >= 2.29 names the status
# When a line was written: torch's (glog's) "[E1203 09:43:47.825" or logging's "2026-12-03 09:43:47,825"; the
# year is left out, as glog prints none.
STAMP = re.compile(r"(?:^|[\[\s:])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?)\b"
                   r"|\b\d{4}-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d(?:[.,]\d+)?)\b")
# How long a waiting line says it waited: a store's wait for clients, workers or keys, a socket's, a collective's.
WAITED = re.compile(r"after (\d+) ?(ms|s|seconds)\b|ran for (\d+) (milliseconds)|Timeout\(ms\)=(\d+)()")


@dataclasses.dataclass(frozen=True)
class Address:
    host: str
    port: int | None
    refused: bool  # the line says the connection was refused
    timed_out: bool = False  # the line says the connect timed out

    @property
    def loopback(self) -> bool:
        host = self.host.removeprefix("::ffff:")
        return host in ("localhost", "::1") or host.startswith("127.")

    @property
    def link_local(self) -> bool:
        """An address valid only on its own link (169.254/16, fe80::/10): no peer on another host can dial it."""
        host = self.host.removeprefix("::ffff:").lower()
        return host.startswith("169.254.") or host.startswith("fe80:")

    @property
    def docker_bridge(self) -> bool:
        """An address docker's default bridge hands its containers (172.17.0.x): reachable only on its own
        host. Clusters number real networks inside 172.17.0.0/16 too, so only the bridge's first block counts."""
        return self.host.removeprefix("::ffff:").startswith("172.17.0.")

    @property
    def literal(self) -> bool:
        """An IP address rather than a name to look up."""
        try:
            ipaddress.ip_address(self.host.strip().removeprefix("::ffff:").split("%")[0])
            return True
        except ValueError:
            return False


@dataclasses.dataclass
class Facts:
    nodes: int | None = None
    slurm_tasks: bool = False  # a trainer said SLURM starts its processes (srun's tasks)
    one_process_launch: bool = False  # the launcher was one that starts a single process (accelerate's simple one)
    workers_restarted: bool = False  # torchrun started its workers again (they announce themselves anew)
    # (node, launcher task, global rank) -> how many lines said a process started as that rank there
    announcements: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    per_node: int | None = None
    world_size: int | None = None
    visible_devices: int | None = None
    visible_ids: tuple = ()  # the physical ids CUDA_VISIBLE_DEVICES (or a trainer) listed
    device_requests: dict = dataclasses.field(default_factory=dict)  # rank (or None) -> device indices asked for
    set_device_args: set = dataclasses.field(default_factory=set)  # what set_device chose by: 'rank', 'local_rank'
    addresses: list = dataclasses.field(default_factory=list)
    connect_hung_up: bool = False  # a peer gloo's connectFullMesh had reached closed the connection
    errnos: set = dataclasses.field(default_factory=set)
    interfaces: list = dataclasses.field(default_factory=list)
    # rank -> {(seq, op): numel}; numel None where no line of that collective gave its size (one cut before it)
    collectives: dict = dataclasses.field(default_factory=dict)
    fingerprints: list = dataclasses.field(default_factory=list)  # (rank, seq, op, shape)
    progress: dict = dataclasses.field(default_factory=dict)  # rank -> (last enqueued, last completed)
    script_epochs: dict = dataclasses.field(default_factory=dict)  # step -> {rank: epochs}, by the script's lines
    # collective -> {rank: its tensor sizes there, in the order printed}, by the script's own lines
    script_shapes: dict = dataclasses.field(default_factory=dict)
    exits: log_exits.Exits = dataclasses.field(default_factory=log_exits.Exits)
    shm: set = dataclasses.field(default_factory=set)  # 'create', 'attach', 'no-space', 'missing', 'shm-path', 'disk-path'
    ranks_named: set = dataclasses.field(default_factory=set)  # ranks that a line's label or its file names
    out_of_memory: set = dataclasses.field(default_factory=set)  # how processes ran out of it: _memory_failure
    file_places: int = 0  # the places in the job (node, rank) the input files stand for (diagnose fills it)
    ordinal_ranks: set = dataclasses.field(default_factory=set)  # ranks that saw 'invalid device ordinal'
    ordinal_local_ranks: set = dataclasses.field(default_factory=set)  # (rank, local rank) of those, where a path says
    ib_codes: set = dataclasses.field(default_factory=set)
    duplicate_ranks: set = dataclasses.field(default_factory=set)
    awaited_ranks: set = dataclasses.field(default_factory=set)  # ranks whose store keys others waited for
    analyzer_at_fault: set = dataclasses.field(default_factory=set)  # torch's FR analyzer: at odds, or no dump
    # (file, line number, ranks) of each report entry's ranks missing from its collective, and of its group
    analyzer_missing: list = dataclasses.field(default_factory=list)
    analyzer_expected: list = dataclasses.field(default_factory=list)
    vanished_nodes: set = dataclasses.field(default_factory=set)  # nodes none of whose ranks wrote a line (diagnose fills it)
    # node 0, the store's host, wrote its first line only after another node gave up dialing it (diagnose fills it)
    store_host_late: bool = False
    ranks_per_node: dict = dataclasses.field(default_factory=dict)  # node -> ranks with files there (diagnose fills it)
    quiet_ranks: set = dataclasses.field(default_factory=set)  # ranks whose own files hold output, no error (diagnose fills it)
    timed_out: dict = dataclasses.field(default_factory=dict)  # rank -> its node (None: unknown), for collective timeouts
    first_timeout_lines: dict = dataclasses.field(default_factory=dict)  # file -> its first collective timeout's line
    first_timeout_stamp: float | None = None  # when the first collective timeout was written (stamp_of)
    barrier_counts: set = dataclasses.field(default_factory=set)  # (world size, ranks that reached the barrier)
    # (file, rank, line number, whether a C++ frame) of each store connection lost, and of each frame of a store
    # being created
    store_losses: list = dataclasses.field(default_factory=list)
    store_creations: list = dataclasses.field(default_factory=list)
    main_work_shown: bool = False  # a progress bar, or a barrier's frame naming the main process's work
    nccl_init_complete: bool = False  # NCCL said a communicator was complete (INFO lines)
    stacks: list = dataclasses.field(default_factory=list)  # log_stacks.Stack, one per thread of py-spy dumps

    @property
    def bridge_interfaces(self) -> list[str]:
        return [name for name in self.interfaces if name.startswith(BRIDGE_NAMES)]

    def rank_disagreement(self) -> str:
        """How ranks that report where they are stuck differ ('' when they agree or say nothing)."""
        if len({(op, shape) for _, _, op, shape in self.fingerprints}) > 1:
            return "the ranks' collective fingerprints differ"
        newest = {rank: max(entries) for rank, entries in self.collectives.items() if rank is not None}
        last = {rank: (seq, op, self.collectives[rank][seq, op]) for rank, (seq, op) in newest.items()}
        if len(last) > 1:
            if len({op for _, op, _ in last.values()}) > 1:
                return "ranks wait in different collectives"
            if len({numel for _, _, numel in last.values() if numel is not None}) > 1:
                return "ranks wait in one collective with different sizes"
            if len({seq for seq, _, _ in last.values()}) > 1:
                return "ranks wait at different sequence numbers"
        enqueued = {rank: progress[0] for rank, progress in self.progress.items() if rank is not None}
        if len(set(enqueued.values())) > 1:
            return "ranks have enqueued different numbers of collectives"
        return ""


def stamp_of(text: str) -> float | None:
    """When the first time stamp in `text` was written, in seconds from an origin that leaves out the year
    (glog prints none) and counts every month as 31 days: comparable within a few months, not across a
    new year. None without a stamp."""
    match = STAMP.search(text)
    if not match:
        return None
    month, day, hours, minutes, seconds = (group for group in match.groups() if group is not None)
    return ((int(month) * 31 + int(day)) * 24 + int(hours)) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))


def first_stamp(text: str) -> tuple[float, int] | None:
    """(stamp_of the first stamped line, its line number) in `text`, or None."""
    match = STAMP.search(text)
    return (stamp_of(match[0]), text.count("\n", 0, match.start()) + 1) if match else None


def waited_seconds(line: str) -> float | None:
    """How long a waiting line says it waited, or None where it does not say."""
    match = WAITED.search(line)
    if not match:
        return None
    number, unit = (group for group in match.groups() if group is not None)  # Timeout(ms)= has an empty unit
    return int(number) / (1 if unit in ("s", "seconds") else 1000)


def _first_group(match) -> str:
    return next(group for group in match.groups() if group is not None)


def _first_int(match) -> int:
    return int(_first_group(match))


def _read_devices(facts: Facts, rank, line: str) -> None:
    facts.set_device_args.update(filter(None, (_device_choice(match[1]) for match in SET_DEVICE_ARG.finditer(line))))
    count = DEVICE_COUNT.search(line)
    if count:
        facts.visible_devices = _first_int(count)
    visible = VISIBLE_DEVICES.search(line)
    if visible:
        facts.visible_ids = tuple(int(d) for d in re.findall(r"\d+", _first_group(visible)))
        facts.visible_devices = len(facts.visible_ids)
    for match in DEVICE_INDEX.finditer(line):
        facts.device_requests.setdefault(rank, set()).add(_first_int(match))


def _device_choice(argument: str) -> str:
    """What a set_device argument chooses the device by: 'local_rank', 'rank' (the global rank, as a
    variable, get_rank() or $RANK), or '' (anything else; a rank modulo the device count among them,
    which is a local index whatever rank it starts from)."""
    if MODULO.search(argument):
        return ""
    if LOCAL_RANK_WORD.search(argument):
        return "local_rank"
    return "rank" if GLOBAL_RANK_WORD.search(argument) else ""


def _read_topology(facts: Facts, line: str, node: int | None) -> None:
    for pattern, field in ((NODES, "nodes"), (PER_NODE, "per_node"), (WORLD, "world_size")):
        match = pattern.search(line)
        if match:
            setattr(facts, field, max(getattr(facts, field) or 0, _first_int(match)))
    task = line_ranks.task_label(line)
    facts.announcements.update((node, task, int(rank)) for rank in ANNOUNCED_RANK.findall(line))
    facts.slurm_tasks = facts.slurm_tasks or "Multi-processing is handled by Slurm" in line
    hosts = WORKER_HOSTS.search(line)
    if hosts:
        facts.nodes = max(facts.nodes or 0, len([host for host in hosts[1].split(",") if host]))


def _read_network(facts: Facts, line: str) -> None:
    refused, timed_out = "refused" in line.lower(), "timed out" in line.lower()
    for form in ADDRESS_FORMS:
        for host, port in form.findall(line):
            facts.addresses.append(Address(host.strip(), int(port) if port.isdigit() else None, refused, timed_out))
    for match in ERRNO.finditer(line):
        number = _first_int(match)
        facts.errnos.add(WINSOCK_AS_POSIX.get(number, number))
    for code in GAI_ERRNO.findall(line):
        facts.errnos.add(int(code))


def _read_collectives(facts: Facts, rank, line: str) -> None:
    for seq, op, numel in SEQUENCE.findall(line):
        sizes = facts.collectives.setdefault(rank, {})
        if numel or (int(seq), op) not in sizes:
            sizes[int(seq), op] = int(numel) if numel else None
    for named_rank, seq, op, shape in FINGERPRINT.findall(line):
        facts.fingerprints.append((int(named_rank), int(seq) if seq else None, op, shape))
    script_rank, epoch, step = SCRIPT_RANK.search(line), SCRIPT_EPOCH.search(line), SCRIPT_STEP.search(line)
    if script_rank and epoch and step and script_rank.start() < epoch.start():
        steps = facts.script_epochs.setdefault(_first_int(step), {})
        steps.setdefault(int(script_rank[1]), set()).add(int(epoch[1]))
    for named_rank, collective, shape in SCRIPT_TENSOR_SHAPE.findall(line):
        shapes = facts.script_shapes.setdefault(collective.lower().replace("_", ""), {})
        shapes.setdefault(int(named_rank), []).append(shape.replace(" ", ""))
    progress = WORK_PROGRESS.search(line)
    if progress:
        facts.progress[rank] = (int(progress[1]), int(progress[2]))


def _read_shm(facts: Facts, signature: str, line: str) -> None:
    """What NCCL's segment lines say, and which file system a failed write names."""
    for path in PATH.findall(line):
        facts.shm.add("shm-path" if path.startswith(SHM_PATHS) else "disk-path")
    if signature in ("no-space-left", "ctx-shm"):
        return
    facts.shm.add("attach" if "attaching to" in line else "create")
    lowered = line.lower()
    if "no space left" in lowered or "posix_fallocate" in lowered or "failed to extend" in lowered:
        facts.shm.add("no-space")
    if "too many open files" in lowered:
        facts.shm.add("fd-limit")
    if "no such file" in lowered:
        facts.shm.add("missing")


# Which readers each signature's lines go through.
READERS = {
    "ctx-devices": ("devices",), "ctx-set-device": ("devices",), "invalid-device-ordinal": ("devices",),
    "duplicate-gpu": ("devices", "duplicates"), "requested-more-gpus": ("devices",), "ctx-topology": ("topology",),
    "ctx-rank-announced": ("topology",), "ctx-interfaces": ("interfaces",),
    "collective-timeout": ("collectives",), "collective-mismatch-detail": ("collectives",),
    "ctx-work-progress": ("collectives",), "ctx-rank-progress": ("collectives",), "ctx-worker-exit": ("exits",),
    "ctx-rank-tensor-shape": ("collectives",),
    "killed-by-signal": ("exits",),
    "worker-torn-down": ("exits",), "nccl-shm-failed": ("shm",), "no-space-left": ("shm",), "ctx-shm": ("shm",),
    "torch-shm-failed": ("shm",),
    "killed-by-sigbus": ("exits",), "launcher-signalled": ("exits",), "ib-completion-error": ("ib",), "nccl-remote-error": ("ib",),
    "store-wait-timeout": ("store",), "filestore-wait-timeout": ("store",), "desync-report": ("store",),
    "monitored-barrier-missing-ranks": ("store",),
    "fr-trace-mismatch": ("analyzer",), "fr-trace-missing-ranks": ("analyzer",), "fr-trace-missing-dumps": ("analyzer",),
    "ctx-fr-expected-ranks": ("analyzer",),
}
# Context lines that set a fact of their own
FLAGS = {"ctx-workers-restarted": "workers_restarted", "ctx-one-process-launcher": "one_process_launch",
         "ctx-nccl-init-complete": "nccl_init_complete", "ctx-progress-bar": "main_work_shown"}
NETWORK_SIGNATURES = {"connection-refused", "client-connect-failed", "client-connect-timeout", "nccl-connect-failed",
                      "gloo-connect-failed", "name-not-resolved", "server-bind-failed", "address-in-use",
                      "no-route-to-host", "nccl-remote-error", "connection-closed-by-peer", "rendezvous-connect-failed"}


def read_facts(evidence) -> Facts:
    """Facts from evidence lines (anything with .signature, .path, .line_number, .rank, .line and .place)."""
    facts = Facts()
    for item in evidence:
        readers = READERS.get(item.signature, ())
        line, rank = item.line, item.rank
        if rank is not None:
            facts.ranks_named.add(rank)
        if "devices" in readers:
            _read_devices(facts, rank, line)
        if item.signature == "out-of-memory":
            facts.out_of_memory.add(_memory_failure(line))
        if item.signature == "invalid-device-ordinal" and rank is not None:
            facts.ordinal_ranks.add(rank)
            if item.place.local_rank is not None:
                facts.ordinal_local_ranks.add((rank, item.place.local_rank))
        if "duplicates" in readers:
            facts.duplicate_ranks.update(int(r) for pair in DUPLICATE.findall(line) for r in pair)
        if "topology" in readers:
            _read_topology(facts, line, item.place.node)
        if "interfaces" in readers:
            names = [name for pair in INTERFACE.findall(line) for name in pair if name]
            facts.interfaces += [name for name in names if name not in facts.interfaces]
        if "collectives" in readers:
            _read_collectives(facts, rank, line)
        if "exits" in readers:
            facts.exits.read(item)
        if "shm" in readers:
            _read_shm(facts, item.signature, line)
        _read_store(facts, item, "store" in readers)
        if "analyzer" in readers:
            for culprit, undumped in ANALYZER_AT_FAULT.findall(line):
                facts.analyzer_at_fault.update(_ranks_listed(culprit) | _ranks_listed(undumped))
            for found, pattern in ((facts.analyzer_missing, ANALYZER_MISSING),
                                   (facts.analyzer_expected, ANALYZER_EXPECTED)):
                found += [(item.path, item.line_number, _ranks_listed(ranks)) for ranks in pattern.findall(line)]
        if "ib" in readers and "NET/IB" in line:
            facts.ib_codes.update(int(code) for code in IB_CODE.findall(line))
        if item.signature == "collective-timeout":
            first = facts.first_timeout_lines.get(item.path, item.line_number)
            facts.first_timeout_lines[item.path] = min(first, item.line_number)
            stamp = stamp_of(line)
            if stamp is not None:
                earliest = facts.first_timeout_stamp
                facts.first_timeout_stamp = stamp if earliest is None else min(stamp, earliest)
            if rank is not None:
                facts.timed_out[rank] = item.place.node
        if item.signature in FLAGS:
            setattr(facts, FLAGS[item.signature], True)
        if item.signature in NETWORK_SIGNATURES:
            _read_network(facts, line)
        if item.signature == "gloo-connect-failed" and PEER_HUNG_UP.search(line):
            facts.connect_hung_up = True
        if item.signature == "main-process-barrier" and "desc=" in line:
            facts.main_work_shown = True  # transformers' main_process_first(desc="dataset map tokenization")
    facts.stacks = log_stacks.read_stacks(item for item in evidence if item.signature in log_stacks.SIGNATURES)
    return facts


def _read_store(facts: Facts, item, names_awaited: bool) -> None:
    """The ranks others waited for at the store, the counts at init's barrier, and where a store connection was
    lost or a store was being created."""
    line = item.line
    if names_awaited:
        facts.awaited_ranks.update(int(rank) for _, rank in AWAITED_KEY.findall(line))
        facts.awaited_ranks.update(int(rank) for rank in AWAITED_UNIQUE_ID.findall(line))
        for listed, single in LAGGING_RANKS.findall(line):
            facts.awaited_ranks.update(int(rank) for rank in (listed or single).split(",") if rank.strip())
    if item.signature in ("ctx-barrier-count", "store-barrier-timeout"):
        facts.barrier_counts.update((int(size), int(count)) for size, count in BARRIER_COUNT.findall(line))
    if item.signature in ("store-recv-failed", "ctx-store-being-created"):
        found = facts.store_losses if item.signature == "store-recv-failed" else facts.store_creations
        found.append((item.path, item.rank, item.line_number, "c10d::TCPStore::" in line))


def _memory_failure(line: str) -> str:
    """'killed': the host killed a process for memory; 'communicator': NCCL could not allocate for a communicator,
    so the job has several processes; 'allocation': a process could not allocate."""
    if MEMORY_KILL.search(line):
        return "killed"
    return "communicator" if NCCL_LINE.search(line) else "allocation"


def _ranks_listed(text: str) -> set[int]:
    return {int(rank) for rank in text.split(",") if rank.strip()}
