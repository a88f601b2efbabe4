"""Scenario files: the only YAML reader, and validation that names the file and field at fault.

A scenario is data: topology, faults from the registry, the job's timeout, what a faithful
run must show (verdict, signatures), the answer key, hints and the explanation.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
from pathlib import Path

from .causes import CAUSES_BY_ID
from .errors import BadInput
from .faults import FAULT_KINDS_BY_ID, Target

SCENARIOS_ENV = "FAULTLAB_SCENARIOS"
PACKS_FILE = "packs.yaml"  # drill packs, beside the scenarios
BACKENDS = ("auto", "gloo", "nccl")
VERDICTS = ("healthy", "wrong-result", "crashed", "hung", "warnings-only")
# Environment a scenario may set: exact names and prefixes. Never PATH, LD_*, PYTHON*.
ENV_ALLOWED_NAMES = frozenset(
    {
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "NODE_RANK",
        "LOCAL_WORLD_SIZE",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "OMP_NUM_THREADS",
    }
)
ENV_ALLOWED_PREFIXES = ("NCCL_", "GLOO_", "TORCH_", "TORCHELASTIC_")
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclasses.dataclass(frozen=True)
class Topology:
    nodes: int
    ranks_per_node: int
    backend: str = "auto"  # auto: nccl where the host has the GPUs, else gloo
    gpus_per_node: int = 0  # GPUs each simulated node exposes when it runs on nccl
    hosts: bool = False  # each node on a simulated host of its own (network namespace)

    @property
    def world_size(self) -> int:
        return self.nodes * self.ranks_per_node


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    kind: str
    target: Target
    params: dict


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What a faithful live run shows. Signatures listed per backend add to the common ones."""

    verdict: str
    signatures: tuple[str, ...] = ()
    gloo_signatures: tuple[str, ...] = ()
    nccl_signatures: tuple[str, ...] = ()

    def signatures_for(self, backend: str) -> tuple[str, ...]:
        extra = self.nccl_signatures if backend == "nccl" else self.gloo_signatures
        return self.signatures + extra


@dataclasses.dataclass(frozen=True)
class AnswerKey:
    cause: str
    culprit: Target
    fix: str


@dataclasses.dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    difficulty: int
    ticket: str
    topology: Topology
    faults: tuple[FaultSpec, ...]
    timeout_s: float
    deadline_s: float | None  # faultlab's hang deadline; None: timeout_s + the plan's grace
    expect: Expectation
    answer: AnswerKey
    hints: tuple[str, ...]
    explain: str
    env: dict
    requires_gpus: int  # physical GPUs needed to run it live (0: runs on CPU)
    path: str


# ---------------------------------------------------------------------------------------
# Finding scenario files


def shipped_dir(env_var: str, folder: str) -> Path:
    """Where shipped data lives: $env_var, else the source checkout's `folder` (editable
    installs), else the copy a wheel installs as the package faultlab.<folder>."""
    override = os.environ.get(env_var)
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parent.parent / folder
    if checkout.is_dir():
        return checkout
    return Path(str(importlib.resources.files(f"faultlab.{folder}")))


def scenarios_dir() -> Path:
    return shipped_dir(SCENARIOS_ENV, "scenarios")


def scenario_files() -> list[Path]:
    directory = scenarios_dir()
    if not directory.is_dir():
        raise BadInput(f"{directory}: scenario directory not found (set {SCENARIOS_ENV})")
    return sorted(path for path in directory.glob("*.yaml") if path.name != PACKS_FILE)


def load_all() -> list[Scenario]:
    return [load_file(path) for path in scenario_files()]


def cause_of_each() -> dict[str, str]:
    """Scenario id -> the cause its answer names, for the whole catalog."""
    return {item.id: item.answer.cause for item in load_all()}


def load_packs() -> dict[str, tuple[str, ...]]:
    """Drill packs: name -> scenario ids, from packs.yaml beside the scenarios."""
    path = scenarios_dir() / PACKS_FILE
    data = read_yaml(path)
    known = {p.stem for p in scenario_files()}
    if not isinstance(data, dict):
        raise BadInput(f"{path}: top level: expected a mapping of pack names to scenario lists")
    packs = {}
    for name, ids in data.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise BadInput(f"{path}: {name}: expected a list of scenario ids")
        for position, scenario_id in enumerate(ids):
            if scenario_id not in known:
                raise BadInput(f"{path}: {name}[{position}]: unknown scenario {scenario_id!r}")
        packs[str(name)] = tuple(ids)
    return packs


def resolve(name: str) -> Scenario:
    """A scenario by id, or by the path of a YAML file."""
    if name.endswith((".yaml", ".yml")) or os.sep in name:
        return load_file(Path(name))
    candidate = scenarios_dir() / f"{name}.yaml"
    if candidate.is_file():
        return load_file(candidate)
    known = ", ".join(path.stem for path in scenario_files())
    raise BadInput(f"unknown scenario {name!r} (known: {known})")


def read_yaml(path: Path):
    """The data of a YAML file (safe_load); BadInput names the file and the line at fault."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{path}: cannot read: {error}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise BadInput(f"{path}: not valid YAML{where}: {problem}") from None


def load_file(path: Path) -> Scenario:
    return parse(read_yaml(path), str(path))


# ---------------------------------------------------------------------------------------
# Validation: every error names the file and the path of the field.


class _Fields:
    """Reads one mapping of the scenario, rejecting unknown keys (typos) by name."""

    def __init__(self, source: str, where: str, data, allowed: tuple[str, ...]) -> None:
        self.source, self.where = source, where
        if not isinstance(data, dict):
            self.fail(where, f"expected a mapping, got {_describe(data)}")
        unknown = [key for key in data if key not in allowed]
        if unknown:
            self.fail(_join(where, str(unknown[0])), f"unknown key (allowed: {', '.join(allowed)})")
        self.data = data

    def fail(self, field: str, message: str):
        raise BadInput(f"{self.source}: {field or 'top level'}: {message}")

    def get(self, key: str, kind, default=dataclasses.MISSING):
        field = _join(self.where, key)
        if key not in self.data:
            if default is dataclasses.MISSING:
                self.fail(field, "required key is missing")
            return default
        return _check_type(self, field, self.data[key], kind)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _describe(value) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r}"


def _check_type(fields: _Fields, field: str, value, kind):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        fields.fail(field, f"expected an integer, got {_describe(value)}")
    if not isinstance(value, kind):
        name = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list", dict: "a mapping"}.get(kind, kind.__name__)
        fields.fail(field, f"expected {name}, got {_describe(value)}")
    return value


def _parse_target(fields: _Fields, field: str, data, allowed: tuple[str, ...], topology: Topology) -> Target:
    if data is None or data == {} or data == "job":
        if "job" not in allowed:
            fields.fail(field, f"a target is required: one of {', '.join(allowed)}")
        return Target("job")
    target = _Fields(fields.source, field, data, ("node", "rank"))
    if len(data) != 1:
        fields.fail(field, "give exactly one of node or rank")
    (kind, index), = data.items()
    if kind not in allowed:
        fields.fail(_join(field, kind), f"this fault targets {' or '.join(allowed)}, not {kind}")
    index = target.get(kind, int)
    limit = topology.nodes if kind == "node" else topology.world_size
    if not 0 <= index < limit:
        fields.fail(_join(field, kind), f"{index} is outside 0..{limit - 1} for this topology")
    return Target(kind, index)


def _parse_params(fields: _Fields, field: str, data, kind) -> dict:
    names = tuple(param.name for param in kind.params)
    given = _Fields(fields.source, field, data if data is not None else {}, names) if names or data else None
    params = {}
    for param in kind.params:
        value = given.get(param.name, param.type, param.default)
        if param.choices and value not in param.choices:
            fields.fail(_join(field, param.name), f"{value!r} is not one of {', '.join(map(repr, param.choices))}")
        params[param.name] = value
    return params


def parse(data, source: str) -> Scenario:
    top = _Fields(
        source,
        "",
        data,
        ("id", "title", "difficulty", "ticket", "topology", "faults", "timeout_s", "expect", "answer",
         "hints", "explain", "env", "requires_gpus", "deadline_s"),
    )
    scenario_id = top.get("id", str)
    if not ID_PATTERN.match(scenario_id):
        top.fail("id", f"{scenario_id!r} must be lowercase letters, digits and dashes")
    difficulty = top.get("difficulty", int)
    if not 1 <= difficulty <= 5:
        top.fail("difficulty", f"{difficulty} is outside 1..5")

    topo_fields = _Fields(source, "topology", top.get("topology", dict),
                          ("nodes", "ranks_per_node", "backend", "gpus_per_node", "hosts"))
    topology = Topology(
        nodes=topo_fields.get("nodes", int),
        ranks_per_node=topo_fields.get("ranks_per_node", int),
        backend=topo_fields.get("backend", str, "auto"),
        gpus_per_node=topo_fields.get("gpus_per_node", int, 0),
        hosts=topo_fields.get("hosts", bool, False),
    )
    if not 1 <= topology.nodes <= 16:
        top.fail("topology.nodes", f"{topology.nodes} is outside 1..16")
    if not 1 <= topology.ranks_per_node <= 64:
        top.fail("topology.ranks_per_node", f"{topology.ranks_per_node} is outside 1..64")
    if topology.backend not in BACKENDS:
        top.fail("topology.backend", f"{topology.backend!r} is not one of {', '.join(BACKENDS)}")
    if topology.gpus_per_node < 0:
        top.fail("topology.gpus_per_node", "must not be negative")

    faults = []
    for index, raw in enumerate(top.get("faults", list, [])):
        where = f"faults[{index}]"
        fault_fields = _Fields(source, where, raw, ("kind", "target", "params"))
        kind_id = fault_fields.get("kind", str)
        kind = FAULT_KINDS_BY_ID.get(kind_id)
        if kind is None:
            top.fail(f"{where}.kind", f"unknown fault kind {kind_id!r} (known: {', '.join(sorted(FAULT_KINDS_BY_ID))})")
        target = _parse_target(top, f"{where}.target", raw.get("target"), kind.targets, topology)
        params = _parse_params(top, f"{where}.params", raw.get("params"), kind)
        faults.append(FaultSpec(kind=kind_id, target=target, params=params))

    timeout_s = top.get("timeout_s", float)
    if not 1 <= timeout_s <= 600:
        top.fail("timeout_s", f"{timeout_s} is outside 1..600 seconds")
    deadline_s = top.get("deadline_s", float, None)
    if deadline_s is not None and not timeout_s < deadline_s <= 1200:
        top.fail("deadline_s", f"{deadline_s} must be above timeout_s ({timeout_s:g}) and at most 1200")

    expect_fields = _Fields(source, "expect", top.get("expect", dict), ("verdict", "signatures", "gloo_signatures", "nccl_signatures"))
    from .symptoms import SIGNATURES_BY_ID

    def signature_list(key: str) -> tuple[str, ...]:
        ids = expect_fields.get(key, list, [])
        for position, signature in enumerate(ids):
            if signature not in SIGNATURES_BY_ID:
                top.fail(f"expect.{key}[{position}]", f"unknown signature {signature!r}")
        return tuple(ids)

    expect = Expectation(
        verdict=expect_fields.get("verdict", str),
        signatures=signature_list("signatures"),
        gloo_signatures=signature_list("gloo_signatures"),
        nccl_signatures=signature_list("nccl_signatures"),
    )
    if expect.verdict not in VERDICTS:
        top.fail("expect.verdict", f"{expect.verdict!r} is not one of {', '.join(VERDICTS)}")

    answer_fields = _Fields(source, "answer", top.get("answer", dict), ("cause", "culprit", "fix"))
    cause = answer_fields.get("cause", str)
    if cause not in CAUSES_BY_ID:
        top.fail("answer.cause", f"unknown cause {cause!r} (see `faultlab causes`)")
    answer = AnswerKey(
        cause=cause,
        culprit=_parse_target(top, "answer.culprit", answer_fields.data.get("culprit"), ("job", "node", "rank"), topology),
        fix=answer_fields.get("fix", str),
    )

    hints = top.get("hints", list, [])
    for position, hint in enumerate(hints):
        _check_type(top, f"hints[{position}]", hint, str)

    env = top.get("env", dict, {})
    for name, value in env.items():
        if not isinstance(name, str) or not (name in ENV_ALLOWED_NAMES or name.startswith(ENV_ALLOWED_PREFIXES)):
            top.fail(f"env.{name}", "not an allowed variable (MASTER_*, RANK-like, NCCL_*, GLOO_*, TORCH_*, CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS)")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            top.fail(f"env.{name}", f"expected a string or number, got {_describe(value)}")

    for index, fault in enumerate(faults):
        if FAULT_KINDS_BY_ID[fault.kind].needs_hosts and not topology.hosts:
            top.fail(f"faults[{index}].kind", f"{fault.kind} happens between hosts: set topology.hosts: true")
    gpu_faults = any(FAULT_KINDS_BY_ID[fault.kind].gpu_only for fault in faults)
    if gpu_faults and topology.backend != "nccl":
        top.fail("topology.backend", "this scenario has GPU-only faults: the backend must be nccl")
    default_gpus = topology.nodes * topology.gpus_per_node if topology.backend == "nccl" else 0
    requires_gpus = top.get("requires_gpus", int, default_gpus)
    if topology.backend == "nccl" and requires_gpus < 1:
        top.fail("requires_gpus", "an nccl scenario needs at least one GPU")

    return Scenario(
        id=scenario_id,
        title=top.get("title", str),
        difficulty=difficulty,
        ticket=top.get("ticket", str).strip(),
        topology=topology,
        faults=tuple(faults),
        timeout_s=timeout_s,
        deadline_s=deadline_s,
        expect=expect,
        answer=answer,
        hints=tuple(hints),
        explain=top.get("explain", str).strip(),
        env={name: str(value) for name, value in env.items()},
        requires_gpus=requires_gpus,
        path=source,
    )
