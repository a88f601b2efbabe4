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
import time

from . import runner, scenario as scenarios
from .launchers import ReplayLauncher, RunOptions
from .host import Host
from .errors import BadInput, EnvironmentProblem
from .faults import Target
from .records import DrillResult, NodeCapture, RankCapture, Recording
from .scenario import Scenario
from .score import Answer, Score, answer_from_mapping, parse_used, score
from .store import Store


GAVE_UP = "gave-up"  # the answer_cause of a drill the trainee gave up on


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


def answers_for(chosen: list[Scenario], answers_file=None, options: dict | None = None):
    """scenario id -> (answer, help used) for a drill answered without prompts: from a YAML
    file (one answer, or a mapping by scenario id for a pack), or from the command's options.
    None when the drill is interactive."""
    if answers_file is not None:
        data = scenarios.read_yaml(answers_file)
        if isinstance(data, dict) and "cause" in data:
            return {item.id: answer_from_mapping(data, str(answers_file)) for item in chosen}
        answers = {}
        for item in chosen:
            entry = data.get(item.id) if isinstance(data, dict) else None
            if entry is None:
                raise BadInput(f"{answers_file}: no answers for {item.id}")
            answers[item.id] = answer_from_mapping(entry, f"{answers_file}: {item.id}")
        return answers
    if options is None or all(options.get(key) is None for key in ("cause", "culprit", "ranks", "fix")):
        return None
    data = {key: options[key] for key in ("cause", "culprit", "fix") if options.get(key) is not None}
    data["ranks"] = options.get("ranks") or ""
    data["used"] = parse_used(options.get("used"))
    return {item.id: answer_from_mapping(data, "options") for item in chosen}


class DrillSession:
    """One drill in progress: the broken run, the help taken so far, the clock."""

    def __init__(self, scenario: Scenario, recording: Recording, store: Store, host: Host | None = None) -> None:
        self.scenario = scenario
        self.recording = recording
        self.store = store
        self.host = host  # where a debug re-run runs live (None: a replayed drill cannot re-run)
        self.used: collections.Counter = collections.Counter()
        self.started = time.monotonic()
        self.started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self.label = "drill " + hashlib.sha256(recording.id.encode()).hexdigest()[:6]

    @classmethod
    def start(cls, scenario: Scenario, store: Store, host: Host, replay: bool = False,
              live_only: bool = False) -> "DrillSession":
        """Run the scenario live (or replay a recording of it) and open a drill on it. A
        replay is labelled without the recording's name: that names the scenario."""
        if replay:
            launcher, backend = ReplayLauncher.stored_or_shipped(scenario, store), None
        else:
            launcher, backend = runner.choose_launcher(scenario, host, RunOptions(live_only=live_only))
        if not launcher.live:
            launcher = launcher.anonymous()
        recording = runner.run_scenario(scenario, store, launcher, backend)
        return cls(scenario, recording, store, host)

    # --- evidence, each at its cost (reports/drill_screens.py renders it) -------------------

    def rank_log(self, rank: int) -> list[RankCapture]:
        """The workers that ran as `rank` (one, unless the launch gave a rank twice)."""
        matches = [r for r in self.recording.capture.ranks if r.shown_rank == rank]
        if not matches:
            raise BadInput(f"there is no rank {rank} in this job")
        self.used["log"] += 1
        return matches

    def _node(self, node: int) -> NodeCapture:
        nodes = self.recording.capture.nodes
        if not 0 <= node < len(nodes):
            raise BadInput(f"there is no node {node} in this job")
        return nodes[node]

    def launcher(self, node: int) -> NodeCapture:
        found = self._node(node)
        self.used["launcher"] += 1
        return found

    def network(self, node: int) -> NodeCapture | None:
        """The node's simulated host as read during the run; None (free) on one host's loopback."""
        found = self._node(node)
        if not found.network:
            return None
        self.used["network"] += 1
        return found

    def symptoms(self) -> Recording:
        self.used["symptoms"] += 1
        return self.recording

    def flight_recorder(self):
        """Every rank's Flight Recorder dump (FlightRecorderCapture); None, free, in a
        recording made without the recorder."""
        found = self.recording.capture.flight_recorder
        if found is None:
            return None
        self.used["fr"] += 1
        return found

    def hint(self) -> tuple[int, str] | None:
        """(number, text) of the next hint, or None when all were taken."""
        if self.used["hint"] >= len(self.scenario.hints):
            return None
        self.used["hint"] += 1
        return self.used["hint"], self.scenario.hints[self.used["hint"] - 1]

    @property
    def hints_left(self) -> int:
        return len(self.scenario.hints) - self.used["hint"]

    def debug(self, knob: str) -> Recording:
        if not self.recording.live or self.host is None:
            raise EnvironmentProblem("a replayed drill cannot be re-run with a debug knob on this host")
        self.used["debug"] += 1
        return runner.run_here(self.scenario, self.store, self.host, RunOptions(debug=knob, live_only=True))

    def others(self, exclude: str | None = None) -> list[tuple[str, int]]:
        """How other drills of this scenario in the store were answered: (cause, count), most first."""
        answers = collections.Counter(d.answer_cause for d in self.store.drills()
                                      if d.scenario_id == self.scenario.id and d.id != exclude)
        return answers.most_common()

    # --- the diagnosis -------------------------------------------------------------------

    def give_up(self, trainee: str, pack: str | None = None) -> tuple[DrillResult, Score]:
        """No diagnosis: the drill scores zero, and the debrief shows the answer."""
        answer = Answer(cause=GAVE_UP, culprit=Target("job"), ranks=(), fix="")
        return self.finish(answer, trainee, pack)

    def finish(self, diagnosis: Answer, trainee: str, pack: str | None = None) -> tuple[DrillResult, Score]:
        result = score(self.scenario, self.recording.comparison, diagnosis, dict(self.used))
        if diagnosis.cause == GAVE_UP:
            result = dataclasses.replace(result, cause=0, culprit=0, ranks=0, fix=0, total=0,
                                         notes=("gave up: the answer is shown below",))
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
