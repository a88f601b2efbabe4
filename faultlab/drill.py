"""Drills: a trainee gets a broken job's ticket and evidence, asks for more at a cost,
diagnoses it, and is scored against the answer key and the baseline comparison.

A drill never shows the scenario's id, title or answer before the diagnosis. Evidence is
what an engineer on the job would have: the per-rank outcome at first; each rank's logs,
each node's launch command and launcher log, the matched signatures, a debug re-run and
the hints on request, each at the cost in score.COSTS.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import hashlib
import random
import textwrap
import time

from tabulate import tabulate

from . import runner, scenario as scenarios
from .errors import BadInput, EnvironmentProblem
from .records import Recording
from .render import ending_text, rank_table, seconds_text, symptom_lines, value_text
from .scenario import Scenario
from .score import COSTS, Diagnosis, Score, score
from .store import Store


@dataclasses.dataclass(frozen=True)
class DrillResult:
    """One finished drill, as stored per trainee."""

    id: str
    trainee: str
    pack: str | None
    scenario_id: str
    cause: str  # the right cause, for per-cause weak spots
    recording_id: str
    replay: bool
    answer_cause: str
    answer_culprit: str
    answer_ranks: tuple[int, ...]
    answer_fix: str
    used: dict[str, int]
    score_cause: float
    score_culprit: float
    score_ranks: float
    score_fix: float
    costs: int
    total: float
    max: int
    notes: tuple[str, ...]
    started_at: str
    seconds: float


def choose(name: str | None, pack: str | None, pick_random: bool, seed: int | None = None) -> list[Scenario]:
    """The scenarios to drill: one named, one at random (from a pack or the catalog), or a pack."""
    if sum(bool(x) for x in (name, pack and not pick_random, pick_random)) != 1:
        raise BadInput("choose a drill: a SCENARIO, --pack NAME, or --random (optionally with --pack)")
    if name:
        return [scenarios.resolve(name)]
    pool = [scenarios.resolve(item) for item in scenarios.load_packs()[pack]] if pack else scenarios.load_all()
    if pick_random:
        pool = [item for item in pool if item.answer.cause != "healthy"] or pool
        return [random.Random(seed).choice(pool)]
    return pool


class DrillSession:
    """One drill in progress: the broken run, the help taken so far, the clock."""

    def __init__(self, scenario: Scenario, recording: Recording, store: Store) -> None:
        self.scenario = scenario
        self.recording = recording
        self.store = store
        self.used: collections.Counter = collections.Counter()
        self.started = time.monotonic()
        self.started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self.label = "drill " + hashlib.sha256(recording.id.encode()).hexdigest()[:6]

    @classmethod
    def start(cls, scenario: Scenario, store: Store, replay: bool = False, live_only: bool = False) -> "DrillSession":
        """Run the scenario live (or replay a recording of it) and open a drill on it."""
        if replay:
            recording = runner.replay_stored_or_shipped(scenario, store)
        else:
            recording = runner.run_scenario(scenario, store, runner.RunOptions(live_only=live_only))
        return cls(scenario, recording, store)

    # --- what the trainee sees -----------------------------------------------------------

    def briefing(self) -> str:
        capture = self.recording.capture
        origin = "" if self.recording.live else f"\n{self.recording.source}\n"
        rows = [
            [r.shown_rank, f"{r.node}/{r.local_rank}", value_text(r.value),
             ending_text(r.ending, r.exit_code), r.last_phase,
             seconds_text(r.end_t - r.start_t if r.start_t is not None else None)]
            for r in capture.ranks
        ]
        expected = self.recording.comparison.deltas[0].expected_value if self.recording.comparison.deltas else 0
        return "\n".join([
            f"{self.label}: difficulty {self.scenario.difficulty}, {len(capture.nodes)} node(s), "
            f"{capture.world_size} rank(s), {self.recording.backend}, timeout {capture.timeout_s:g}s{origin}",
            "",
            "Ticket:",
            textwrap.indent(textwrap.fill(self.scenario.ticket, 92), "  "),
            "",
            f"What each rank did (a healthy run prints {expected:g} on every rank and exits 0):",
            tabulate(rows, headers=["rank", "node/local", "value", "ended", "last phase", "seconds"]),
        ])

    def menu(self) -> str:
        return (
            f"  log N        rank N's full stdout and stderr          (-{COSTS['log']})\n"
            f"  launcher N   node N's launch command and launcher log  (-{COSTS['launcher']})\n"
            f"  network N    node N's ip addr, routes, ss -ltn, nft rules (-{COSTS['network']})\n"
            f"  symptoms     the known signatures found in the logs     (-{COSTS['symptoms']})\n"
            f"  debug KNOB   re-run live with {'/'.join(runner.DEBUG_KNOBS)}  (-{COSTS['debug']})\n"
            f"  hint         the next hint ({len(self.scenario.hints) - self.used['hint']} left)"
            f"                (-{COSTS['hint']})\n"
            f"  causes       the cause catalog (free)\n"
            f"  answer       give your diagnosis"
        )

    def rank_log(self, rank: int) -> str:
        matches = [r for r in self.recording.capture.ranks if r.shown_rank == rank]
        if not matches:
            raise BadInput(f"there is no rank {rank} in this job")
        self.used["log"] += 1
        parts = []
        for r in matches:
            parts.append(f"--- rank {rank} (node {r.node}, local rank {r.local_rank}) stdout ---\n{r.stdout.rstrip()}")
            parts.append(f"--- rank {rank} stderr ---\n{r.stderr.rstrip()}")
        return "\n".join(parts)

    def _node(self, node: int):
        nodes = self.recording.capture.nodes
        if not 0 <= node < len(nodes):
            raise BadInput(f"there is no node {node} in this job")
        return nodes[node]

    def launcher(self, node: int) -> str:
        found = self._node(node)
        self.used["launcher"] += 1
        ended = "still running at the deadline, killed" if found.exit_code is None else f"exit {found.exit_code}"
        return f"--- node {node} ---\n$ {found.command}\n(ended: {ended})\n{found.log.rstrip()}"

    def network(self, node: int) -> str:
        found = self._node(node)
        if not found.network:
            return "this job ran on one host's loopback: there is no host network to look at"
        self.used["network"] += 1
        return f"--- node {node}, as read one second into the run ---\n{found.network}"

    def symptoms(self) -> str:
        self.used["symptoms"] += 1
        return "\n".join(symptom_lines(self.recording)) or "no known signature matched"

    def hint(self) -> str:
        if self.used["hint"] >= len(self.scenario.hints):
            return "no more hints"
        self.used["hint"] += 1
        return f"Hint {self.used['hint']}: {self.scenario.hints[self.used['hint'] - 1]}"

    def debug(self, knob: str) -> str:
        if not self.recording.live:
            raise EnvironmentProblem("a replayed drill cannot be re-run with a debug knob on this host")
        self.used["debug"] += 1
        rerun = runner.run_scenario(self.scenario, self.store, runner.RunOptions(debug=knob, live_only=True))
        return f"Re-run with {knob}:\n" + "\n".join(symptom_lines(rerun))

    # --- the diagnosis -------------------------------------------------------------------

    def finish(self, diagnosis: Diagnosis, trainee: str, pack: str | None = None) -> tuple[DrillResult, Score]:
        result = score(self.scenario, self.recording.comparison, diagnosis, dict(self.used))
        culprit = diagnosis.culprit.describe() if diagnosis.culprit.kind != "job" else "job"
        drill = DrillResult(
            id=f"{self.label.split()[1]}.{int(time.time() * 1000)}.{random.randrange(16**6):06x}",
            trainee=trainee,
            pack=pack,
            scenario_id=self.scenario.id,
            cause=self.scenario.answer.cause,
            recording_id=self.recording.id,
            replay=not self.recording.live,
            answer_cause=diagnosis.cause,
            answer_culprit=culprit,
            answer_ranks=diagnosis.ranks,
            answer_fix=diagnosis.fix,
            used={kind: count for kind, count in self.used.items() if count},
            score_cause=result.cause,
            score_culprit=result.culprit,
            score_ranks=result.ranks,
            score_fix=result.fix,
            costs=result.costs,
            total=result.total,
            max=result.max,
            notes=result.notes,
            started_at=self.started_at,
            seconds=round(time.monotonic() - self.started, 1),
        )
        self.store.save_drill(drill)
        return drill, result

    def debrief(self, drill: DrillResult) -> str:
        key = self.scenario.answer
        return "\n".join([
            f"Score: {drill.total:g} / {drill.max}  (cause {drill.score_cause:g}, culprit {drill.score_culprit:g}, "
            f"ranks {drill.score_ranks:g}, fix {drill.score_fix:g}, help -{drill.costs}; {drill.seconds:.0f}s)",
            *[f"  - {note}" for note in drill.notes],
            "",
            f"It was {self.scenario.id}: {self.scenario.title}",
            f"Cause: {key.cause}; culprit: {key.culprit.describe()}; "
            f"deviating ranks: {list(self.recording.comparison.deviating_ranks)}",
            f"Fix: {key.fix}",
            "",
            "Per rank, against the healthy baseline:",
            rank_table(self.recording),
            "",
            "What happened:",
            textwrap.indent(textwrap.fill(self.scenario.explain, 92), "  "),
        ])

