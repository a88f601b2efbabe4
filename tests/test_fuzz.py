"""Property-based fuzzing of every reader of foreign input (Hypothesis).

The scenario parser, the bundle reader, diagnose's log reader and the drill's answer
parsing each get inputs built to break them: shipped files mutated at random places, raw
bytes, control characters, markup, huge and non-finite numbers, wrong types everywhere; and
diagnose every real log of its dev set with the lines relabelled.
Each input must end in a result or one BadInput line: never another exception (a
traceback), and never a write. FAULTLAB_FUZZ_EXAMPLES sets how many inputs per reader
(the default keeps the pure suite fast; the closing numbers were run with thousands).
"""

import copy
import json
import os
import string

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultlab import bundle, diagnose, identity, recording_files as recordings, runbook, scenario as scenarios
from faultlab.reports import runbook_pages
from faultlab.cli import main
from faultlab.errors import BadInput
from faultlab.serial import to_dict
from faultlab.symptoms import SIGNATURES
from faultlab.yamlfile import parse_yaml

from conftest import ROOT, shipped_scenarios

EXAMPLES = int(os.environ.get("FAULTLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])

NASTY_TEXT = ["", " ", "\x1b]0;TITLE\x07", "\x1b]52;c;cHduZWQ=\x07", "\x1b[2J", "\x9b31m", "\u202e", "\0",
              "../../etc/passwd", "<script>alert(1)</script>", "``` \n# x", "x" * 5000, "9" * 5000, "\n", "&a", "*a",
              "rank 99999999999999999999", "-1", "nan", "inf", "1e309", "job", "node 0"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(), st.text(max_size=30), st.sampled_from(NASTY_TEXT),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=12) | st.sampled_from(NASTY_TEXT), inner, max_size=4),
                      max_leaves=12)


def one_line_or_result(call):
    """Run `call`; a BadInput must be one short line. Anything else raised fails the test."""
    try:
        return call()
    except BadInput as error:
        message = str(error)
        assert "\n" not in message and len(message) < 800, message[:2000]
        assert "\x1b" not in message, message
        return None


def _containers(data, path=()):
    """Every path to a mapping or list inside `data`."""
    if isinstance(data, (dict, list)):
        yield path
        items = data.items() if isinstance(data, dict) else enumerate(data)
        for key, value in items:
            yield from _containers(value, path + (key,))


def _at(data, path):
    for key in path:
        data = data[key]
    return data


@st.composite
def mutated(draw, originals):
    """One of `originals`, deep-copied, with one to four random edits: a value replaced, a
    key removed, or a key added, anywhere in the tree."""
    data = copy.deepcopy(draw(st.sampled_from(originals)))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_containers(data))
        if not paths:
            break
        container = _at(data, draw(st.sampled_from(paths)))
        keys = list(container.keys() if isinstance(container, dict) else range(len(container)))
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "add" or not keys:
            if isinstance(container, dict):
                container[draw(st.text(max_size=12) | st.sampled_from(sorted(container) or ["x"]))] = draw(values)
            else:
                container.append(draw(values))
            continue
        key = draw(st.sampled_from(keys))
        if action == "remove":
            del container[key]
        else:
            container[key] = draw(values)
    return data


SCENARIO_DATA = [yaml.safe_load(path.read_text()) for path in shipped_scenarios()]
SCENARIO_TEXT = [path.read_text() for path in shipped_scenarios()]


@FUZZ
@given(mutated(SCENARIO_DATA))
def test_scenario_parser_on_mutated_scenarios(data):
    parsed = one_line_or_result(lambda: scenarios.parse(data, "fuzz.yaml"))
    if parsed is not None:  # what passes is within bounds
        assert identity.matches(identity.SCENARIO_ID, parsed.id)
        assert 1 <= parsed.topology.nodes <= 16 and 1 <= parsed.topology.ranks_per_node <= 64
        assert all(isinstance(s, str) for s in parsed.expect.signatures)


@FUZZ
@given(st.sampled_from(SCENARIO_TEXT), st.integers(0, 4000), st.text(max_size=40)
       | st.sampled_from(["&x ", "*x", "[", "{", ": ", "\t", "!!python/object:os.system", "\x1b]0;T\x07", "- ", "? "]))
def test_scenario_reader_on_mutated_text(text, position, insert):
    position = min(position, len(text))
    edited = text[:position] + insert + text[position:]
    one_line_or_result(lambda: scenarios.parse(parse_yaml(edited, "fuzz.yaml"), "fuzz.yaml"))


def _shipped_bundle_content() -> dict:
    pairs = [recordings.read(path) for path in sorted((ROOT / "recordings").glob("*.json"))[:2]]
    return {"recordings": [to_dict(record) for pair in pairs for record in pair], "drills": [
        {"id": "0a1b2c.1764000000000.abcdef", "trainee": "eve", "pack": None, "scenario_id": "rank-crash",
         "cause": "rank-crash", "recording_id": pairs[0][0].id, "replay": True, "answer_cause": "rank-crash",
         "answer_culprit": "rank 1", "answer_ranks": [1], "answer_fix": "f", "used": {"hint": 1},
         "score_cause": 4.0, "score_culprit": 3.0, "score_ranks": 2.0, "score_fix": 1.0, "costs": 1, "total": 9.0,
         "max": 10, "notes": [], "started_at": "2026-12-02T17:00:00+00:00", "seconds": 12.5}]}


BUNDLE_CONTENT = _shipped_bundle_content()
CAUSE_OF = scenarios.cause_of_each()


def _write_bundle(tmp_path, content, sign=True) -> "Path":
    document = {"kind": bundle.BUNDLE_KIND, "format": bundle.BUNDLE_FORMAT,
                "sha256": bundle._digest(content) if sign else "0" * 64, **content}
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document, allow_nan=True))
    return path


def test_the_unmutated_bundle_is_read():
    assert BUNDLE_CONTENT["recordings"]


@FUZZ
@given(content=mutated([BUNDLE_CONTENT]))
def test_bundle_reader_on_mutated_signed_bundles(tmp_path_factory, content):
    tmp_path = tmp_path_factory.mktemp("bundle")
    path = _write_bundle(tmp_path, content)
    read = one_line_or_result(lambda: bundle.read(path))
    if read is not None:  # whatever is accepted has faultlab's own identities, and renders
        for index, recording in enumerate(read[0]):
            identity.check_recording(recording, f"recordings[{index}]")
        for index, drill in enumerate(read[1]):
            identity.check_drill(drill, f"drills[{index}]")
        book = runbook.build(read[0], {r.id: r for r in read[0]}, CAUSE_OF)
        assert "\x1b" not in runbook_pages.to_html(book) + "".join(runbook_pages.to_markdown(book).split("```")[::2])
    assert os.listdir(tmp_path) == ["fuzz.json"], "reading never writes"


@FUZZ
@given(st.binary(max_size=2000) | st.sampled_from([b"", b"{", b'{"kind": "faultlab-bundle"', b"\xff\xfe{}",
                                                   b'{"kind": "faultlab-bundle", "format": 1e999}',
                                                   b'{"kind": "faultlab-bundle"' + b"[" * 100_000]),
       st.integers(0, 50_000), st.binary(min_size=1, max_size=8))
def test_bundle_reader_on_bytes(tmp_path_factory, prefix, position, flip):
    tmp_path = tmp_path_factory.mktemp("bytes")
    signed = _write_bundle(tmp_path, BUNDLE_CONTENT).read_bytes()
    position = min(position, len(signed))
    for data in (prefix, signed[:position] + flip + signed[position + len(flip):]):
        path = tmp_path / "fuzz.json"
        path.write_bytes(data)
        one_line_or_result(lambda: bundle.read(path))


LOG_PIECES = ([literal for signature in SIGNATURES for literal in signature.literals]
              + ["[rank0]: ", "[rank99999999999999999999]: ", "[1,3]<stderr>:", "  7: ", "Traceback", "Error",
                 "\x1b]0;TITLE\x07", "\x1b]8;;http://x\x1b\\", "\x1b[31m", "\x9b", "\r", "\t", "\u202e", "\0"])
log_lines = st.lists(st.lists(st.sampled_from(LOG_PIECES) | st.text(max_size=20), max_size=6).map("".join),
                     max_size=30).map("\n".join)


@settings(FUZZ, max_examples=max(EXAMPLES // 3, 10))  # each example is a whole command
@given(st.lists(log_lines.map(lambda text: text.encode("utf-8", "surrogatepass")) | st.binary(max_size=300),
                min_size=1, max_size=3),
       st.lists(st.text(string.ascii_lowercase + "0123456789_.-", min_size=1, max_size=12).filter(lambda n: n.strip(".")), min_size=3, max_size=3,
                unique=True))
def test_diagnose_reader_on_fuzzed_logs(tmp_path_factory, contents, names):
    tmp_path = tmp_path_factory.mktemp("logs")
    logs = tmp_path / "logs"
    logs.mkdir()
    for name, content in zip(names, contents):
        (logs / name).write_bytes(content)
    db = tmp_path / "store" / "faultlab.db"
    result = CliRunner().invoke(main, ["--db", str(db), "diagnose", str(logs)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # 1: no known signature
    assert "\x1b" not in result.output and "\x07" not in result.output and "\x9b" not in result.output
    assert diagnose.diagnose([logs]).files <= len(contents)  # the reader alone, as JSON output uses it
    assert not db.parent.exists(), "diagnose never creates the store"


DEV_LOGS = sorted((ROOT / "tests" / "diagnose_devset" / "logs").glob("*.log"))
# How a real log's lines may reach diagnose otherwise: all from one rank, labelled by turns, each
# repeated with its copy cut short (a wrapped or truncated repeat). Facts that real lines carry
# (sequence numbers, sizes, ranks) then meet in combinations no gathered paste showed.
RELABELLINGS = {
    "one rank": lambda lines: ["[rank0]:" + line for line in lines],
    "ranks by turns": lambda lines: [f"[rank{index % 3}]:" + line for index, line in enumerate(lines)],
    "each line again cut short": lambda lines: [piece for line in lines for piece in (line, line[:len(line) * 2 // 3])],
}


@pytest.mark.parametrize("relabelling", RELABELLINGS)
def test_diagnose_reader_on_every_real_log_relabelled(tmp_path, relabelling):
    log = tmp_path / "relabelled.log"
    for path in DEV_LOGS:
        log.write_text("\n".join(RELABELLINGS[relabelling](path.read_text(errors="replace").split("\n"))))
        assert diagnose.diagnose([log]).exit_code in (0, 1), path.name


@FUZZ
@given(st.text(max_size=40) | st.sampled_from(NASTY_TEXT), values)
def test_drill_answer_parsing(text, anything):
    from faultlab.score import check_cause, parse_culprit, parse_ranks

    one_line_or_result(lambda: parse_culprit(text))
    one_line_or_result(lambda: parse_ranks(text))
    one_line_or_result(lambda: parse_ranks(anything if isinstance(anything, list) else [anything]))
    one_line_or_result(lambda: check_cause(text))


answer_entries = st.dictionaries(st.sampled_from(["cause", "culprit", "ranks", "fix", "used"]) | st.text(max_size=6),
                                 values, max_size=6)


@FUZZ
@given(answer_entries | values)
def test_drill_answers_file_entries(data):
    from faultlab.score import answer_from_mapping, parse_used

    one_line_or_result(lambda: answer_from_mapping(data, "answers.yaml"))
    one_line_or_result(lambda: parse_used(data if isinstance(data, str) else str(data)))


@pytest.mark.parametrize("text", ["cause: [", "&a [*a]", "- " * 3000, "a: " + "[" * 3000])
def test_answers_file_yaml_oddities(tmp_path, text):
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    one_line_or_result(lambda: scenarios.read_yaml(path))
