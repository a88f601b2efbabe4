"""Drills end to end (interactive through a pseudo-terminal, and not), scoring, teams."""

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest
import yaml

from faultlab import score as scoring
from faultlab.errors import ExitCode
from faultlab.faults import Target
from faultlab.store import Store

from conftest import ROOT, load

RIGHT_FIX = {
    "wrong-master-port-rank": "Give every rank the MASTER_PORT node 0's launcher listens on; don't override it per process.",
    "wrong-reduce-op": "all_reduce with ReduceOp.SUM (and divide by the world size for a mean).",
    "missing-set-device": "Call torch.cuda.set_device(local_rank) right after init_process_group.",
}


def drill_json(cli, *args):
    result = cli("drill", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def counts(db) -> tuple[int, int]:
    with Store(db) as store:
        return len(store.recordings()), len(store.drills())


@pytest.mark.live
def test_right_diagnosis_scores_full_marks_and_a_victim_loses_the_culprit(cli):
    args = ["wrong-master-port-rank", "--trainee", "ana", "--cause", "wrong-master-port",
            "--ranks", "0,1,2,3", "--fix", RIGHT_FIX["wrong-master-port-rank"]]
    right = drill_json(cli, *args, "--culprit", "rank 3")[0]
    assert right["total"] == 100 and right["max"] == 100 and not right["replay"]
    victim = drill_json(cli, *args, "--culprit", "rank 0")[0]
    assert victim["score_culprit"] == 0 and victim["total"] == 70
    assert "rank 0 is not it (it is rank 3)" in " ".join(victim["notes"])


def test_wrong_cause_scores_low_and_hints_cost_what_they_say(cli):
    wrong = drill_json(cli, "wrong-reduce-op", "--replay", "--trainee", "bo", "--cause", "straggler-rank",
                       "--culprit", "rank 0", "--ranks", "0", "--fix", "wait longer")[0]
    assert wrong["score_cause"] == 0 and wrong["total"] < 40
    helped = drill_json(cli, "wrong-reduce-op", "--replay", "--trainee", "bo", "--cause", "wrong-reduce-op", "--culprit", "job",
                        "--ranks", "0,1,2,3", "--fix", RIGHT_FIX["wrong-reduce-op"], "--used", "hint=1,log=2")[0]
    assert helped["costs"] == scoring.COSTS["hint"] + 2 * scoring.COSTS["log"] == 11
    assert helped["total"] == 100 - 11


def test_replayed_drill_is_labelled_and_scored(cli):
    result = cli("drill", "missing-set-device", "--replay", "--trainee", "cy", "--cause", "missing-set-device",
                 "--culprit", "job", "--ranks", "0,1", "--fix", RIGHT_FIX["missing-set-device"])
    assert result.exit_code == 0, result.output
    briefing = " ".join(result.output.split("Score:")[0].split())
    assert "REPLAY of a recording, recorded live" in briefing and "NVIDIA H200" in briefing
    assert "Score: 100 / 100" in result.output
    assert "missing-set-device" not in briefing, "nothing names the scenario before the answer"


def test_giving_up_scores_zero_and_others_answers_follow(db):
    """Interactive at a terminal: a hint at its cost, then give up; the next trainee's
    debrief shows how the earlier drill was answered, without names."""
    from click.testing import CliRunner

    from faultlab.cli import main

    def drill(trainee, keys):
        return CliRunner().invoke(main, ["--db", str(db), "drill", "missing-set-device", "--replay",
                                         "--trainee", trainee], input=keys, catch_exceptions=False)

    gave_up = drill("dee", "hint\ngive up\n")
    assert gave_up.exit_code == 0, gave_up.output
    assert "Hint 1: " in gave_up.output and f"(-{scoring.COSTS['hint']} points)" in gave_up.output
    assert "Score: 0 / 100" in gave_up.output and "gave up" in gave_up.output
    assert "Cause: missing-set-device" in gave_up.output, "giving up shows the answer"
    answered = drill("eve", "answer\nmissing-set-device\njob\n0,1\n" + RIGHT_FIX["missing-set-device"] + "\n")
    assert "Score: 100 / 100" in answered.output
    assert "How 1 other drill(s) of this scenario were answered:" in answered.output
    assert "1 x gave-up" in answered.output and "dee" not in answered.output


def test_answers_file_and_its_errors(cli, db, tmp_path):
    good = tmp_path / "answers.yaml"
    good.write_text(yaml.safe_dump({"cause": "missing-set-device", "culprit": "job", "ranks": [0, 1],
                                    "fix": RIGHT_FIX["missing-set-device"], "used": {"hint": 1}}))
    result = drill_json(cli, "missing-set-device", "--replay", "--trainee", "di", "--answers", good)
    assert result[0]["total"] == 95
    before = counts(db)
    cases = {
        "cause: [unclosed": "not valid YAML",
        "cause: gremlins\nculprit: job\nfix: x\n": "cause 'gremlins' is not in the cause catalog",
        "cause: missing-set-device\nculprit: the GPU\nfix: x\n": "culprit 'the GPU'",
        "cause: missing-set-device\nculprit: job\nfix: x\nranks: [a]\n": "deviating ranks",
        "cause: missing-set-device\nculprit: job\n": "missing 'fix'",
        "cause: missing-set-device\nculprit: job\nfix: x\nmood: good\n": "unknown key 'mood'",
    }
    for text, needle in cases.items():
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        result = cli("drill", "missing-set-device", "--replay", "--trainee", "di", "--answers", bad)
        assert result.exit_code == ExitCode.BAD_INPUT, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and needle in lines[0] and str(bad) in lines[0], result.output
        assert counts(db) == before, "a bad answers file must change nothing"


def test_scores_leaderboard_weak_spots_and_history(cli):
    for trainee, cause in (("eve", "missing-set-device"), ("eve", "missing-set-device"), ("fay", "rank-crash")):
        cli("drill", "missing-set-device", "--replay", "--trainee", trainee, "--cause", cause,
            "--culprit", "job", "--ranks", "0,1", "--fix", RIGHT_FIX["missing-set-device"])
    board = json.loads(cli("scores", "--json").output)
    assert [row["trainee"] for row in board["leaderboard"]] == ["eve", "fay"]
    assert board["leaderboard"][0]["drills"] == 2
    weakest = board["weak_spots"][0]
    assert weakest["cause"] == "missing-set-device" and weakest["cause_right_pct"] == 67.0
    history = cli("scores", "--trainee", "fay")
    assert "missing-set-device" in history.output and "Weak spots" in history.output


def test_eight_concurrent_drills_lose_nothing(db):
    env = dict(os.environ, FAULTLAB_DB=str(db))
    Store(db).close()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "faultlab.cli", "drill", "missing-set-device", "--replay", "--trainee", f"t{i}",
             "--cause", "missing-set-device", "--culprit", "job", "--ranks", "0,1", "--fix", "set_device"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for i in range(8)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    with Store(db) as store:
        assert sorted(d.trainee for d in store.drills()) == [f"t{i}" for i in range(8)]


def read_until(fd, needle: str, limit_s: float = 60) -> str:
    seen, end = "", time.monotonic() + limit_s
    while needle not in seen:
        if time.monotonic() > end:
            raise AssertionError(f"never saw {needle!r} in:\n{seen[-2000:]}")
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536).decode(errors="replace")
            except OSError:
                break
    return seen


def test_interactive_drill_through_a_terminal(db):
    primary, secondary = pty.openpty()
    env = dict(os.environ, FAULTLAB_DB=str(db), COLUMNS="200")
    process = subprocess.Popen([sys.executable, "-m", "faultlab.cli", "drill", "wrong-reduce-op", "--replay", "--trainee", "gus"],
                               stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    screen = read_until(primary, "drill:")
    assert "Ticket:" in screen and "wrong-reduce-op" not in screen
    for line, expect in (("hint\n", "Hint 1:"), ("log 2\n", "--- rank 2 stderr ---"), ("causes\n", "wrong-reduce-op"),
                         ("answer\n", "Cause"), ("wrong-reduce-op\n", "Culprit"), ("job\n", "Ranks"),
                         ("0,1,2,3\n", "Fix"), (RIGHT_FIX["wrong-reduce-op"] + "\n", "What happened")):
        os.write(primary, line.encode())
        screen = read_until(primary, expect)
    assert "Score: 92 / 100" in screen, screen
    assert process.wait(timeout=30) == 0
    os.close(primary)
    with Store(db) as store:
        (drill,) = store.drills(trainee="gus")
        assert drill.used == {"hint": 1, "log": 1} and drill.total == 92


def test_export_import_round_trip_and_tampering(cli, db, tmp_path):
    cli("drill", "missing-set-device", "--replay", "--trainee", "hal", "--cause", "missing-set-device",
        "--culprit", "job", "--ranks", "0,1", "--fix", "set_device")
    bundle = tmp_path / "team.json"
    assert cli("export", "-o", bundle).exit_code == 0
    other = tmp_path / "other.db"
    imported = cli("--db", other, "import", bundle)
    assert imported.exit_code == 0 and "1 new drills" in imported.output
    assert counts(other) == counts(db)
    again = cli("--db", other, "import", bundle)
    assert "0 new recordings, 0 new drills" in again.output
    document = json.loads(bundle.read_text())
    document["drills"][0]["total"] = 100.0
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(document))
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()
    for path, needle in ((tampered, "checksum mismatch"), (tmp_path / "missing.json", "file not found")):
        result = cli("--db", fresh, "import", path)
        assert result.exit_code == ExitCode.BAD_INPUT and needle in result.output and "Traceback" not in result.output
        assert counts(fresh) == (0, 0)
    (tmp_path / "junk.json").write_text("{not json")
    assert "not a faultlab bundle" in cli("--db", fresh, "import", tmp_path / "junk.json").output


def test_culprit_parsing_and_partial_credit():
    assert scoring.parse_culprit("Rank 3") == Target("rank", 3)
    assert scoring.parse_culprit("n1") == Target("node", 1)
    assert scoring.parse_culprit("job") == Target("job")
    scenario = load(ROOT / "scenarios" / "wrong-master-port-rank.yaml")
    points, note = scoring._culprit_points(Target("node", 1), scenario.answer.culprit, 2)
    assert points == scoring.CULPRIT_POINTS / 2 and "node 1 holds it" in note


@pytest.mark.live
def test_replaying_a_stored_run_leaves_its_live_baseline_alone(cli, db):
    assert cli("run", "wrong-reduce-op").exit_code == ExitCode.OK
    with Store(db) as store:
        (live,) = store.recordings("wrong-reduce-op", kind="run")
        before = store.get(live.baseline_id)
    drill_json(cli, "wrong-reduce-op", "--replay", "--trainee", "ivy", "--cause", "wrong-reduce-op",
               "--culprit", "job", "--ranks", "0,1,2,3", "--fix", RIGHT_FIX["wrong-reduce-op"])
    with Store(db) as store:
        after = store.get(live.baseline_id)
    assert after == before and after.live
