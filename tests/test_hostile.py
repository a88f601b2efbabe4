"""Hostile input: files from people faultlab does not know, and outputs that must not destroy.

Each case ends in one `faultlab: error:` line and exit 2 (or a result), never a traceback,
a hang, a write over the store, or foreign text reaching the terminal raw.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from faultlab import bundle, scenario as scenarios
from faultlab.errors import BadInput, ExitCode
from faultlab.store import Store

from conftest import ROOT
from test_bad_input import VALID

OSC_TITLE = "\x1b]0;OWNED\x07"
ESC = "\x1b"


def one_error_line(result, *needles):
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("faultlab: error: "), result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def faultlab(*args, env=None, timeout=20):
    """faultlab in a process of its own, so that a blocking read ends the test, not the suite."""
    return subprocess.run([sys.executable, "-m", "faultlab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


@pytest.fixture
def stocked(cli, db):
    """A store holding recordings (a replay of a shipped GPU recording: no launch)."""
    result = cli("run", "missing-set-device")
    assert result.exit_code in (ExitCode.OK, ExitCode.NOT_REPRODUCED), result.output
    with Store(db) as store:
        count = len(store.recordings())
    assert count >= 2
    return count


# --- 1: an output never replaces the store ------------------------------------------------


@pytest.mark.parametrize("command", [("export", "-o"), ("runbook", "-o")])
def test_an_output_over_the_store_is_refused_and_the_store_keeps_everything(cli, db, stocked, command):
    one_error_line(cli(*command, db), "refusing to write over a file that is the recording store")
    with Store(db) as store:
        assert len(store.recordings()) == stocked


def test_an_output_over_a_link_to_the_store_is_refused(cli, db, stocked, tmp_path):
    (tmp_path / "soft.json").symlink_to(db)
    os.link(db, tmp_path / "hard.json")
    for name in ("soft.json", "hard.json"):
        one_error_line(cli("export", "-o", tmp_path / name), "the recording store")
    with Store(db) as store:
        assert len(store.recordings()) == stocked


def test_an_output_into_a_missing_folder_or_over_a_device_is_one_line(cli, db, stocked, tmp_path):
    one_error_line(cli("export", "-o", tmp_path / "missing-dir" / "x.json"), "does not exist")
    assert not (tmp_path / "missing-dir").exists()
    one_error_line(cli("export", "-o", "/dev/null"), "a character device")


def test_an_output_never_replaces_a_file_read_by_the_same_command(tmp_path):
    from faultlab import userfiles

    userfiles.begin_command()
    path = tmp_path / "scenario.yaml"
    path.write_text(VALID)
    scenarios.load_file(path)
    with pytest.raises(BadInput, match="is read by this command"):
        userfiles.write_text(path, "over it")
    assert path.read_text() == VALID
    userfiles.begin_command()


def test_atomic_writes_of_two_writers_to_one_path_never_collide(tmp_path):
    import threading

    from faultlab import userfiles

    target, failures = tmp_path / "out.md", []

    def write(text):
        try:
            for _ in range(50):
                userfiles.write_text(target, text)
        except Exception as error:  # noqa: BLE001  any failure is the finding
            failures.append(error)

    threads = [threading.Thread(target=write, args=(text * 1000,)) for text in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert target.read_text() in ("a" * 1000, "b" * 1000)
    assert os.listdir(tmp_path) == ["out.md"], "no temporary file left behind"


# --- 2: a new store created by two processes at once ----------------------------------------


def _open_after(barrier, path, results):
    barrier.wait()
    try:
        with Store(path) as store:
            store.recordings()
        results.put("ok")
    except Exception as error:  # noqa: BLE001  reported to the parent
        results.put(repr(error))


def test_two_processes_creating_one_fresh_store_never_fail(tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    outcomes = []
    for round_number in range(20):
        path = tmp_path / f"round{round_number}" / "faultlab.db"
        barrier, results = context.Barrier(2), context.Queue()
        workers = [context.Process(target=_open_after, args=(barrier, path, results)) for _ in range(2)]
        for worker in workers:
            worker.start()
        outcomes += [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        # SQLite's own WAL index (-shm) may outlive two connections closing at once; it is not ours.
        left = [name for name in os.listdir(path.parent) if not name.endswith(("-wal", "-shm"))]
        assert left == ["faultlab.db"], "one store, no temporary left beside it"
    assert outcomes == ["ok"] * 40


# --- 3: a damaged store is one line, and nothing is half-written ---------------------------


def _damage(db):
    """Keep the header, overwrite every page after the first: SQLite opens it, reads fail."""
    data = bytearray(db.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("command", [("runbook",), ("export", "-o", "OUT"), ("scores",), ("diagnose", "LOG"),
                                     ("import", "BUNDLE")])
def test_a_store_damaged_past_its_header_is_one_line_exit_2(cli, db, stocked, tmp_path, command):
    bundle_path = tmp_path / "b.json"
    assert cli("export", "-o", bundle_path).exit_code == 0
    (tmp_path / "x.log").write_text("[rank0]: RuntimeError: Address already in use\n")
    for suffix in ("-wal", "-shm"):
        assert not os.path.exists(f"{db}{suffix}")
    _damage(db)
    swap = {"OUT": tmp_path / "out.json", "LOG": tmp_path / "x.log", "BUNDLE": bundle_path}
    result = cli(*[swap.get(part, part) for part in command])
    one_error_line(result, str(db))
    assert "Traceback" not in result.output
    assert not (tmp_path / "out.json").exists(), "no part of a damaged store is exported"


# --- 4, 8, 13: scenario files that attack the reader -----------------------------------------


def alias_bomb() -> str:
    """Nine nested anchors inside `hints`: 1 KB of YAML that expands to 9**9 strings."""
    levels = ['&a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"&a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, 10)]
    return VALID + "hints:\n" + "".join(f"  - {level}\n" for level in levels)


def test_a_1kb_alias_bomb_is_refused_with_a_short_error(tmp_path, cli):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    assert path.stat().st_size < 1500
    line = one_error_line(cli("show", path), "aliases expand to more than")
    assert len(line) < 200


def test_a_recursive_alias_and_deep_nesting_are_refused(tmp_path, cli):
    (tmp_path / "loop.yaml").write_text(VALID + "hints: &h [*h]\n")
    one_error_line(cli("show", tmp_path / "loop.yaml"), "refers to itself")
    (tmp_path / "deep.yaml").write_text(VALID + "hints: " + "[" * 5000 + "]" * 5000 + "\n")
    one_error_line(cli("show", tmp_path / "deep.yaml"), "deep.yaml")


def test_a_foreign_file_is_named_not_quoted(tmp_path, cli):
    path = tmp_path / "passwd.yaml"
    path.write_text("root:x:0:0:root secret hash here:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin\n")
    line = one_error_line(cli("run", path), "top level: expected a mapping, got text")
    assert "secret" not in line and "daemon" not in line


def test_a_long_value_is_quoted_as_a_short_excerpt(tmp_path, cli):
    path = tmp_path / "long.yaml"
    path.write_text(VALID.replace("timeout_s: 3", "timeout_s: " + "x" * 100_000))
    line = one_error_line(cli("show", path), "timeout_s: expected a number")
    assert len(line) < 300


HOSTILE_SCENARIOS = {
    "nproc-100000": (VALID.replace("master-port-offset", "launch-nproc").replace("offset: 1", "nproc_per_node: 100000"),
                     "faults[0].params.nproc_per_node: 100000 is outside 1..64"),
    "list-in-signatures": (VALID.replace("{verdict: hung}", '{verdict: hung, signatures: [[1, "a"]]}'),
                           "expect.signatures[0]: expected a string, got list"),
    "dict-in-signatures": (VALID.replace("{verdict: hung}", "{verdict: hung, nccl_signatures: [{a: 1}]}"),
                           "expect.nccl_signatures[0]: expected a string"),
    "port-offset-99999": (VALID.replace("offset: 1", "offset: 99999"), "offset: 99999 is outside -1000..1000"),
    "negative-seconds": (VALID.replace("master-port-offset", "slow-rank").replace("target: {node: 1}", "target: {rank: 1}")
                         .replace("offset: 1", "seconds: -1"), "seconds: -1"),
    "nan-seconds": (VALID.replace("master-port-offset", "slow-rank").replace("target: {node: 1}", "target: {rank: 1}")
                    .replace("offset: 1", "seconds: .nan"), "seconds: nan is outside"),
    "huge-numel": (VALID.replace("master-port-offset", "shape-mismatch").replace("target: {node: 1}", "target: {rank: 1}")
                   .replace("offset: 1", "numel: 9223372036854775807"), "numel: 9223372036854775807 is outside"),
    "newline-in-work": (VALID.replace("master-port-offset", "slow-rank").replace("target: {node: 1}", "target: {rank: 1}")
                        .replace("offset: 1", 'work: "x\\nimport os"'), "work: 'x\\nimport os' is not a short phrase"),
    "escape-in-ifname": (VALID.replace("master-port-offset", "socket-ifname").replace("offset: 1", 'ifname: "e\\e]0;T\\a"'),
                         "ifname: 'e\\x1b]0;T\\x07' is not an interface name"),
    "long-ifname": (VALID.replace("master-port-offset", "socket-ifname").replace("offset: 1", "ifname: " + "e" * 10_000),
                    "ifname: 'eeee"),
    "gpus-per-node-2-63": (VALID.replace("ranks_per_node: 1}", "ranks_per_node: 1, gpus_per_node: 9223372036854775807}"),
                           "topology.gpus_per_node"),
    "nccl-net-plugin": (VALID + "env: {NCCL_NET_PLUGIN: evil}\n", "env.NCCL_NET_PLUGIN: not an allowed variable"),
    "nccl-tuner-plugin": (VALID + "env: {NCCL_TUNER_PLUGIN: evil}\n", "env.NCCL_TUNER_PLUGIN: not an allowed"),
    "nccl-profiler-plugin": (VALID + "env: {NCCL_PROFILER_PLUGIN: x}\n", "env.NCCL_PROFILER_PLUGIN: not an allowed"),
    "nccl-debug-file": (VALID + "env: {NCCL_DEBUG_FILE: x}\n", "env.NCCL_DEBUG_FILE: not an allowed"),
    "env-path-value": (VALID + "env: {NCCL_DEBUG: /etc/passwd}\n", "env.NCCL_DEBUG: '/etc/passwd'"),
    "env-escape-value": (VALID + 'env: {NCCL_DEBUG: "\\e]0;T\\a"}\n', "env.NCCL_DEBUG: '\\x1b]0;T\\x07'"),
    "bad-id": (VALID.replace("id: bad", "id: ../../etc/x"), "id: '../../etc/x' must be lowercase"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_SCENARIOS))
def test_hostile_scenario_is_one_line(tmp_path, cli, db, name):
    text, needle = HOSTILE_SCENARIOS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    one_error_line(cli("show", path), needle)
    assert not db.exists(), "show never touches the store"
    one_error_line(cli("run", path), needle)


def test_ordinary_environment_still_allowed(tmp_path, cli):
    path = tmp_path / "ok.yaml"
    path.write_text(VALID + "env: {NCCL_DEBUG: INFO, NCCL_SOCKET_IFNAME: '^docker0,lo', TORCH_CPP_LOG_LEVEL: INFO}\n")
    assert cli("show", path).exit_code == 0


# --- 5, 11: FIFOs, devices, huge files ---------------------------------------------------


@pytest.mark.parametrize("command", ["import", "run", "show"])
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path, command):
    fifo = tmp_path / "some.fifo.yaml"
    os.mkfifo(fifo)
    result = faultlab(command, fifo, env={"FAULTLAB_DB": str(tmp_path / "db" / "faultlab.db")})
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert result.stderr.strip() == f"faultlab: error: {fifo}: a FIFO, not a regular file"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused(cli, device):
    for command in ("import", "run"):
        one_error_line(cli(command, device), f"{device}: a character device, not a regular file")


def test_a_directory_and_a_missing_file_are_one_line(cli, tmp_path):
    directory = cli("import", tmp_path)  # click's own check of the argument
    assert directory.exit_code == ExitCode.BAD_INPUT and "is a directory" in directory.output
    one_error_line(cli("run", f"{tmp_path}/"), "a directory, not a regular file")
    one_error_line(cli("import", tmp_path / "nope.json"), "file not found")


def _peak_mb_of_reading(path) -> float:
    code = ("import sys; from faultlab import bundle; from faultlab.errors import BadInput\n"
            "try: bundle.read(__import__('pathlib').Path(sys.argv[1]))\n"
            "except BadInput as e: print(e, file=sys.stderr)\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert "not a faultlab bundle" in result.stderr or "more than the" in result.stderr, result.stderr
    return int(result.stdout.strip()) / 1024


def test_rejecting_a_large_non_bundle_costs_no_memory(tmp_path):
    small, large, oversized = tmp_path / "small.bin", tmp_path / "large.bin", tmp_path / "oversized.bin"
    small.write_bytes(b"\0" * 1024)
    with open(large, "wb") as stream:  # sparse: 300 MB of zeros that take no disk
        stream.truncate(300 << 20)
    with open(oversized, "wb") as stream:
        stream.truncate(600 << 20)
    baseline = _peak_mb_of_reading(small)
    assert _peak_mb_of_reading(large) < baseline + 20
    assert _peak_mb_of_reading(oversized) < baseline + 20


# --- 6: terminal escapes ------------------------------------------------------------------


def test_diagnose_prints_no_escape_byte_from_a_log(cli, tmp_path):
    (tmp_path / "rank0.log").write_text(f"[rank0]: RuntimeError: Address already in use {OSC_TITLE}\x1b]52;c;cHduZWQ=\x07\n"
                                        f"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ Traceback error\x9b31m\n")
    result = cli("diagnose", tmp_path)
    assert result.exit_code == 0, result.output
    assert ESC not in result.output and "\x07" not in result.output and "\x9b" not in result.output
    assert "^[]0;OWNED^G" in result.output


def test_trainee_names_with_escapes_are_refused_and_stored_ones_shown_inert(cli, db, stocked):
    one_error_line(cli("drill", "missing-set-device", "--replay", "--trainee", f"x{OSC_TITLE}", "--cause",
                       "missing-set-device", "--culprit", "job", "--fix", "f"), "is not a trainee name")
    import sqlite3

    with sqlite3.connect(db) as raw:  # a store written by an older faultlab, before names were checked
        raw.execute("INSERT INTO drills VALUES ('d', ?, NULL, 's', 'c', 1, 1, 5, 10, 1, 't', '{}')", (f"x{OSC_TITLE}",))
    result = cli("scores")
    assert ESC not in result.output and "x^[]0;OWNED^G" in result.output


# --- 7: identities and markup from bundles -----------------------------------------------


def _bundle_with(tmp_path, cli, change) -> "Path":
    exported = tmp_path / "good.json"
    assert cli("export", "-o", exported).exit_code == 0
    document = json.loads(exported.read_text())
    change(next(r for r in document["recordings"] if r["symptoms"]))  # the run, with the lines it printed
    content = {"recordings": document["recordings"], "drills": document["drills"]}
    document["sha256"] = bundle._digest(content)  # a careful attacker re-signs the bundle
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("field, value, needle", [
    ("id", "evil<b>\"'../x", "].id: 'evil<b>\"\\'../x' is not a recording id"),
    ("scenario_id", "../../etc/x", "].scenario_id"),
    ("baseline_id", "<img src=x onerror=alert(1)>", "].baseline_id"),
    ("environment.torch", "2.4</sub><script>alert(1)</script>", "].environment.torch"),
    ("environment.host", f"h{OSC_TITLE}", "].environment.host: 'h\\x1b]0;OWNED\\x07'"),
    ("environment.gpus", ["NVIDIA <b>"], "].environment.gpus[0]"),
])
def test_a_bundle_with_a_foreign_identity_is_refused_naming_the_field(cli, db, stocked, tmp_path, field, value, needle):
    def change(recording):
        holder, _, key = field.rpartition(".")
        (recording[holder] if holder else recording)[key] = value

    before = json.loads(cli("scores", "--json").output)
    one_error_line(cli("import", _bundle_with(tmp_path, cli, change)), needle)
    with Store(db) as store:
        assert len(store.recordings()) == stocked
    assert json.loads(cli("scores", "--json").output) == before


def test_markup_in_free_text_of_a_bundle_is_imported_and_shown_inert(cli, db, stocked, tmp_path):
    def change(recording):
        recording["capture"]["ranks"][0]["stderr"] += f"\n<script>alert(1)</script> {OSC_TITLE}\n"
        for symptom in recording["symptoms"]:
            symptom["line"] = f"<img src=x onerror=alert(1)> {OSC_TITLE} ``` \n# heading"

    assert cli("import", _bundle_with(tmp_path, cli, change)).exit_code == 0
    markdown = cli("runbook")
    assert markdown.exit_code == 0 and ESC not in markdown.output
    html_path = tmp_path / "runbook.html"
    assert cli("runbook", "--format", "html", "-o", html_path).exit_code == 0
    html = html_path.read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and ESC not in html
    markdown_path = tmp_path / "runbook.md"
    assert cli("runbook", "-o", markdown_path).exit_code == 0
    assert ESC not in markdown_path.read_text()


def test_a_bundle_symptom_unknown_to_this_faultlab_is_refused(cli, db, stocked, tmp_path):
    def change(recording):
        recording["symptoms"][0]["id"] = "no-such-signature"

    one_error_line(cli("import", _bundle_with(tmp_path, cli, change)), ".symptoms[0].id: 'no-such-signature'")


# --- 9: read-only commands write nothing --------------------------------------------------


def test_read_only_commands_create_no_store_and_no_folder(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from faultlab.cli import main

    db = tmp_path / "not" / "yet" / "faultlab.db"
    monkeypatch.setenv("FAULTLAB_DB", str(db))
    (tmp_path / "x.log").write_text("[rank0]: RuntimeError: Address already in use\n")
    runner = CliRunner()
    scores = runner.invoke(main, ["scores"])
    assert scores.exit_code == 0 and "No recordings yet" in scores.output
    assert runner.invoke(main, ["scores", "--json"]).exit_code == 0
    assert runner.invoke(main, ["diagnose", str(tmp_path / "x.log")]).exit_code == 0
    assert "no recordings yet" in runner.invoke(main, ["runbook"]).output
    assert "no recordings yet" in runner.invoke(main, ["export", "-o", str(tmp_path / "b.json")]).output
    assert not (tmp_path / "not").exists() and not (tmp_path / "b.json").exists()


# --- 10: exit codes and checks -----------------------------------------------------------


def test_unknown_pack_and_a_negative_top_are_refused(cli, tmp_path):
    one_error_line(cli("scores", "--pack", "nopack"), "--pack 'nopack': no such pack")
    (tmp_path / "x.log").write_text("x\n")
    result = cli("diagnose", "--top", "-1", tmp_path / "x.log")
    assert result.exit_code == ExitCode.BAD_INPUT and "Traceback" not in result.output


@pytest.mark.live
def test_sigterm_during_a_run_exits_143_and_cleans_up(tmp_path):
    import glob
    import signal
    import tempfile
    import time

    env = {**os.environ, "FAULTLAB_DB": str(tmp_path / "faultlab.db")}
    process = subprocess.Popen([sys.executable, "-m", "faultlab.cli", "run", "port-in-use"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    run_dirs = os.path.join(tempfile.gettempdir(), f"faultlab-run-{process.pid}-*")
    for _ in range(600):  # until a launch of this faultlab is under way (the baseline's or the run's)
        if glob.glob(run_dirs) or process.poll() is not None:
            break
        time.sleep(0.1)
    time.sleep(1)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == ExitCode.TERMINATED, stderr
    assert "faultlab: error: interrupted" in stderr and "Traceback" not in stderr
    assert not glob.glob(run_dirs), "the run directory is removed"


# --- the store module: no cycle ---------------------------------------------------------


def test_the_store_never_imports_drills():
    code = "import sys, faultlab.store, faultlab.bundle; print('faultlab.drill' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
