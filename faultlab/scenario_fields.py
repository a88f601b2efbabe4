"""Every key a scenario file may hold, with its type and meaning: the parser accepts exactly
these keys, and docs/scenario-format.md lists them (scripts/gen_docs.py)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class FieldDoc:
    """One key a scenario file may hold: the parser accepts exactly these, the docs list them."""

    path: str  # "topology.nodes"; "faults[].kind" for keys of each list item
    kind: str
    required: bool
    meaning: str

    @property
    def section(self) -> str:
        return self.path.rpartition(".")[0]

    @property
    def key(self) -> str:
        return self.path.rpartition(".")[2]


SCENARIO_FIELDS: tuple[FieldDoc, ...] = (
    FieldDoc("id", "string", True, "lowercase letters, digits and dashes; the file's name"),
    FieldDoc("title", "string", True, "one line"),
    FieldDoc("difficulty", "integer 1..5", True, "how hard the drill is"),
    FieldDoc("ticket", "string", True, "what the user saw, as a report arrives; never the answer"),
    FieldDoc("topology", "mapping", True, "the job's shape"),
    FieldDoc("topology.nodes", "integer 1..16", True, "simulated nodes: one torch launcher agent each"),
    FieldDoc("topology.ranks_per_node", "integer 1..64", True, "--nproc_per_node"),
    FieldDoc("topology.backend", "auto | gloo | nccl", False, "auto (default): nccl where the host has a GPU per rank, else gloo"),
    FieldDoc("topology.gpus_per_node", "integer 0..16", False, "GPUs each node exposes on nccl (its CUDA_VISIBLE_DEVICES slice)"),
    FieldDoc("topology.hosts", "true | false", False, "each node on a simulated host of its own (network namespace; root)"),
    FieldDoc("faults", "list", False, "faults from the registry (docs/fault-kinds.md); may be empty"),
    FieldDoc("faults[].kind", "string", True, "a fault kind's id"),
    FieldDoc("faults[].target", "{node: N} | {rank: R} | job", False, "where it applies (omitted: the job)"),
    FieldDoc("faults[].params", "mapping", False, "the kind's parameters, each within its range"),
    FieldDoc("timeout_s", "number 1..600", True, "the job's process-group and rendezvous timeout"),
    FieldDoc("deadline_s", "number", False, "when faultlab calls the run hung and kills it (default timeout_s + 1.5, "
             "+ 20 where workers start as fresh interpreters)"),
    FieldDoc("env", "mapping", False, "extra environment on every node, from the allowlist (docs/security.md)"),
    FieldDoc("requires_gpus", "integer", False, "physical GPUs needed to run it live (default: nodes x gpus_per_node on nccl)"),
    FieldDoc("expect", "mapping", True, "what a faithful live run shows"),
    FieldDoc("expect.verdict", "healthy | wrong-result | crashed | hung | warnings-only", True, "the comparison's verdict"),
    FieldDoc("expect.signatures", "list of signature ids", False, "signatures that must be found"),
    FieldDoc("expect.gloo_signatures", "list of signature ids", False, "added on gloo only"),
    FieldDoc("expect.nccl_signatures", "list of signature ids", False, "added on nccl only"),
    FieldDoc("expect.attempts", "integer 1..3", False, "a race: live runs faultlab may make until the outcome shows "
             "(default 1; the explanation says why); earlier runs are reported with the one that showed it"),
    FieldDoc("answer", "mapping", True, "the answer key drills score against"),
    FieldDoc("answer.cause", "cause id", True, "from `faultlab causes`"),
    FieldDoc("answer.culprit", "{node: N} | {rank: R} | job", True, "the culprit, not a victim"),
    FieldDoc("answer.fix", "string", True, "the fix, in words (scored on its key terms)"),
    FieldDoc("hints", "list of strings", False, "graded: the gentlest first"),
    FieldDoc("explain", "string", True, "what happened: the culprit, the victims, the line to trust"),
)


def allowed_keys(section: str) -> tuple[str, ...]:
    """The keys a scenario's mapping at `section` ('' for the top level) may hold."""
    return tuple(field.key for field in SCENARIO_FIELDS if field.section == section)
