"""Scenario files: the only YAML reader, and validation that names the file and field at fault.

A scenario is data: topology, faults from the registry, the job's timeout, what a faithful
run must show (verdict, signatures), the answer key, hints and the explanation.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
from pathlib import Path

from . import identity
from .causes import CAUSES_BY_ID
from .errors import BadInput
from .scenario_fields import allowed_keys
from .faults import FAULT_KINDS_BY_ID, MAX_GPUS_PER_NODE, MAX_NODES, MAX_RANKS_PER_NODE, Target
from .textsafe import excerpt
from .yamlfile import read_yaml

SCENARIOS_ENV = "FAULTLAB_SCENARIOS"
PACKS_FILE = "packs.yaml"  # drill packs, beside the scenarios
BACKENDS = ("auto", "gloo", "nccl")
VERDICTS = ("healthy", "wrong-result", "crashed", "hung", "warnings-only")
MAX_ATTEMPTS = 3  # a race that shows less often than that is not a scenario a drill can rely on
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
# ... but never one that makes the job load code or read or write a file of the scenario's
# choosing (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN, NCCL_DEBUG_FILE, TORCH_EXTENSIONS_DIR, ...):
# docs/security.md.
ENV_DENIED_WORDS = ("PLUGIN", "LIB", "FILE", "PATH", "DIR", "HOME", "CONF")
ENV_DENIED_NAMES = frozenset({"TORCH_TRACE", "TORCH_LOGS_OUT"})


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
    attempts: int = 1  # live runs a race may take before its outcome shows

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


def load_file(path: Path) -> Scenario:
    return parse(read_yaml(path), str(path))


# ---------------------------------------------------------------------------------------
# Validation: every error names the file and the path of the field; a quoted value is
# always a short excerpt.


class _Fields:
    """Reads one mapping of the scenario, rejecting unknown keys (typos) by name."""

    def __init__(self, source: str, where: str, data, allowed: tuple[str, ...]) -> None:
        self.source, self.where = source, where
        if not isinstance(data, dict):
            self.fail(where, f"expected a mapping, got {_describe(data) if where else _kind_of(data)}")
        unknown = [key for key in data if key not in allowed]
        if unknown:
            self.fail(_join(where, _key(unknown[0])), f"unknown key (allowed: {', '.join(allowed)})")
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


def _key(key) -> str:
    """A key from the file, as it may appear in a field's path."""
    return key if isinstance(key, str) and len(key) <= 40 and key.isprintable() else excerpt(key)


def _describe(value) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {excerpt(value)}"


def _kind_of(value) -> str:
    """What a whole file turned out to be, without quoting it (it may be anyone's file)."""
    return "nothing" if value is None else {str: "text", list: "a list"}.get(type(value), type(value).__name__)


_TYPE_WORDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
               dict: "a mapping"}


def _check_type(fields: _Fields, field: str, value, kind):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        fields.fail(field, f"expected an integer, got {_describe(value)}")
    if not isinstance(value, kind):
        fields.fail(field, f"expected {_TYPE_WORDS.get(kind, kind.__name__)}, got {_describe(value)}")
    return value


def _check_range(fields: _Fields, field: str, value, low, high, unit: str = "") -> None:
    if not identity.in_range(value, low, high):
        fields.fail(field, f"{excerpt(value)} is outside {low:g}..{high:g}{unit}")


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
        problem = param.problem(value)
        if problem:
            fields.fail(_join(field, param.name), problem)
        params[param.name] = value
    return params


def _parse_topology(top: _Fields) -> Topology:
    fields = _Fields(top.source, "topology", top.get("topology", dict), allowed_keys("topology"))
    topology = Topology(
        nodes=fields.get("nodes", int),
        ranks_per_node=fields.get("ranks_per_node", int),
        backend=fields.get("backend", str, "auto"),
        gpus_per_node=fields.get("gpus_per_node", int, 0),
        hosts=fields.get("hosts", bool, False),
    )
    _check_range(top, "topology.nodes", topology.nodes, 1, MAX_NODES)
    _check_range(top, "topology.ranks_per_node", topology.ranks_per_node, 1, MAX_RANKS_PER_NODE)
    if topology.backend not in BACKENDS:
        top.fail("topology.backend", f"{excerpt(topology.backend)} is not one of {', '.join(BACKENDS)}")
    _check_range(top, "topology.gpus_per_node", topology.gpus_per_node, 0, MAX_GPUS_PER_NODE)
    return topology


def _parse_faults(top: _Fields, topology: Topology) -> tuple[FaultSpec, ...]:
    faults = []
    for index, raw in enumerate(top.get("faults", list, [])):
        where = f"faults[{index}]"
        fault_fields = _Fields(top.source, where, raw, allowed_keys("faults[]"))
        kind_id = fault_fields.get("kind", str)
        kind = FAULT_KINDS_BY_ID.get(kind_id)
        if kind is None:
            top.fail(f"{where}.kind", f"unknown fault kind {excerpt(kind_id)} "
                                      f"(known: {', '.join(sorted(FAULT_KINDS_BY_ID))})")
        if kind.needs_hosts and not topology.hosts:
            top.fail(f"{where}.kind", f"{kind_id} happens between hosts: set topology.hosts: true")
        target = _parse_target(top, f"{where}.target", raw.get("target"), kind.targets, topology)
        params = _parse_params(top, f"{where}.params", raw.get("params"), kind)
        faults.append(FaultSpec(kind=kind_id, target=target, params=params))
    return tuple(faults)


def _parse_timing(top: _Fields) -> tuple[float, float | None]:
    timeout_s = top.get("timeout_s", float)
    _check_range(top, "timeout_s", timeout_s, 1, 600, " seconds")
    deadline_s = top.get("deadline_s", float, None)
    if deadline_s is not None and not identity.in_range(deadline_s, timeout_s + 1e-9, 1200):
        top.fail("deadline_s", f"{excerpt(deadline_s)} must be above timeout_s ({timeout_s:g}) and at most 1200")
    return timeout_s, deadline_s


def _parse_expect(top: _Fields) -> Expectation:
    from .symptoms import SIGNATURES_BY_ID

    fields = _Fields(top.source, "expect", top.get("expect", dict), allowed_keys("expect"))

    def signature_list(key: str) -> tuple[str, ...]:
        ids = fields.get(key, list, [])
        for position, signature in enumerate(ids):
            _check_type(top, f"expect.{key}[{position}]", signature, str)
            if signature not in SIGNATURES_BY_ID:
                top.fail(f"expect.{key}[{position}]", f"unknown signature {excerpt(signature)}")
        return tuple(ids)

    expect = Expectation(
        verdict=fields.get("verdict", str),
        signatures=signature_list("signatures"),
        gloo_signatures=signature_list("gloo_signatures"),
        nccl_signatures=signature_list("nccl_signatures"),
        attempts=fields.get("attempts", int, 1),
    )
    if expect.verdict not in VERDICTS:
        top.fail("expect.verdict", f"{excerpt(expect.verdict)} is not one of {', '.join(VERDICTS)}")
    _check_range(top, "expect.attempts", expect.attempts, 1, MAX_ATTEMPTS)
    return expect


def _parse_answer(top: _Fields, topology: Topology) -> AnswerKey:
    fields = _Fields(top.source, "answer", top.get("answer", dict), allowed_keys("answer"))
    cause = fields.get("cause", str)
    if cause not in CAUSES_BY_ID:
        top.fail("answer.cause", f"unknown cause {excerpt(cause)} (see `faultlab causes`)")
    culprit = _parse_target(top, "answer.culprit", fields.data.get("culprit"), ("job", "node", "rank"), topology)
    return AnswerKey(cause=cause, culprit=culprit, fix=fields.get("fix", str))


def _parse_env(top: _Fields) -> dict[str, str]:
    """The environment a scenario sets, within the trust boundary of docs/security.md."""
    env = top.get("env", dict, {})
    for name, value in env.items():
        field = f"env.{_key(name)}"
        if not env_name_allowed(name):
            top.fail(field, "not an allowed variable (MASTER_*, RANK-like, NCCL_*, GLOO_*, TORCH_*, "
                            "CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS; none that names a plugin, library, file or path)")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            top.fail(field, f"expected a string or number, got {_describe(value)}")
        if not identity.matches(identity.ENV_VALUE, str(value)) or "/" in str(value):
            top.fail(field, f"{excerpt(value)}: a value is printable text of at most 256 characters, not a path")
    return {name: str(value) for name, value in env.items()}


def env_name_allowed(name) -> bool:
    if not isinstance(name, str):
        return False
    if name in ENV_ALLOWED_NAMES:
        return True
    return (name.startswith(ENV_ALLOWED_PREFIXES) and name not in ENV_DENIED_NAMES
            and not any(word in name for word in ENV_DENIED_WORDS) and name.replace("_", "").isalnum())


def _requires_gpus(top: _Fields, topology: Topology, faults: tuple[FaultSpec, ...]) -> int:
    if any(FAULT_KINDS_BY_ID[fault.kind].gpu_only for fault in faults) and topology.backend != "nccl":
        top.fail("topology.backend", "this scenario has GPU-only faults: the backend must be nccl")
    default_gpus = topology.nodes * topology.gpus_per_node if topology.backend == "nccl" else 0
    requires_gpus = top.get("requires_gpus", int, default_gpus)
    _check_range(top, "requires_gpus", requires_gpus, 0, MAX_NODES * MAX_GPUS_PER_NODE)
    if topology.backend == "nccl" and requires_gpus < 1:
        top.fail("requires_gpus", "an nccl scenario needs at least one GPU")
    return requires_gpus


def _text_list(top: _Fields, key: str) -> tuple[str, ...]:
    items = top.get(key, list, [])
    for position, item in enumerate(items):
        _check_type(top, f"{key}[{position}]", item, str)
    return tuple(items)


def parse(data, source: str) -> Scenario:
    top = _Fields(source, "", data, allowed_keys(""))
    scenario_id = top.get("id", str)
    if not identity.matches(identity.SCENARIO_ID, scenario_id):
        top.fail("id", f"{excerpt(scenario_id)} must be lowercase letters, digits and dashes (at most 64)")
    difficulty = top.get("difficulty", int)
    _check_range(top, "difficulty", difficulty, 1, 5)
    topology = _parse_topology(top)
    faults = _parse_faults(top, topology)
    timeout_s, deadline_s = _parse_timing(top)
    return Scenario(
        id=scenario_id,
        title=top.get("title", str),
        difficulty=difficulty,
        ticket=top.get("ticket", str).strip(),
        topology=topology,
        faults=faults,
        timeout_s=timeout_s,
        deadline_s=deadline_s,
        expect=_parse_expect(top),
        answer=_parse_answer(top, topology),
        hints=_text_list(top, "hints"),
        explain=top.get("explain", str).strip(),
        env=_parse_env(top),
        requires_gpus=_requires_gpus(top, topology, faults),
        path=source,
    )
