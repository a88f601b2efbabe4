"""Cross-rank analysis of Flight Recorder dumps (pure).

Per process group, every rank numbers its collectives 1, 2, 3 ... (collective_seq_id), so
the n-th collective of a group is the same call on every rank of a correct program. The
first sequence id that not every rank issued, or that ranks issued as different ops, sizes
or dtypes, is where the ranks diverged. Completion comes from pg_status (gloo leaves every
entry 'scheduled'). Ranks inside the collective that diverged are victims; the culprit is
the odd one out: the rank that never issued it, issued something else, or could not dump.
"""

from __future__ import annotations

import collections

from .records import Analysis, Entry, Finding, FlightRecorderCapture, RankDump, RankProgress

DEFAULT_GROUP = "0"


def _group_entries(dump: RankDump, group: str) -> dict[int, Entry]:
    return {e.seq_id: e for e in dump.entries if e.group == group and not e.is_p2p and e.seq_id > 0}


def _progress(dump: RankDump, group: str) -> tuple[int, int]:
    """(last enqueued, last completed) of one group on one rank."""
    entries = _group_entries(dump, group)
    status = dump.status_of(group)
    if status is not None:
        return status.last_enqueued, status.last_completed
    enqueued = max(entries, default=-1)
    done = [seq for seq, e in entries.items() if e.state == "completed" or e.retired]
    return enqueued, max(done, default=-1)


def _groups(capture: FlightRecorderCapture) -> list[str]:
    names = {e.group for dump in capture.dumps for e in dump.entries if not e.is_p2p}
    names |= {s.group for dump in capture.dumps for s in dump.status}
    return sorted(names, key=lambda name: (name != DEFAULT_GROUP, name)) or [DEFAULT_GROUP]


def _rank_progress(capture: FlightRecorderCapture, group: str) -> tuple[RankProgress, ...]:
    rows = []
    for rank in range(capture.world_size):
        dump = capture.dump_of(rank)
        if dump is None:
            why = next((m.reason for m in capture.missing if m.rank == rank), "no dump")
            rows.append(RankProgress(rank, False, why, None, None, (), ()))
            continue
        enqueued, completed = _progress(dump, group)
        entries = _group_entries(dump, group)
        pending = tuple(seq for seq in sorted(entries) if seq > completed)
        ops = tuple(f"{seq}:{entries[seq].op_name}" for seq in sorted(entries))
        rows.append(RankProgress(rank, True, dump.trigger, enqueued, completed, pending, ops))
    return tuple(rows)


def _signature(entry: Entry) -> tuple:
    return entry.op_name, entry.input_sizes, entry.input_dtypes


def _odd_ones(by_rank: dict[int, object]) -> tuple[int, ...]:
    """The ranks whose value differs from the most common one; () when there is no majority."""
    counts = collections.Counter(by_rank.values())
    ranked = counts.most_common()
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return ()
    common = ranked[0][0]
    return tuple(sorted(rank for rank, value in by_rank.items() if value != common))


def _mismatch_findings(group: str, seq: int, entries: dict[int, Entry]) -> list[Finding]:
    findings = []
    for kind, key in (("op-mismatch", lambda e: e.op_name), ("size-mismatch", lambda e: e.input_sizes),
                      ("dtype-mismatch", lambda e: e.input_dtypes)):
        values = {rank: key(entry) for rank, entry in entries.items()}
        if len(set(values.values())) > 1:
            shown = ", ".join(f"rank {rank} {_show(value)}" for rank, value in sorted(values.items()))
            findings.append(Finding(kind, group, seq, _odd_ones(values) or tuple(sorted(values)),
                                    f"#{seq} differs between ranks: {shown}"))
            break  # an op mismatch explains the sizes that differ with it
    return findings


def _show(value) -> str:
    if isinstance(value, tuple):
        return "x".join(str(size) for shape in value for size in shape) if value and isinstance(value[0], tuple) \
            else ",".join(value) if value else "-"
    return str(value)


def _ranks(ranks) -> str:
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def _divergence(group, progress, capture) -> tuple[int | None, str | None, list[Finding]]:
    """The first sequence id not joined alike by every rank, its op, and what differs there."""
    dumped = {row.rank: capture.dump_of(row.rank) for row in progress if row.dumped}
    no_dump = [row.rank for row in progress if not row.dumped]
    entries = {rank: _group_entries(dump, group) for rank, dump in dumped.items()}
    enqueued = {row.rank: row.last_enqueued for row in progress if row.dumped}
    completed = {row.rank: row.last_completed for row in progress if row.dumped}
    last = max(enqueued.values(), default=-1)
    for seq in range(1, last + 1):
        joined = {rank: entries[rank][seq] for rank in dumped if seq in entries[rank]}
        missing = [rank for rank in dumped if enqueued[rank] < seq]
        op = collections.Counter(e.op_name for e in joined.values()).most_common(1)
        op_name = op[0][0] if op else None
        findings = _mismatch_findings(group, seq, joined)
        unfinished = any(completed[rank] < seq for rank in joined) if joined else False
        if missing or findings or (no_dump and unfinished):
            if missing:
                text = (f"#{seq} {op_name or ''} not joined by {_ranks(missing)}: "
                        f"{_ranks(joined)} issued it").replace("  ", " ")
                findings.insert(0, Finding("not-joined", group, seq, tuple(missing), text))
            if no_dump:
                findings.append(Finding("no-dump", group, seq, tuple(no_dump),
                                        f"{_ranks(no_dump)} left no dump: whether they joined #{seq} is unknown"))
            return seq, op_name, findings
    failed = any(dump.trigger != "exit" for dump in dumped.values())
    if no_dump and failed and last >= 1:
        # gloo counts a collective that timed out as completed: the last collective of ranks
        # that ended badly is where they stood, and the silent ranks may never have joined it.
        op = collections.Counter(entries[rank][last].op_name for rank in dumped if last in entries[rank])
        text = f"{_ranks(no_dump)} left no dump: whether they joined #{last}, where the others stood, is unknown"
        return last, (op.most_common(1)[0][0] if op else None), [Finding("no-dump", group, last, tuple(no_dump), text)]
    return None, None, [Finding("no-dump", group, None, tuple(no_dump), f"{_ranks(no_dump)} left no dump")] \
        if no_dump else []


def _lagging(group: str, progress: tuple[RankProgress, ...]) -> list[Finding]:
    done = {row.rank: row.last_completed for row in progress if row.dumped}
    if not done:
        return []
    ahead = max(done.values())
    behind = sorted(rank for rank, value in done.items() if value < ahead)
    if not behind:
        return []
    shown = ", ".join(f"rank {rank} at {seq_text(done[rank])}" for rank in behind)
    return [Finding("lagging", group, ahead, tuple(behind), f"last completed collective lags #{ahead}: {shown}")]


def _culprits(seq, op, findings, progress) -> tuple[tuple[int, ...], str]:
    rows = {row.rank: row for row in progress}
    by_kind = {f.kind: f for f in findings if f.seq_id == seq}
    mismatch = next((f for f in findings if f.kind.endswith("-mismatch")), None)
    if mismatch and len(mismatch.ranks) < sum(row.dumped for row in progress) / 2:
        return mismatch.ranks, f"{_ranks(mismatch.ranks)} issued something else at #{seq}: {mismatch.text}"
    missing = by_kind.get("not-joined")
    no_dump = by_kind.get("no-dump")
    joined = sorted(row.rank for row in progress if row.dumped and row.last_enqueued >= seq)
    if missing:
        absent = sorted(missing.ranks + (no_dump.ranks if no_dump else ()))
        if len(joined) > len(absent):
            how = "; ".join(_absent_how(rows[rank], seq) for rank in absent)
            return tuple(absent), f"{_ranks(joined)} wait in #{seq} ({op}) that {_ranks(absent)} never issued: {how}"
        if len(joined) < len(absent):
            return tuple(joined), (f"{_ranks(joined)} issued #{seq} ({op}), an extra collective no other rank "
                                   f"issued; {_ranks(absent)} went on without it")
        return (), (f"{_ranks(joined)} issued #{seq} ({op}) and {_ranks(absent)} did not: "
                    "with as many on each side, the recorder cannot tell which side is wrong")
    if no_dump:
        return no_dump.ranks, (f"{_ranks(joined)} stood in #{seq} ({op}) and {_ranks(no_dump.ranks)} left no dump "
                               f"({'; '.join(rows[r].trigger for r in no_dump.ranks)}): the silent rank held them up")
    return (), "the ranks issued different collectives and no rank is the odd one out"


TRIGGER_WORDS = {"exit": "ran to its end", "error": "raised", "terminated": "was torn down (SIGTERM)",
                 "deadline": "was still running at the deadline", "file": "dumped"}


def seq_text(seq: int | None) -> str:
    return "none" if seq is None or seq < 1 else f"#{seq}"


def _absent_how(row: RankProgress, seq: int) -> str:
    if not row.dumped:
        return f"rank {row.rank} left no dump ({row.trigger})"
    where = "inside #" + ",".join(map(str, row.pending)) if row.pending else "outside any collective"
    return (f"rank {row.rank} had completed {seq_text(row.last_completed)}, was {where}, and "
            f"{TRIGGER_WORDS.get(row.trigger, 'dumped')}")


def analyse(capture: FlightRecorderCapture) -> Analysis:
    """Match every group's collectives across ranks; the first group that diverges decides."""
    groups = _groups(capture)
    chosen = None
    for group in groups:
        progress = _rank_progress(capture, group)
        seq, op, findings = _divergence(group, progress, capture)
        if chosen is None or seq is not None:
            chosen = (group, progress, seq, op, findings)
        if seq is not None:
            break
    group, progress, seq, op, findings = chosen
    said = {rank for finding in findings for rank in finding.ranks}
    findings = findings + [f for f in _lagging(group, progress) if not set(f.ranks) <= said]
    if seq is None:
        culprits, reason = (), _quiet_reason(progress)
    else:
        culprits, reason = _culprits(seq, op, findings, progress)
    return Analysis(group, progress, tuple(findings), seq, op, culprits, reason, "")


def _quiet_reason(progress: tuple[RankProgress, ...]) -> str:
    if not any(row.dumped for row in progress):
        return "no rank left a dump: the recorder has nothing to compare"
    if all(row.last_enqueued is None or row.last_enqueued < 1 for row in progress if row.dumped):
        # NCCL records a collective once its communicator exists: a rank stuck or failing in
        # communicator creation or device selection dumps an empty buffer.
        return ("no rank that dumped recorded any collective: the job stopped before its first one "
                "(process group or communicator creation, device selection), which the recorder "
                "does not see; the logs tell why")
    last = max((row.last_completed for row in progress if row.dumped and row.last_completed is not None), default=-1)
    completed = f"completed up to #{last}" if last >= 0 else "completed none"
    return (f"every rank that dumped issued the same collectives and {completed}: "
            "the recorder shows no divergence (it records no values and no reduce op)")
