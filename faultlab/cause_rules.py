"""Causes decided from signatures and facts, by rules held as data; calibrated confidence.

Each signature found suggests causes (its catalog entry, most frequent first). A rule reads
the facts around it and, when its test holds, changes what that signature means: it puts
other causes first, says how specific the line is, or marks it as a failure the catalog does
not hold. The first rule that holds for a signature wins, so the order below is the order of
precedence.

The tests a rule may ask of the facts are named, in words, in fact_tests.py.

Confidence is calibrated, not a share of matched lines: each signature carries how much it
alone says "one of the catalog's causes"; independent signatures compound
(1 - product of (1 - specificity)), and whatever is left is the share of "unknown / not in
the catalog". Signatures of one family (often one line read two ways) count as one piece
of evidence. One ambiguous line therefore never shows 100%. Side effects (exit warnings,
torn-down workers, victims' watchdog lines) count for little once a primary sign exists,
and a cause with only side effects behind it never ranks above one with a primary sign.
"""

from __future__ import annotations

import collections
import dataclasses
import math

from .fact_tests import FACT_TESTS
from .log_facts import Facts
from .symptoms import SIGNATURES_BY_ID

CULPRIT_WEIGHT = 3.0  # a culprit-side line says more about the cause than a victim's timeout
SIDE_WEIGHT = 0.2  # a side effect's say, once a primary sign is there
PRIOR_DECAY = 0.7  # each next suggested cause weighs 0.7 as much as the one before
OUTSIDE_STRENGTH = 0.8  # how much a known out-of-catalog failure says "not in the catalog"
# A node's failed dials of the store (MASTER_ADDR:MASTER_PORT, node 0's), retries among them; and those
# after which the dialer gave up, its retries spent.
STORE_DIAL_FAILURES = ("client-connect-timeout", "client-connect-failed", "store-not-listening-yet",
                       "rendezvous-connect-failed", "connection-refused")
STORE_DIALS_GIVEN_UP = ("client-connect-timeout", "rendezvous-connect-failed")
UNPAIRED_SIZES = "(NCCL hangs, or returns wrong data, gloo aborts)"  # what tensors of different sizes meet with


@dataclasses.dataclass(frozen=True)
class Rule:
    signature: str
    when: str  # a key of fact_tests.FACT_TESTS
    favours: tuple[str, ...] | None = None  # replaces the signature's suggested causes, best first
    specificity: float | None = None  # replaces the signature's specificity
    outside: bool = False  # the line then means a failure the catalog does not hold
    why: str = ""


RULES: tuple[Rule, ...] = (
    Rule("invalid-device-ordinal", "the device is chosen by the global rank", ("rank-as-device-id", "too-few-gpus"), 0.9,
         why="set_device(rank): past node 0 the global rank exceeds the node's devices"),
    Rule("invalid-device-ordinal", "a rank asked for its global rank as device index", ("rank-as-device-id", "too-few-gpus"),
         0.9, why="a rank asked for the device numbered like its global rank"),
    Rule("invalid-device-ordinal", "the device is chosen by the local rank", ("too-few-gpus", "rank-as-device-id"), 0.9,
         why="set_device(local_rank) failed: more local ranks than devices"),
    Rule("invalid-device-ordinal", "the first local rank of a later node failed", ("rank-as-device-id", "too-few-gpus"),
         0.9, why="local rank 0 of a later node was refused its device: device 0 exists wherever a GPU does, so "
                  "the index asked for was the global rank"),
    Rule("invalid-device-ordinal", "a failing rank is numbered past one node's processes",
         ("rank-as-device-id", "too-few-gpus"), 0.9,
         why="a rank numbered past one node's processes failed: several nodes, and the global rank chose the device"),
    Rule("invalid-device-ordinal", "the job spans several nodes", ("rank-as-device-id", "too-few-gpus"),
         why="several nodes: a global rank used as device index fails on every node but the first"),
    Rule("invalid-device-ordinal", "the visible devices are physical ids without device 0", specificity=0.3,
         why="the visible devices are named by physical ids without device 0 (CUDA_VISIBLE_DEVICES=6,7): the process "
             "numbers them from 0, so an index taken from those ids fails however many there are; too many ranks "
             "for the devices reads the same"),
    Rule("invalid-device-ordinal", "a device index beyond the visible count", ("too-few-gpus", "rank-as-device-id"), 0.9,
         why="a device index beyond the devices this process sees"),
    Rule("requested-more-gpus", "no device is visible at all", ("nccl-without-gpu", "too-few-gpus"), 0.6,
         why="the machine shows no GPU at all: no driver, a CPU-only build, or CUDA_VISIBLE_DEVICES hides them"),
    Rule("duplicate-gpu", "more ranks on the node than devices", ("too-few-gpus", "missing-set-device"),
         why="more processes on the node than GPUs"),
    Rule("nccl-invalid-usage", "more ranks on the node than devices", ("too-few-gpus", "missing-set-device"), 0.8,
         why="NCCL refused its use where more processes run on the node than it has GPUs: two ranks on one GPU"),
    Rule("ctx-rank-progress", "the ranks' own progress lines put them in different epochs at one step",
         ("collective-mismatch", "straggler-rank"), 0.6,
         why="the script's own lines put ranks in different epochs at the same step: they ran different numbers of "
             "steps (uneven data per rank), so their collectives no longer pair up"),
    Rule("ctx-rank-tensor-shape",
         "the script's own lines give one rank a tensor size at a collective that all the others' differ from",
         ("collective-mismatch",), 0.75,
         why="the script's own lines give one rank a tensor of another size than all the others' at the same call of "
             f"a collective: it does not pair up with theirs {UNPAIRED_SIZES}"),
    # Ranks split into groups of sizes may be groups of their own (pipeline stages, each with its own data-parallel
    # group) under one collective's name: weak alone
    Rule("ctx-rank-tensor-shape", "the script's own lines give ranks different tensor sizes at one collective",
         ("collective-mismatch",), 0.4,
         why="the script's own lines give ranks tensors of different sizes at the same call of a collective: if they "
             f"are one group's, they do not pair up {UNPAIRED_SIZES}"),
    Rule("main-process-barrier", "nothing timed out or was stopped, and no line shows the main process at work",
         specificity=0.35,
         why="a trace passes where ranks wait for the main process, but no wait timed out, the job was not stopped, "
             "and no line shows that process at work (a progress bar, the work's name): the barrier may be the first "
             "collective, failing for a reason the log does not show"),
    Rule("fr-trace-missing-ranks", "every rank of the group but one is missing from a collective", ("collective-mismatch",),
         0.9, why="torch's Flight Recorder analyzer finds every rank but one missing from a collective: that one "
                  "issued a collective no other rank did"),
    Rule("ctx-rank-announced", "under SLURM only the first of several processes started", ("no-launcher",), 0.7,
         why="SLURM was to start the processes, but only the first announced itself and nothing failed: the batch "
             "script ran python once instead of through srun"),
    Rule("ctx-rank-announced", "two launchers claimed each of some ranks, others unclaimed",
         ("duplicate-node-rank",), 0.8,
         why="two processes announced each of the same global ranks while ranks of the world never announced "
             "themselves: two launchers took the same node rank"),
    *(Rule(dial, "the store's host started after the others gave up dialing it", ("late-store-host",), 0.85,
           why="node 0, the store's host, wrote its first line only after the other nodes had given up dialing its "
               "store: it started too late for them")
      for dial in STORE_DIAL_FAILURES),
    # NCCL retries a refused connect while its peer starts listening; Init COMPLETE says the retry got through.
    *(Rule(retried, "NCCL dialed a peer itself and then finished its communicator", specificity=0.1,
           why="NCCL's connect was refused at first, then its communicator was complete (Init COMPLETE): the retry "
               "got through") for retried in ("nccl-connect-failed", "connection-refused")),
    Rule("connection-refused", "the store client was refused at a loopback address",
         ("wrong-master-addr", "wrong-socket-interface"), 0.85,
         why="the store's address is a loopback: MASTER_ADDR (or the host name it resolves to) points at the dialing host"),
    Rule("client-connect-failed", "the store client was refused at a loopback address",
         ("wrong-master-addr", "wrong-socket-interface"), 0.85,
         why="the store's address is a loopback: MASTER_ADDR (or the host name it resolves to) points at the dialing host"),
    Rule("client-connect-timeout", "the store client timed out at a loopback address, several nodes",
         ("wrong-master-addr", "wrong-socket-interface"), 0.85,
         why="the store's address is a loopback on a job of several nodes: MASTER_ADDR (or the host name it "
             "resolves to) points at the dialing host"),
    Rule("client-connect-timeout", "the store client timed out at a loopback address",
         ("wrong-master-port", "late-store-host", "store-host-lost"),
         why="the store's address is a loopback, where the host is up and no firewall lies between: the connect "
             "timed out retrying refusals, so nothing listened on that port (the wrong port, or no store yet)"),
    Rule("connection-refused", "docker bridges or veths among NCCL's interfaces or addresses", ("wrong-socket-interface",),
         0.85, why="the refused address belongs to docker's bridge: a peer advertised the wrong interface"),
    *(Rule(dial, "a container's bridge address was dialed", ("wrong-socket-interface", "wrong-master-addr"), 0.8,
           why="the address dialed is a container's on docker's default bridge, which no other host can reach: "
               "the address was taken from the container's interface instead of the host's")
      for dial in ("client-connect-timeout", "client-connect-failed", "connect-timed-out", "no-route-to-host")),
    Rule("connection-refused", "the refused address is a loopback", ("wrong-socket-interface",), 0.85,
         why="the refused address is a loopback: a peer advertised 127.x (its host name or interface points there)"),
    # Before the loopback rule: a loopback peer that accepted was on the dialer's own host, as on one node it is.
    Rule("gloo-connect-failed", "gloo's connect reached a peer, which hung up", ("rank-crash", "shared-master-port"), 0.5,
         why="gloo's connect reached its peer, which then closed the connection: the address answered, so neither "
             "the interface nor a firewall kept them apart (unless a proxy answered for it); the peer's process "
             "ended, most often a rank that died while the others connected (a node's ranks go together), or a "
             "process of another job whose address the same store held"),
    Rule("gloo-connect-failed", "a peer advertised a loopback or link-local address", ("wrong-socket-interface",), 0.9,
         why="gloo dialed a loopback or link-local address a peer advertised"),
    Rule("ctx-interfaces", "NCCL uses docker bridges or veths, nothing failed, and the job may span hosts",
         ("wrong-socket-interface",), 0.3,
         why="NCCL chose docker bridges or veths beside the real NIC and no error came: a peer on another host cannot "
             "reach those, so connections hang rather than fail"),
    Rule("nccl-system-error", "docker bridges or veths among NCCL's interfaces or addresses", ("wrong-socket-interface",), 0.7,
         why="NCCL uses docker bridges or veths beside the real NIC"),
    Rule("nccl-connect-failed", "docker bridges or veths among NCCL's interfaces or addresses", ("wrong-socket-interface",), 0.85,
         why="NCCL dialed over docker bridges or veths"),
    # NCCL's own sockets dial the addresses peers advertised, not MASTER_ADDR.
    Rule("nccl-connect-failed", "a peer advertised a loopback or link-local address", ("wrong-socket-interface",), 0.9,
         why="NCCL dialed a loopback or link-local address a peer advertised: an interface no other host can reach"),
    Rule("connection-refused", "NCCL dialed a peer itself", ("wrong-socket-interface", "firewall"), 0.7,
         why="the refused connection is NCCL's own, to an address a peer advertised, not MASTER_ADDR:MASTER_PORT"),
    # TensorPipe dials a peer when first needed: once a rank has died, its refusal is the dead rank's.
    *(Rule(dial, "TensorPipe was refused where a rank died or a peer went away", ("rank-crash",), 0.5,
           why="TensorPipe dials a peer when first needed, and a rank had died or a peer's connection had ended: "
               "the refusal is most likely the gone peer's") for dial in ("tensorpipe-connect-failed", "connection-refused")),
    Rule("connection-refused", "TensorPipe dialed a peer itself", ("wrong-socket-interface", "firewall"), 0.7,
         why="the refused connection is TensorPipe's own, to the address a peer advertised, not MASTER_ADDR:MASTER_PORT"),
    Rule("no-route-to-host", "NCCL dialed a peer itself", ("wrong-socket-interface", "firewall", "link-down"), 0.75,
         why="NCCL's own connection to a peer's advertised address found no route: the wrong interface was "
             "advertised, or the path between the nodes is blocked or down; not MASTER_ADDR"),
    Rule("no-space-left", "the full file system is /dev/shm", specificity=0.9,
         why="the full file system is /dev/shm (its path, or NCCL's or torch's shared-memory wording)"),
    Rule("no-space-left", "the full file system is a disk", outside=True,
         why="the write that found no space names a path outside /dev/shm: a full disk"),
    Rule("killed-by-sigbus", "the full file system is /dev/shm", specificity=0.85,
         why="a bus error where /dev/shm is named: shared tensors could not be backed"),
    Rule("torch-shm-failed", "the descriptor limit was reached (errno 24)", outside=True,
         why="too many open files: the descriptor limit (ulimit -n, the sharing strategy), not /dev/shm's size"),
    Rule("nccl-shm-failed", "/dev/shm has no space left", specificity=0.95, why="/dev/shm ran out of space"),
    Rule("nccl-shm-failed", "attaching to a peer's segment failed", specificity=0.25,
         why="attaching to a peer's existing segment failed, which a full /dev/shm does not explain"),
    Rule("server-bind-failed", "binding was denied (errno 13)", outside=True,
         why="binding was denied (errno 13): a port below 1024 needs root; the port is not in use"),
    Rule("address-in-use", "a store host waited for clients that never came", ("duplicate-node-rank", "port-in-use"), 0.9,
         why="one node hosted the store and waited for clients while another failed to bind the same port: that "
             "node, too, believed it was node 0 (the same --node_rank)"),
    Rule("address-in-use", "other nodes got through to a store", ("shared-master-port", "port-in-use"), 0.9,
         why="the store host could not bind, yet other nodes were answered at that address: a live store "
         "of another job holds the port"),
    Rule("name-not-resolved", "the name looked up is already an IP address", specificity=0.2,
         why="the failed lookup is of an IP address, not a host name"),
    Rule("client-connect-failed", "the address is not valid (errno 22 or 10049)", ("wrong-master-addr",),
         why="the address itself is not valid here"),
    Rule("client-connect-failed", "the connection was refused (errno 111)", ("wrong-master-port", "firewall"),
         why="refused: the host is up but nothing listens on that port"),
    Rule("collective-timeout", "ranks disagree on the collective", ("collective-mismatch", "straggler-rank"), 0.9,
         why="the ranks' own lines disagree on where they are"),
    Rule("collective-timeout", "every rank of several nodes timed out in the collective",
         ("link-down", "collective-mismatch", "straggler-rank"),
         why="every rank timed out, none was absent: they waited on each other across the nodes, as when the link "
             "between the nodes fails (a late or dead rank would not itself time out)"),
    Rule("collective-timeout", "every rank of one node timed out in the collective", ("collective-mismatch", "straggler-rank"),
         why="every rank timed out, none was absent, on one node: they waited on each other in collectives that "
             "cannot meet (another op, another size)"),
    Rule("ib-completion-error", "an InfiniBand transfer failed on memory protection (status 4)", outside=True,
         why="InfiniBand completion status 4 is a local protection error: GPUDirect RDMA memory registration "
             "(peer-memory module, ACS, IOMMU), not a link that went down"),
    Rule("nccl-remote-error", "NCCL lost a peer across nodes before any rank died or its communicator was complete",
         ("wrong-socket-interface", "firewall", "rank-crash", "link-down"), 0.6,
         why="a peer on another node was lost with no rank dead and no sign the communicator was ever complete: "
             "the nodes most likely never connected (interface, firewall)"),
    Rule("store-recv-failed", "the store's connection was lost while the store was being created",
         ("listen-backlog-overflow", "store-host-lost", "wrong-master-port"), 0.6,
         why="the connection was reset or closed while this rank was still creating its store, before any "
             "collective: the store host's listen queue overflowed as many ranks connected at once, the host "
             "went away, or what answered on that port was no store"),
    Rule("store-barrier-timeout", "more ranks reached the barrier than the world holds",
         ("duplicate-node-rank", "world-size-mismatch", "shared-master-port"), 0.75,
         why="more ranks counted themselves in at the store than the world size: ranks of another launch (a "
             "repeated node rank, another job on the same store) joined this one"),
    # A late or dead rank or two leave one or two missing; half a larger world missing is whole nodes counting
    # themselves into another world (another size, another master)
    *(Rule(barrier, "at most half the world reached the barrier, more than two ranks missing",
           ("world-size-mismatch", "split-world", "straggler-rank"), 0.6,
           why="half the world or more never counted itself in at this store: whole nodes joined another world "
               "(one of another size, or with another master), rather than one rank being late")
      for barrier in ("store-barrier-timeout", "store-barrier-waiting")),
    Rule("connection-closed-by-peer", "the store's host (node 0) went silent as a whole",
         ("store-host-lost", "rank-crash", "link-down"), 0.75,
         why="the peers lost ranks of node 0, and no rank of node 0 wrote a line: the store's host went away as a "
             "whole (its machine or its launcher), not one rank of it"),
    Rule("connection-closed-by-peer", "the rank its peers lost wrote output and no error",
         ("collective-mismatch", "rank-crash"),
         why="the peers lost a rank that wrote its output, no error, and died by no signal: it finished on its own, "
             "having skipped a collective the others still waited in"),
    Rule("nccl-remote-error", "an InfiniBand transfer error was seen", ("link-down", "rank-crash"),
         why="an InfiniBand transfer failed: the link, not only a peer"),
    Rule("nccl-remote-error", "a rank died by a signal or ran out of memory", ("rank-crash",),
         why="a rank died, so its peers lost it"),
    Rule("launcher-signalled", "the launcher got SIGHUP", outside=True,
         why="the launcher got SIGHUP: the terminal or ssh session that started it closed (run it under nohup, "
             "tmux or screen, or through the scheduler); not the job's distributed setup"),
    Rule("launcher-signalled", "nothing failed before the job was stopped from outside",
         ("firewall", "straggler-rank", "wrong-socket-interface", "frozen-rank"), 0.3,
         why="no rank reported an error before the launcher was stopped from outside: the job hung. Hangs without "
             "an error are most often ranks that cannot reach each other (a firewall dropping the data ports, the "
             "wrong interface) or a rank that is late or stuck; the Flight Recorder tells which"),
    Rule("worker-torn-down", "the launcher tore down all workers but one and no line says why", ("rank-crash",), 0.55,
         why="the launcher tore down all its workers but one, and no line says why: it spares the one that has "
             "died, whose error is not in the log"),
    Rule("ctx-windows-launcher-frame", "the launcher's own traceback is the only failure",
         ("store-backend-unavailable", "port-in-use"), 0.55,
         why="the launcher's own traceback on Windows, and no worker started or failed: it failed before starting "
             "them, where it creates its store, which torch >= 2.4 builds for Windows cannot run on libuv"),
    # NCCL < 2.12 returns a system error where a peer closes its socket: after Init COMPLETE, a lost peer's echo.
    Rule("nccl-bootstrap-failed", "NCCL finished a communicator", (),
         why="NCCL's bootstrap error came after a communicator was complete: the ranks had connected, so it is "
             "the echo of a peer lost later, not a bootstrap that failed"),
    Rule("stack-in-collective", "stacks wait in different collectives", ("collective-mismatch", "straggler-rank"), 0.85,
         why="py-spy's stacks wait in different collectives (one rank in one call, the others in another): the ranks "
             "took different paths, and each waits for a call the others never make"),
    Rule("stack-idle-main-thread", "a main thread waits outside every collective while others wait in one",
         ("frozen-rank", "straggler-rank"), 0.85,
         why="py-spy's stacks: one main thread waits outside every collective (on its data, a lock, a queue) while "
             "the others wait inside one: that rank holds them all, alive and stuck"),
    Rule("stack-idle-main-thread", "a main thread waits outside every collective", ("frozen-rank", "straggler-rank"), 0.5,
         why="py-spy's stack of a main thread that waits outside every collective (on its data, a lock, a queue): "
             "in a hang, the rank the others wait for"),
    Rule("killed-by-signal", "the workers died only by SIGABRT, after their collectives timed out", (), 0.0,
         why="the workers died by SIGABRT after a collective timed out: torch's watchdog aborts a rank whose "
             "collective timed out, so the abort is the timeout's end, not a crash of its own"),
    Rule("killed-by-signal", "the job was a single process", outside=True,
         why="the job was one process (one node, one process per node, or accelerate's single-process launcher): "
             "no rank of a distributed job died, the process itself was killed (most often by the OOM killer)"),
    Rule("out-of-memory", "the job was a single process", outside=True,
         why="the job was one process: it ran out of memory on its own, no rank of a distributed job died"),
    Rule("out-of-memory", "failing to allocate memory is the only failure, and no line shows another process",
         specificity=0.3,
         why="the log's one failure is a process failing to allocate memory, and no line shows another process: a "
             "rank of a job that died so would leave the others torn down or waiting, so this may be one "
             "process's model too big for its memory"),
    Rule("destroy-not-called", "another failure came first", specificity=0.15,
         why="the warning follows another failure: the process died without tearing down"),
)


@dataclasses.dataclass(frozen=True)
class Reading:
    """What one signature means here, after the rules."""

    signature: str
    favours: tuple[str, ...]
    specificity: float
    outside: bool
    side: bool  # a side effect while a primary sign exists
    why: str


def _rule_for(signature_id: str, facts: Facts, present: set[str]) -> Rule | None:
    return next((rule for rule in RULES if rule.signature == signature_id and FACT_TESTS[rule.when](facts, present)),
                None)


def dismissed(present: set[str], facts: Facts) -> dict[str, str]:
    """Signatures a rule reads as no evidence here (a watchdog's SIGABRT after a timeout), each with the rule's
    why: everything after reads the lines as if they were absent (no primary sign, no rank's or node's own
    error). The dismissing rules read facts of the lines alone, not those diagnose adds across files."""
    return {signature_id: rule.why for signature_id in present
            if (rule := _rule_for(signature_id, facts, present)) and rule.favours == () and not rule.outside}


def read_signature(signature_id: str, facts: Facts, present: set[str], has_primary: bool) -> Reading:
    signature = SIGNATURES_BY_ID[signature_id]
    rule = _rule_for(signature_id, facts, present)
    favours = rule.favours if rule and rule.favours is not None else signature.suggests
    specificity = rule.specificity if rule and rule.specificity is not None else signature.specificity
    outside = signature.outside or bool(rule and rule.outside)
    return Reading(signature_id, () if outside else favours, specificity, outside,
                   signature.effect == "side" and has_primary, rule.why if rule else "")


def is_primary(signature_id: str) -> bool:
    signature = SIGNATURES_BY_ID[signature_id]
    return signature.effect == "primary" and bool(signature.suggests or signature.outside)


@dataclasses.dataclass(frozen=True)
class Ranking:
    causes: tuple[tuple[str, float, tuple[str, ...]], ...]  # (cause, share, supporting signatures) best first
    unknown: float  # share of "unknown / not in the catalog"
    reasons: tuple[str, ...]  # the rules that changed a reading, in words
    outside: tuple[str, ...]  # signatures of known failures outside the catalog


def rank_causes(present: set[str], facts: Facts, learned: dict | None, extra: tuple, gone: dict[str, str]) -> Ranking:
    """`extra`: (cause, specificity, label) readings the caller derived (an own traceback among waiters);
    `gone`: dismissed(present, facts), read as absent (the caller's roles read them so too)."""
    present = present - set(gone)
    has_primary = any(is_primary(i) for i in present) or bool(extra)
    scores: collections.Counter = collections.Counter()
    support: dict[str, set[str]] = collections.defaultdict(set)
    primary_support: set[str] = set()
    known_terms: dict[str, float] = {}  # family -> the most specific reading in it (one family: one piece of evidence)
    outside, reasons = [], list(gone.values())
    for signature_id in sorted(present):
        reading = read_signature(signature_id, facts, present, has_primary)
        if reading.why:
            reasons.append(reading.why)
        if reading.outside:
            outside.append(signature_id)
            continue
        if not reading.favours:
            continue
        weight = (CULPRIT_WEIGHT if SIGNATURES_BY_ID[signature_id].role == "culprit" else 1.0)
        weight *= (SIDE_WEIGHT if reading.side else 1.0) * reading.specificity
        for cause, share in _distribution(reading.favours, (learned or {}).get(signature_id)).items():
            scores[cause] += weight * share
            support[cause].add(signature_id)
            if not reading.side:
                primary_support.add(cause)
        family = SIGNATURES_BY_ID[signature_id].family or signature_id
        term = reading.specificity * (SIDE_WEIGHT if reading.side else 1.0)
        known_terms[family] = max(known_terms.get(family, 0.0), term)
    for cause, specificity, label in extra:
        scores[cause] += CULPRIT_WEIGHT * specificity
        support[cause].add(label)
        primary_support.add(cause)
        known_terms[label] = specificity
    known = (1 - math.prod(1 - term for term in known_terms.values())) * (1 - OUTSIDE_STRENGTH) ** len(outside)
    total = sum(scores.values()) or 1.0
    ordered = sorted(scores, key=lambda cause: (cause in primary_support, scores[cause]), reverse=True)
    causes = tuple((cause, known * scores[cause] / total, tuple(sorted(support[cause]))) for cause in ordered)
    return Ranking(causes, 1 - known if causes else 1.0, tuple(dict.fromkeys(reasons)), tuple(outside))


def _distribution(favours: tuple[str, ...], learned) -> dict[str, float]:
    # The catalog orders a signature's causes by how often real logs show them. A store's
    # recordings only add, after those, causes its scenarios (a team's own among them) showed
    # with the signature: how often a drill was run says nothing of how often a cause strikes.
    added = sorted(set(learned or {}) - set(favours), key=lambda cause: (-learned[cause], cause))
    candidates = {cause: PRIOR_DECAY ** order for order, cause in enumerate((*favours, *added))}
    total = sum(candidates.values())
    return {cause: value / total for cause, value in candidates.items()}
