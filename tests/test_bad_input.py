"""Bad input: one clear line naming the file and the field, exit 2, no traceback."""

import textwrap

import pytest

from faultlab.errors import ExitCode

VALID = textwrap.dedent(
    """\
    id: bad
    title: t
    difficulty: 1
    ticket: t
    topology: {nodes: 2, ranks_per_node: 1}
    faults:
      - kind: master-port-offset
        target: {node: 1}
        params: {offset: 1}
    timeout_s: 3
    expect: {verdict: hung}
    answer: {cause: wrong-master-port, culprit: {node: 1}, fix: f}
    explain: e
    """
)

CASES = {
    "malformed-yaml": (VALID.replace("title: t", "title: [t"), "not valid YAML at line"),
    "typo-key": (VALID.replace("timeout_s: 3", "timout_s: 3"), "timout_s: unknown key"),
    "unknown-fault": (VALID.replace("master-port-offset", "master-port-ofset"), "faults[0].kind: unknown fault kind 'master-port-ofset'"),
    "bad-type": (VALID.replace("timeout_s: 3", "timeout_s: five"), "timeout_s: expected a number, got str 'five'"),
    "bad-param": (VALID.replace("offset: 1", "offset: one"), "faults[0].params.offset: expected an integer"),
    "unknown-param": (VALID.replace("offset: 1", "ofset: 1"), "faults[0].params.ofset: unknown key"),
    "target-out-of-range": (VALID.replace("target: {node: 1}", "target: {node: 5}"), "faults[0].target.node: 5 is outside 0..1"),
    "env-not-allowed": (VALID + "env: {LD_PRELOAD: /tmp/x.so}\n", "env.LD_PRELOAD: not an allowed variable"),
    "env-pythonpath": (VALID + "env: {PYTHONPATH: /tmp}\n", "env.PYTHONPATH: not an allowed variable"),
    "unknown-cause": (VALID.replace("cause: wrong-master-port", "cause: gremlins"), "answer.cause: unknown cause 'gremlins'"),
    "unknown-signature": (VALID.replace("{verdict: hung}", "{verdict: hung, signatures: [gremlin-line]}"), "expect.signatures[0]: unknown signature"),
    "bad-verdict": (VALID.replace("{verdict: hung}", "{verdict: sad}"), "expect.verdict: 'sad' is not one of"),
    "missing-key": (VALID.replace("explain: e\n", ""), "explain: required key is missing"),
    "not-a-mapping": ("- just\n- a list\n", "top level: expected a mapping"),
    "empty-file": ("", "top level: expected a mapping, got nothing"),
    "gpu-fault-on-gloo": (VALID.replace("master-port-offset", "skip-set-device").replace("target: {node: 1}\n    params: {offset: 1}", "target: job"), "topology.backend: this scenario has GPU-only faults"),
}


def _assert_one_clean_line(result, *needles):
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("faultlab: error: ")
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", ["run", "show"])
def test_bad_scenario_file(tmp_path, cli, db, name, command):
    text, needle = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    result = cli(command, path)
    _assert_one_clean_line(result, str(path), needle)
    assert not db.exists() or command == "run", "show never touches the store"


def test_valid_base_case_loads(tmp_path, cli):
    path = tmp_path / "ok.yaml"
    path.write_text(VALID)
    result = cli("show", path)
    assert result.exit_code == 0, result.output
    assert "master-port-offset on node 1" in result.output


def test_missing_file(cli, tmp_path):
    _assert_one_clean_line(cli("run", tmp_path / "nope.yaml"), "nope.yaml: file not found")


def test_unknown_scenario_id(cli):
    _assert_one_clean_line(cli("run", "no-such-scenario"), "unknown scenario 'no-such-scenario'", "healthy")


def test_unknown_debug_knob(cli):
    _assert_one_clean_line(cli("run", "healthy", "--debug", "verbose"), "unknown debug knob 'verbose'")


def test_unknown_option_is_bad_input(cli):
    result = cli("run", "healthy", "--frobnicate")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "Traceback" not in result.output
