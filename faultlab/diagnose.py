"""Triage of real failure logs: signatures found, facts read, causes ranked, culprit named.

log_scan streams the logs and keeps a few lines per signature and rank; log_facts reads
numbers and names from them; cause_rules decides what they mean. This module assembles the
answer: ranked causes with the share of "unknown / not in the catalog", the ranks with errors
of their own and those only waiting, and the one rank (and node) at fault where the log
singles one out. Ranks come from line prefixes and file paths, nodes from paths (node1/...).
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

from . import cause_rules, log_exits
from .causes import CAUSES_BY_ID
from .errors import BadInput
from .flight_recorder.evidence import FLIGHT_RECORDER, DumpEvidence, evidence_from_dumps
from .line_ranks import tasks_as_nodes
from .log_facts import read_facts, stamp_of, waited_seconds
from .log_inputs import JobPlace, job_places, log_files
from .log_scan import ERROR_LINES_KEPT, Evidence, scan_all, scan_stream
from .rank_comparison import analyzer_odd_rank, script_shape_odd_rank
from .symptoms import SIGNATURES_BY_ID, on_enough_nodes

NOT_IN_CATALOG = "not-in-catalog"  # the answer for a log whose cause the catalog does not hold
STDIN = "-"
OWN_TRACEBACK = "own-traceback-among-waiters"  # a reading diagnose derives, not a line's signature
UNEVEN_NODES = "nodes-ran-different-numbers-of-ranks"  # another reading diagnose derives
# Causes that lie with the store's host (node 0) when the other nodes fail to reach its store: its firewall,
# its late start or its loss, another job's store on its port.
STORE_HOST_CAUSES = frozenset({"firewall", "late-store-host", "store-host-lost", "shared-master-port"})
HALF_A_YEAR_S = 183 * 86400  # time stamps further apart than this may straddle a new year, which glog does not print


@dataclasses.dataclass(frozen=True)
class RankedCause:
    cause: str
    confidence: float  # calibrated share, 0..1; what is left of 1 is "unknown / not in the catalog"
    signatures: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    causes: tuple[RankedCause, ...]
    unknown: float  # share of "unknown / not in the catalog"
    evidence: tuple[Evidence, ...]
    culprits: tuple[int, ...]  # ranks with their own (culprit-side) errors
    victims: tuple[int, ...]  # ranks with only waiting/teardown errors
    silent: tuple[int, ...]  # ranks known by their files that logged no error: torn down or still waiting
    culprit: int | None  # the one rank named at fault, where the log singles one out
    culprit_node: int | None
    culprit_reason: str
    reasons: tuple[str, ...]  # what the rules read from the facts, in words
    outside: tuple[str, ...]  # signatures of known failures outside the catalog
    error_lines: tuple[Evidence, ...]  # for "no known cause": the error lines seen
    next_check: str
    notes: tuple[str, ...]  # files skipped (binary, unreadable, empty)
    files: int
    bytes: int
    flight_recorder: DumpEvidence | None = None  # where Flight Recorder dumps were among the inputs

    @property
    def exit_code(self) -> int:
        """0: causes found; 1: no known signature (nothing the catalog knows, or only failures outside it)."""
        return 0 if self.causes else 1

    def answers(self) -> tuple[str, ...]:
        """Answers best first, "not in the catalog" among them: first when it is more likely than
        all the catalog's causes together, else after the causes more likely than it."""
        causes = [ranked.cause for ranked in self.causes]
        if not causes or self.unknown > 0.5:
            return (NOT_IN_CATALOG, *causes)
        place = max(1, sum(1 for ranked in self.causes if ranked.confidence >= self.unknown))
        return (*causes[:place], NOT_IN_CATALOG, *causes[place:])


def learned_counts(recordings, cause_of: dict[str, str]) -> dict[str, collections.Counter]:
    """signature -> cause -> how many recorded runs showed that signature with that cause."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for recording in recordings:
        cause = cause_of.get(recording.scenario_id)
        for signature in {symptom.id for symptom in recording.symptoms} if cause else ():
            counts[signature][cause] += 1
    return counts


def learned_counts_from_store(path: Path, cause_of: dict[str, str]) -> dict[str, collections.Counter]:
    """Learned counts from a recording store, if that file exists: opened read-only, never
    created (diagnose must not leave a store, or its directories, behind)."""
    from .store import Store

    with Store(path, readonly=True) as store:
        return learned_counts(store.recordings(kind="run"), cause_of)


def triage(paths: list[Path], store_path: Path | None, stdin=None) -> Diagnosis:
    """`faultlab diagnose`: counts learned from the store (only if its file exists), then diagnose.
    No path reads standard input."""
    from .scenario import cause_of_each
    from .store import default_path

    learned = learned_counts_from_store(Path(store_path) if store_path else default_path(), cause_of_each())
    return diagnose(paths or [Path(STDIN)], learned, stdin=stdin)


def diagnose(paths: list[Path], cause_counts: dict[str, collections.Counter] | None = None,
             workers: int | None = None, stdin=None) -> Diagnosis:
    """Triage the logs at `paths` ("-" for `stdin`, a binary stream). `cause_counts[signature][cause]`
    counts recordings in which the signature appeared with that cause: evidence learned from the store."""
    scans, notes = [], []
    reads_stdin = any(str(path) == STDIN for path in paths)
    if reads_stdin:
        if stdin is None:
            raise BadInput("-: standard input is not available here")
        scans.append(scan_stream(stdin, "<stdin>"))
    given = [path for path in paths if str(path) != STDIN]
    files, file_notes, missing = log_files(given)
    if missing and not files and not scans:
        raise BadInput("; ".join(missing))
    scans += scan_all(files, job_places(given, files), workers)
    notes += file_notes + missing + [scan.note for scan in scans if scan.note]
    found = _assemble(scans, notes, cause_counts, inputs=len(files) + reads_stdin)
    return _with_flight_recorder(found, given)


def _assemble(scans, notes, cause_counts, inputs: int) -> Diagnosis:
    """`scans`: one per input, each with its file's place in the job (none for standard input)."""
    evidence = tasks_as_nodes([item for scan in scans for item in scan.evidence])
    files_of = collections.defaultdict(set)  # a node's log is a file of its own
    for item in evidence:
        files_of[item.signature].add(item.path)
    evidence = [item for item in evidence if on_enough_nodes(item.signature, files_of[item.signature])]
    present = {item.signature for item in evidence}
    facts = read_facts(evidence)
    gone = cause_rules.dismissed(present, facts)
    seen_on: dict[int, set[str]] = collections.defaultdict(set)
    for item in evidence:
        if item.rank is not None and SIGNATURES_BY_ID[item.signature].effect != "context" and item.signature not in gone:
            seen_on[item.rank].add(item.signature)
    culprits, victims = _roles(seen_on)
    named_by_file = {scan.place.rank for scan in scans if scan.place.rank is not None}
    silent = tuple(sorted(named_by_file - set(seen_on)))
    facts.quiet_ranks = set(silent) & {scan.place.rank for scan in scans if scan.size}
    facts.vanished_nodes = _vanished_nodes(scans)
    facts.store_host_late = _store_host_late(scans, evidence)
    facts.ranks_per_node = _ranks_per_node(scans, facts.world_size)
    facts.file_places = len({scan.place for scan in scans if scan.place != JobPlace()})
    extra = ()
    if victims and any(not any(cause_rules.is_primary(i) and SIGNATURES_BY_ID[i].role == "culprit"
                               and not SIGNATURES_BY_ID[i].outside for i in seen_on[rank]) for rank in culprits):
        # A rank died of an error of its own that no cause of the catalog names (none at all, or a
        # failure outside it, such as a CUDA fault), while others waited on it.
        extra = (("rank-crash", 0.7, OWN_TRACEBACK),)
    derived_why = ()
    if len(set(facts.ranks_per_node.values())) > 1:
        # Launchers of one job start as many workers on every node: one was given another --nproc_per_node.
        extra += (("world-size-mismatch", 0.6, UNEVEN_NODES),)
        counts = ", ".join(f"node {node} {count}" for node, count in sorted(facts.ranks_per_node.items()))
        derived_why = (f"the nodes ran different numbers of ranks ({counts}): their launchers were given different "
                       "--nproc_per_node, so the world is not the size meant",)
    ranking = cause_rules.rank_causes(present, facts, cause_counts, extra, gone)
    causes = tuple(RankedCause(cause, round(share, 3), signatures) for cause, share, signatures in ranking.causes
                   if cause in CAUSES_BY_ID)
    culprit, culprit_node, why = _name_culprit(culprits, victims, silent, facts, evidence, scans,
                                               causes[0].cause if causes else None, gone)
    return Diagnosis(
        causes=causes, unknown=round(ranking.unknown, 3), evidence=tuple(evidence), culprits=culprits,
        victims=victims, silent=silent, culprit=culprit,
        culprit_node=culprit_node, culprit_reason=why, reasons=ranking.reasons + derived_why, outside=ranking.outside,
        error_lines=tuple(item for scan in scans for item in scan.error_lines)[:ERROR_LINES_KEPT] if not causes else (),
        next_check=_next_check(causes), notes=tuple(notes), files=inputs, bytes=sum(scan.size for scan in scans),
    )


def _vanished_nodes(scans) -> set[int]:
    """Nodes whose every rank has files of its own and not a line in them, beside nodes whose ranks did
    write: the whole node went away (its host, or its launcher, killed) before its ranks could say a thing."""
    ranked = [scan for scan in scans if scan.place.node is not None and scan.place.rank is not None]
    nodes = {scan.place.node for scan in ranked}
    empty = nodes - {scan.place.node for scan in ranked if scan.size}
    return empty if empty != nodes else set()


def _store_host_late(scans, evidence) -> bool:
    """Node 0, the store's host, came up only after another node had given up dialing its store: the last
    stamped line of every node that gave up is older than node 0's first. A first line that reports a wait
    puts node 0's start that wait earlier; a wait whose length it does not say, or clocks a new year apart,
    decide nothing."""
    waiting = collections.defaultdict(list)  # path -> its waiting lines
    for item in evidence:
        if item.place.node == 0 and SIGNATURES_BY_ID[item.signature].role == "victim":
            waiting[item.path].append(item)
    ups = []
    for scan in scans:
        if scan.place.node != 0 or not scan.first_stamp:
            continue
        stamp, line_number = scan.first_stamp
        waits = [waited_seconds(item.line) for item in waiting[scan.path] if item.line_number <= line_number]
        if None in waits:
            return False
        ups.append(stamp - max(waits, default=0))
    gave_up = {item.place.node for item in evidence
               if item.signature in cause_rules.STORE_DIALS_GIVEN_UP and item.place.node not in (None, 0)}
    last_seen = [stamp for stamp in (stamp_of(item.line) for item in evidence if item.place.node in gave_up)
                 if stamp is not None]
    if not ups or not last_seen or max(ups + last_seen) - min(ups + last_seen) > HALF_A_YEAR_S:
        return False
    return max(last_seen) < min(ups)


def _ranks_per_node(scans, world_size: int | None) -> dict[int, int]:
    """How many ranks have files of their own on each node of a run directory; nothing where a rank is missing
    among them (a gap in the local or the global ranks, or fewer files than the world size said: one rank
    absent, not a node with fewer)."""
    local_ranks, global_ranks = collections.defaultdict(set), set()
    for scan in scans:
        place = scan.place
        if place.node is not None and place.local_rank is not None:
            local_ranks[place.node].add(place.local_rank)
        if place.node is not None and place.rank is not None:
            global_ranks.add(place.rank)
    if global_ranks and global_ranks != set(range(len(global_ranks))):
        return {}
    if any(local != set(range(len(local))) for local in local_ranks.values()):
        return {}
    if world_size and world_size != sum(len(local) for local in local_ranks.values()):
        return {}
    return {node: len(local) for node, local in local_ranks.items()}


def _odd_node(ranks_per_node: dict[int, int]) -> int | None:
    """The node whose number of ranks differs from the others'; of two, the one with fewer (a forgotten
    --nproc_per_node leaves the default, 1)."""
    tally = collections.Counter(ranks_per_node.values())
    if len(tally) < 2:
        return None
    count, times = tally.most_common(1)[0]
    odd = [node for node, ranks in ranks_per_node.items() if ranks != count] if times > 1 else [
        node for node, ranks in ranks_per_node.items() if ranks == min(ranks_per_node.values())]
    return odd[0] if len(odd) == 1 else None


def _roles(seen_on: dict[int, set[str]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Ranks with errors of their own (culprits) and ranks that only waited or lost a peer (victims)."""
    def role_of(ids: set[str], role: str) -> bool:
        return any(SIGNATURES_BY_ID[i].role == role and SIGNATURES_BY_ID[i].effect != "context" for i in ids)

    def own_error(ids: set[str]) -> bool:
        # A culprit-side signature, or a traceback of its own with no sign of waiting on others.
        return role_of(ids, "culprit") or ("python-exception" in ids and not role_of(ids, "victim"))

    culprits = tuple(sorted(rank for rank, ids in seen_on.items() if own_error(ids)))
    victims = tuple(sorted(rank for rank, ids in seen_on.items() if not own_error(ids) and role_of(ids, "victim")))
    return culprits, victims


def _name_culprit(culprits, victims, silent, facts, evidence, scans,
                  first_cause: str | None, dismissed: dict[str, str]) -> tuple[int | None, int | None, str]:
    """The one rank at fault, where the log singles one out, its node, and how it was told.

    In order: the only rank with an error of its own; the rank whose store key the waiting
    ranks waited for; the one rank that never reported waiting while the others did; the
    worker the launcher saw die first, if it died by a signal or nobody else was waiting
    (otherwise that first failure is often a victim that timed out first); the rank torch's
    Flight Recorder analyzer names (the one a collective's others are all missing from); the one
    rank whose tensor at a collective has a size no other rank's has, by the script's own lines;
    the analyzer's again (the one at odds, the one without a dump); the worker the launcher did not
    terminate."""
    if len(culprits) == 1:
        rank, why = culprits[0], "the only rank with an error of its own"
    elif culprits:
        rank, why = None, ""  # several ranks failed on their own: none singled out
    else:
        rank, why = _culprit_by_absence(victims, silent, facts, dismissed)
    if rank is None:
        return None, *_culprit_node(evidence, facts, first_cause, dismissed)
    nodes = ({item.place.node for item in evidence if item.rank == rank}
             | {scan.place.node for scan in scans if scan.place.rank == rank}) - {None}
    node = nodes.pop() if len(nodes) == 1 else None
    if node is None and facts.per_node and (facts.nodes or 0) > 1:
        node = rank // facts.per_node
    if node is None:
        node = _node_of_rank_zero(rank, [scan.place for scan in scans])
    return rank, node, why


def _node_of_rank_zero(rank: int, places) -> int | None:
    """Node 0, for global rank 0 of a job whose files name their nodes: launchers number the ranks node by
    node, node 0's first."""
    return 0 if rank == 0 and any(place.node is not None for place in places) else None


def _culprit_by_absence(victims, silent, facts, dismissed: dict[str, str]) -> tuple[int | None, str]:
    """With no rank's own error in the logs: who is missing, or who the launcher saw die."""
    unheard = sorted(set(silent) | set(_missing_ranks(victims, facts))) if len(victims) >= 2 else []
    first_failures = set(facts.exits.failed_workers)
    if len(facts.awaited_ranks) == 1:
        rank = next(iter(facts.awaited_ranks))
        return rank, f"the waiting ranks waited for rank {rank}'s key in the store, which it never wrote"
    if len(unheard) == 1:
        return unheard[0], f"every other rank reported waiting; rank {unheard[0]} alone said nothing"
    # Beside victims, a worker killed by a signal is the culprit, unless it was stopped from outside or the rules
    # dismissed its signal (torch's watchdog aborting ranks whose collectives timed out).
    if len(first_failures) == 1:
        code, local_rank, pid, node = next(iter(first_failures))
        if not victims or code < 0 and code not in log_exits.STOPPED_EXITS and "killed-by-signal" not in dismissed:
            # a later node's local ranks are not its global ones: that node's launcher names no rank
            rank = (facts.exits.root_cause_ranks[0][0] if len(facts.exits.root_cause_ranks) == 1
                    else local_rank if node in (None, 0) else None)
            if rank is not None:
                return rank, f"the launcher saw local rank {local_rank} (pid {pid}) exit first, with code {code}"
    odd = analyzer_odd_rank(facts)
    if odd is not None:
        return odd, (f"torch's Flight Recorder analyzer lists every other rank as missing from a collective rank {odd} "
                     "issued")
    odd = script_shape_odd_rank(facts)
    if odd is not None:
        return odd, f"the script's own lines give rank {odd} a tensor of a size no other rank has at a collective"
    if len(facts.analyzer_at_fault) == 1:
        rank = next(iter(facts.analyzer_at_fault))
        return rank, (f"torch's Flight Recorder analyzer, comparing the ranks' dumps, names rank {rank} (at odds, or "
                      "no dump)")
    untouched = facts.exits.untouched_pid()
    if untouched:
        pid, rank = untouched
        return rank, f"the launcher sent SIGTERM to every worker but pid {pid}, which had already exited"
    return None, ""


def _missing_ranks(victims, facts) -> list[int]:
    """Ranks of the job (its world size, else up to the highest rank seen) that never logged."""
    return sorted(set(range(facts.world_size or max(victims) + 1)) - set(victims))


def _culprit_node(evidence, facts, first_cause: str | None, dismissed: dict[str, str]) -> tuple[int | None, str]:
    """With no rank singled out: the one node whose logs show an error of its own, if only one does;
    else the one node none of whose ranks wrote a line while the others did."""
    if len(facts.vanished_nodes) == 1:
        node = next(iter(facts.vanished_nodes))
        return node, f"no rank of node {node} wrote a line while the other nodes' ranks did: the node went away"
    if facts.store_host_late:
        return 0, "node 0, the store's host, wrote its first line only after the others had given up dialing it"
    if first_cause in STORE_HOST_CAUSES and any(item.signature in cause_rules.STORE_DIAL_FAILURES
                                                and item.place.node not in (None, 0) for item in evidence):
        return 0, (f"the other nodes could not reach the store, and {first_cause} lies with its host, node 0, "
                   "not with the nodes that dialed it")
    node = _odd_node(facts.ranks_per_node)
    if node is not None:
        others = sorted({ranks for other, ranks in facts.ranks_per_node.items() if other != node})
        return node, (f"node {node} ran {facts.ranks_per_node[node]} rank(s) where the others ran "
                      f"{', '.join(map(str, others))}: its launcher was given another --nproc_per_node")
    nodes = {item.place.node for item in evidence
             if SIGNATURES_BY_ID[item.signature].role == "culprit" and cause_rules.is_primary(item.signature)
             and item.signature not in dismissed}
    nodes.discard(None)
    if len(nodes) == 1:
        return nodes.pop(), "the only node whose logs show an error of its own"
    return None, ""


def _next_check(causes) -> str:
    if len(causes) >= 2:
        first, second = CAUSES_BY_ID[causes[0].cause], CAUSES_BY_ID[causes[1].cause]
        return f"To tell {first.id} from {second.id}: {first.confirm} / {second.confirm}"
    return CAUSES_BY_ID[causes[0].cause].confirm if causes else ""


def _with_flight_recorder(found: Diagnosis, paths: list[Path]) -> Diagnosis:
    """Flight Recorder dumps and torchrun error files among `paths`, weighed in (flight_recorder.evidence)."""
    return _with_dump_evidence(found, evidence_from_dumps(paths))


def _with_dump_evidence(diagnosis: "Diagnosis", evidence: DumpEvidence) -> "Diagnosis":
    """`diagnosis` with the Flight Recorder dump evidence weighed in: the causes the dumps
    point to gain their weight (as much as all the log evidence together), and the culprit
    the recorder names, where it names one, is the culprit."""
    if evidence.skipped:
        diagnosis = dataclasses.replace(diagnosis, notes=diagnosis.notes + evidence.skipped)
    if evidence.analysis is None:
        return diagnosis
    scores = {ranked.cause: ranked.confidence for ranked in diagnosis.causes}
    signatures = {ranked.cause: ranked.signatures for ranked in diagnosis.causes}
    for cause, weight in evidence.causes:
        scores[cause] = scores.get(cause, 0.0) + weight
        signatures[cause] = tuple(sorted(set(signatures.get(cause, ())) | {FLIGHT_RECORDER}))
    total = sum(scores.values()) + diagnosis.unknown or 1.0
    causes = tuple(RankedCause(cause, round(score / total, 3), signatures[cause])
                   for cause, score in sorted(scores.items(), key=lambda item: -item[1]))
    analysis = evidence.analysis
    changes = {"causes": causes, "unknown": round(diagnosis.unknown / total, 3), "flight_recorder": evidence,
               "notes": tuple(note for note in diagnosis.notes if not note.startswith(evidence.used))}
    if len(analysis.culprits) == 1:
        rank = analysis.culprits[0]
        node = diagnosis.culprit_node if diagnosis.culprit == rank else _node_of_rank_zero(
            rank, [item.place for item in diagnosis.evidence])
        changes.update(culprit=rank, culprit_reason=f"Flight Recorder: {analysis.reason}", culprit_node=node)
    return dataclasses.replace(diagnosis, **changes)
