"""The named tests over a log's facts (and the signatures present) that diagnose's rules may ask.

Each key is the question in words, as a rule in cause_rules.py names it; each value answers it from
the facts log_facts.py read and the signatures matched.
"""

from __future__ import annotations

import collections
from typing import Callable

from .log_exits import STOPPED_EXITS
from .log_facts import Facts, stamp_of
from .log_stacks import in_different_collectives, main_thread_waits_apart
from .rank_comparison import analyzer_odd_rank, ranks_in_different_epochs, script_shape_odd_rank, script_shapes_differ
from .symptoms import SIGNATURES_BY_ID

# What a launcher stopped from outside prints of itself: its signal, the workers it then tears down,
# the exception the signal raises in it.
STOPPED_FROM_OUTSIDE = frozenset({"launcher-signalled", "worker-torn-down", "python-exception"})


def _index_beyond_devices(facts: Facts) -> bool:
    asked = {index for indices in facts.device_requests.values() for index in indices}
    return facts.visible_devices is not None and any(index >= facts.visible_devices for index in asked)


def _global_rank_as_index(facts: Facts) -> bool:
    """A rank asked for the device numbered like its global rank, past the devices of one node."""
    per_node = facts.per_node or facts.visible_devices
    return bool(per_node) and any(rank is not None and rank >= per_node and rank in indices
                                  for rank, indices in facts.device_requests.items())


def _rank_past_one_node(facts: Facts) -> bool:
    """A rank that saw 'invalid device ordinal' is numbered past the processes of one node: the
    job has several nodes, and a global rank chose the device."""
    return bool(facts.per_node) and any(rank >= facts.per_node for rank in facts.ordinal_ranks)


def _first_local_device_refused(facts: Facts) -> bool:
    """A rank other than 0 failed as local rank 0 of its node: device 0 exists wherever a GPU is
    visible, so the index it asked for was not its local rank (its global rank, most often)."""
    return any(local_rank == 0 and rank > 0 for rank, local_rank in facts.ordinal_local_ranks)


def _every_rank_timed_out(facts: Facts) -> bool:
    """Every rank of the job timed out in its collective: nobody was absent (a straggler or a dead rank
    would be), so what they waited for was each other. The job's size is its stated world size, or,
    where each rank has files of its own (a run directory), the ranks those files name; one log of
    some ranks (a node's share of a bigger job) says neither."""
    ranks = facts.timed_out
    if facts.world_size:
        world = facts.world_size
    elif ranks and all(node is not None for node in ranks.values()):
        world = max(ranks) + 1
    else:
        return False
    return len(ranks) >= 2 and set(ranks) >= set(range(world))


def _across_nodes(facts: Facts) -> bool:
    return len({node for node in facts.timed_out.values() if node is not None}) > 1 or (facts.nodes or 1) > 1


def _nothing_failed(present: set) -> bool:
    """Only context lines, but for what a stop from outside leaves (the launcher's signal, its teardown, the
    SignalException traceback) where the launcher was signalled."""
    left = present - STOPPED_FROM_OUTSIDE if "launcher-signalled" in present else present
    return all(SIGNATURES_BY_ID[i].effect == "context" for i in left)


def _only_the_teardown(facts: Facts, present: set) -> bool:
    """The launcher tore its workers down sparing one (the pid it did not signal), no rank's failure is in
    the log (cut before it, or never printed), and nothing says the job was stopped or restarted on purpose:
    no signal to the launcher, no worker ended by one from outside, no restart of the worker group."""
    said = {i for i in present if SIGNATURES_BY_ID[i].effect != "context"}
    exits = facts.exits
    # a signal to the launcher has a line of its own (launcher-signalled), which `said` would hold
    return ("worker-torn-down" in said and said <= {"worker-torn-down", "child-failed"}
            and exits.untouched_pid() is not None and not facts.workers_restarted
            and not any(code in STOPPED_EXITS for code, *_ in exits.failed_workers))


def _launcher_failed_alone(facts: Facts, present: set) -> bool:
    """Only context lines, and none says a worker started, ended or was restarted, or the launcher was
    stopped: the launcher's own traceback is all there is of the failure. Not accelerate's launcher of one
    process, which runs the script itself."""
    started = {"ctx-worker-exit", "ctx-workers-restarted", "ctx-rank-announced"}
    return (all(SIGNATURES_BY_ID[i].effect == "context" for i in present) and not started & present
            and not facts.one_process_launch)


def _culprit_sign(present: set) -> bool:
    """Some line is a failure of its own (not a rank waiting, nor context)."""
    return any(SIGNATURES_BY_ID[i].role == "culprit" for i in present)


RANK_DEATHS = {"killed-by-signal", "out-of-memory"}


def _a_rank_failed_or_left(present: set) -> bool:
    """A rank died (out of memory, a signal) or a peer's connection ended: a refusal then is most likely the gone
    peer's."""
    return bool(RANK_DEATHS & present) or any(SIGNATURES_BY_ID[i].family == "peer-lost" for i in present)


def _store_refused_at_loopback(facts: Facts, present: set) -> bool:
    """The store client (which dials MASTER_ADDR) was refused at a loopback address, in a job not
    known to be one node: MASTER_ADDR, or the host name it resolves to, points at the dialing host."""
    return (bool({"client-connect-failed", "rendezvous-connect-failed"} & present) and (facts.nodes or 2) > 1
            and any(a.loopback and a.refused for a in facts.addresses))


def _timed_out_at_loopback(facts: Facts) -> bool:
    """A connect timed out at a loopback address. The host there is up and nothing lies between, so it
    was torch retrying refusals until its deadline; on several nodes, MASTER_ADDR points at the dialer."""
    return any(a.loopback and a.timed_out for a in facts.addresses)


# Lines that say how a hang ended: a wait past its deadline (a collective's, a store key's, init's store barrier's, a
# watchdog's or a peer's heartbeat), or the job stopped from outside (Ctrl-C, the scheduler's time limit).
HANG_ENDINGS = frozenset({"collective-timeout", "hccl-collective-timeout", "store-wait-timeout",
                          "filestore-wait-timeout", "store-barrier-timeout", "watchdog-hang", "hccl-heartbeat-lost",
                          "launcher-signalled"})


def _shm_named(facts: Facts, present: set) -> bool:
    return "shm-path" in facts.shm or bool({"nccl-shm-failed", "torch-shm-failed", "dataloader-bus-error"} & present)


def _more_ranks_than_devices(facts: Facts) -> bool:
    ranks = facts.per_node or _announced_on_one_node(facts) or (
        max(facts.duplicate_ranks) + 1 if facts.duplicate_ranks else 0)
    return facts.visible_devices is not None and ranks > facts.visible_devices


def _announced_on_one_node(facts: Facts) -> int:
    """The most ranks that announced themselves on one node (one launch's output shares its node); none where
    srun's output gathers every node's into one."""
    if facts.slurm_tasks:
        return 0
    return max(collections.Counter(node for node, _, _ in facts.announcements).values(), default=0)


def _physical_ids_may_be_the_index(facts: Facts) -> bool:
    """CUDA_VISIBLE_DEVICES names physical ids without device 0 (6,7), and no index asked for is known to be
    other than one of them: the index may have been taken from those ids."""
    asked = {index for indices in facts.device_requests.values() for index in indices}
    return (bool(facts.visible_ids) and 0 not in facts.visible_ids and asked <= set(facts.visible_ids)
            and not _more_ranks_than_devices(facts))


def _one_slurm_task_of_several(facts: Facts, present: set) -> bool:
    """SLURM was to start the processes, yet only the first said it started, and nothing failed: the batch
    script ran python once itself instead of through srun (one task of the world)."""
    return (facts.slurm_tasks and {rank for _, _, rank in facts.announcements} == {0} and (facts.world_size or 1) > 1
            and not _culprit_sign(present))


def _ranks_claimed_twice(facts: Facts) -> bool:
    """Processes announced some ranks twice while as many ranks of the world were never announced, and no more
    processes announced than the world holds: two launchers took the same node rank. A node's own log counts
    each rank once (its processes restarted, or its lines printed twice, are not a second node); so does a log
    of unknown node where torchrun restarted the workers; otherwise it counts its lines. Where two known
    launchers claimed each doubled rank (two nodes' logs, or two srun or mpirun tasks that each announced
    several ranks, as a node's launcher does), a paste cut short may have lost other claims, never added any:
    at least as many ranks unclaimed will do, unless the workers restarted (ranks may move between nodes)."""
    claims, launchers = collections.Counter(), collections.defaultdict(set)
    lines_of_task = collections.Counter()
    for (node, task, rank), times in facts.announcements.items():
        lines_of_task[node, task] += times
    for (node, task, rank), times in facts.announcements.items():
        claims[rank] += 1 if node is not None or facts.workers_restarted else times
        if node is not None or (task is not None and lines_of_task[node, task] > 1):
            launchers[rank].add((node, task))
    doubled = {rank for rank, times in claims.items() if times > 1}
    unclaimed = set(range(facts.world_size or 0)) - set(claims)
    if not doubled or claims.total() > (facts.world_size or 0):
        return False
    if not facts.workers_restarted and all(len(launchers[rank]) > 1 for rank in doubled):
        return len(unclaimed) >= len(doubled)
    return len(doubled) == len(unclaimed)


# Lines whose facts the test below reads for the size of the job; any other line is more than one process's own
JOB_SIZE_LINES = frozenset({"ctx-topology", "ctx-rank-announced"})


def _one_process_out_of_memory(facts: Facts, present: set) -> bool:
    """A process failing to allocate memory is all the log says of a failure (the host killed nothing, NCCL's
    communicators asked for none), no other line but of the job's size, and that size is one: no world (as
    announced ranks say it too), node or node's processes past one, no rank past 0 named by a line or a file,
    no second place in the job among the files. As far as the log tells, one process's model did not fit its
    memory; a rank of a job that died so leaves the others torn down or waiting. Rank 0 may be named: torchrun
    labels the lines of its one worker so too."""
    # the error's own traceback ends in a Python exception line
    return (present - {"python-exception"} - JOB_SIZE_LINES == {"out-of-memory"}
            and facts.out_of_memory == {"allocation"}
            and max(facts.world_size or 1, facts.nodes or 1, facts.per_node or 1) == 1
            and facts.ranks_named <= {0} and facts.file_places <= 1)


def _ended_by_their_watchdog(facts: Facts, present: set) -> bool:
    """Every worker a line says died by a signal died by SIGABRT, each after a collective timed out, and no line
    of them was left unkept (another signal may hide there): torch's watchdog aborts a rank whose collective
    timed out. After: below a timeout in its own file, or else stamped no earlier than the first timeout."""
    exits = facts.exits
    return (bool(exits.aborts) and not exits.other_signals and not exits.signal_lines_cut()
            and "collective-timeout" in present and all(_after_a_timeout(facts, *abort) for abort in exits.aborts))


def _after_a_timeout(facts: Facts, path, line_number: int, line: str) -> bool:
    if path in facts.first_timeout_lines:
        return line_number > facts.first_timeout_lines[path]
    stamp = stamp_of(line)
    return stamp is not None and facts.first_timeout_stamp is not None and stamp >= facts.first_timeout_stamp


def _barrier_reached(facts: Facts) -> dict[int, int]:
    """World size -> the most ranks seen at init's store barrier: its waiting lines count up as ranks arrive, so
    the largest count (the timeout's own, where there is one) says how many never came."""
    reached: dict[int, int] = {}
    for size, count in facts.barrier_counts:
        reached[size] = max(count, reached.get(size, 0))
    return reached


STORE_TRACE_REACH = 20  # lines: how far from a lost store connection its own trace's frames lie


def _store_lost_while_created(facts: Facts) -> bool:
    """A store connection lost with a frame of that store being created in its own trace: the same file and rank,
    Python's frames above the error, C++'s (torch's exception) below it."""
    return any(path == where and rank == frame_rank
               and 0 < (at - line if cpp else line - at) <= STORE_TRACE_REACH
               for path, rank, line, _ in facts.store_losses
               for where, frame_rank, at, cpp in facts.store_creations)


# Named tests over the facts (and the signatures present): what a rule may ask.
FACT_TESTS: dict[str, Callable[[Facts, set], bool]] = {
    "the device is chosen by the global rank": lambda f, s: "rank" in f.set_device_args,
    "a rank asked for its global rank as device index": lambda f, s: _global_rank_as_index(f),
    "the job spans several nodes": lambda f, s: (f.nodes or 1) > 1,
    "a failing rank is numbered past one node's processes": lambda f, s: _rank_past_one_node(f),
    "the first local rank of a later node failed": lambda f, s: _first_local_device_refused(f),
    "the device is chosen by the local rank": lambda f, s: "local_rank" in f.set_device_args,
    "a device index beyond the visible count": lambda f, s: _index_beyond_devices(f),
    "more ranks on the node than devices": lambda f, s: _more_ranks_than_devices(f),
    "no device is visible at all": lambda f, s: f.visible_devices == 0,
    "the visible devices are physical ids without device 0": lambda f, s: _physical_ids_may_be_the_index(f),
    "under SLURM only the first of several processes started": _one_slurm_task_of_several,
    "two launchers claimed each of some ranks, others unclaimed": lambda f, s: _ranks_claimed_twice(f),
    "the ranks' own progress lines put them in different epochs at one step": lambda f, s: ranks_in_different_epochs(f),
    "every rank of the group but one is missing from a collective": lambda f, s: analyzer_odd_rank(f) is not None,
    "the store client was refused at a loopback address": _store_refused_at_loopback,
    "the store's host started after the others gave up dialing it": lambda f, s: f.store_host_late,
    "the store client timed out at a loopback address, several nodes": lambda f, s: (
        (f.nodes or 1) > 1 and _timed_out_at_loopback(f)),
    "the store client timed out at a loopback address": lambda f, s: _timed_out_at_loopback(f),
    # On a job known to be one node a loopback is the right address: refused then means nothing listens.
    "the refused address is a loopback": lambda f, s: (f.nodes or 2) > 1 and any(a.loopback and a.refused
                                                                                 for a in f.addresses),
    "a peer advertised a loopback or link-local address": lambda f, s: any(a.loopback or a.link_local for a in f.addresses),
    # a loopback address on several nodes is a peer's mistake, whatever answered there
    "gloo's connect reached a peer, which hung up": lambda f, s: f.connect_hung_up and not (
        (f.nodes or 1) > 1 and any(a.loopback for a in f.addresses)),
    "nothing timed out or was stopped, and no line shows the main process at work": lambda f, s: (
        not f.main_work_shown and not HANG_ENDINGS & s),
    "docker bridges or veths among NCCL's interfaces or addresses":
        lambda f, s: bool(f.bridge_interfaces) or any(a.docker_bridge for a in f.addresses),
    "NCCL uses docker bridges or veths, nothing failed, and the job may span hosts": lambda f, s: (
        bool(f.bridge_interfaces) and (f.nodes or 2) > 1 and _nothing_failed(s)),
    "a container's bridge address was dialed": lambda f, s: any(a.docker_bridge for a in f.addresses),
    "the full file system is /dev/shm": _shm_named,
    "the full file system is a disk": lambda f, s: "disk-path" in f.shm and not _shm_named(f, s),
    "the descriptor limit was reached (errno 24)": lambda f, s: "fd-limit" in f.shm,
    "/dev/shm has no space left": lambda f, s: "no-space" in f.shm,
    "attaching to a peer's segment failed": lambda f, s: "attach" in f.shm and "create" not in f.shm,
    "binding was denied (errno 13)": lambda f, s: 13 in f.errnos,
    "the name looked up is already an IP address": lambda f, s: bool(f.addresses) and all(a.literal for a in f.addresses),
    "the address is not valid (errno 22 or 10049)": lambda f, s: bool({22, 10049} & f.errnos),
    "the connection was refused (errno 111)": lambda f, s: 111 in f.errnos,
    "ranks disagree on the collective": lambda f, s: bool(f.rank_disagreement()),
    "every rank of several nodes timed out in the collective": lambda f, s: _every_rank_timed_out(f) and _across_nodes(f),
    "every rank of one node timed out in the collective": lambda f, s: _every_rank_timed_out(f) and not _across_nodes(f),
    "an InfiniBand transfer error was seen": lambda f, s: bool(f.ib_codes) or bool({"ib-completion-error", "ib-port-event"} & s),
    "the workers died only by SIGABRT, after their collectives timed out": _ended_by_their_watchdog,
    "failing to allocate memory is the only failure, and no line shows another process": _one_process_out_of_memory,
    "a rank died by a signal or ran out of memory": lambda f, s: bool(RANK_DEATHS & s),
    "the job was a single process": lambda f, s: (f.world_size or 1) == 1 and (
        f.one_process_launch or (f.per_node == 1 and f.nodes == 1)),
    "NCCL lost a peer across nodes before any rank died or its communicator was complete": lambda f, s: (
        (f.nodes or 1) > 1 and not f.nccl_init_complete and not f.ib_codes
        and not {"killed-by-signal", "out-of-memory", "ib-completion-error", "ib-port-event"} & s),
    # Work completion status 4 (IBV_WC_LOC_PROT_ERR): the HCA could not use registered memory, as when
    # GPUDirect RDMA lacks its peer-memory module or PCIe ACS/IOMMU redirects peer traffic.
    "an InfiniBand transfer failed on memory protection (status 4)": lambda f, s: 4 in f.ib_codes and 12 not in f.ib_codes,
    "more ranks reached the barrier than the world holds": lambda f, s: any(
        count > size for size, count in _barrier_reached(f).items()),
    "at most half the world reached the barrier, more than two ranks missing": lambda f, s: any(
        2 * count <= size and size - count > 2 for size, count in _barrier_reached(f).items()),
    "a store host waited for clients that never came": lambda f, s: "rendezvous-clients-timeout" in s,
    "the store's connection was lost while the store was being created": lambda f, s: _store_lost_while_created(f),
    "the script's own lines give one rank a tensor size at a collective that all the others' differ from": (
        lambda f, s: script_shape_odd_rank(f) is not None),
    "the script's own lines give ranks different tensor sizes at one collective": lambda f, s: script_shapes_differ(f),
    "the store's host (node 0) went silent as a whole": lambda f, s: 0 in f.vanished_nodes,
    # A rank that crashed leaves a trace, an exit by a signal, or an error of its own somewhere; one killed
    # with its node leaves nothing at all. One that wrote its output and no error finished its own way.
    "the rank its peers lost wrote output and no error": lambda f, s: bool(f.quiet_ranks) and not _culprit_sign(s),
    "another failure came first": lambda f, s: _culprit_sign(s),
    "nothing failed before the job was stopped from outside": lambda f, s: _nothing_failed(s),
    "the launcher tore down all workers but one and no line says why": _only_the_teardown,
    "the launcher's own traceback is the only failure": _launcher_failed_alone,
    "NCCL finished a communicator": lambda f, s: f.nccl_init_complete,
    "NCCL dialed a peer itself": lambda f, s: "nccl-connect-failed" in s,
    "TensorPipe was refused where a rank died or a peer went away": lambda f, s: (
        "tensorpipe-connect-failed" in s and _a_rank_failed_or_left(s)),
    "TensorPipe dialed a peer itself": lambda f, s: "tensorpipe-connect-failed" in s,
    "NCCL dialed a peer itself and then finished its communicator": lambda f, s: (
        "nccl-connect-failed" in s and f.nccl_init_complete),
    "the launcher got SIGHUP": lambda f, s: "SIGHUP" in f.exits.launcher_signals,
    "a main thread waits outside every collective while others wait in one": lambda f, s: (
        main_thread_waits_apart(f.stacks) and any(stack.in_collective for stack in f.stacks)),
    "a main thread waits outside every collective": lambda f, s: main_thread_waits_apart(f.stacks),
    "stacks wait in different collectives": lambda f, s: in_different_collectives(f.stacks),
    "other nodes got through to a store": lambda f, s: bool(
        {"connection-closed-by-peer", "collective-timeout", "rank-assignment-timeout"} & s),
}
