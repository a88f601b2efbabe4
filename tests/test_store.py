"""The store: migrations on user_version, the baseline key as data, named rows, imports
that never rewrite, a read-only open that creates nothing."""

import dataclasses
import json
import sqlite3

import pytest

from faultlab import recording_files as recordings
from faultlab.errors import BadInput
from faultlab.records import LeaderboardRow, WeakSpot
from faultlab.serial import to_dict
from faultlab.store import SCHEMA_VERSION, Store, StoreUnreadable, _SCHEMA

from conftest import ROOT

RUN, BASELINE = recordings.read(sorted((ROOT / "recordings").glob("*.json"))[0])

SCHEMA_1 = """
CREATE TABLE recordings (id TEXT PRIMARY KEY, scenario_id TEXT NOT NULL, kind TEXT NOT NULL, live INTEGER NOT NULL,
    backend TEXT NOT NULL, topology TEXT NOT NULL, torch TEXT NOT NULL, host TEXT NOT NULL, recorded_at TEXT NOT NULL,
    verdict TEXT, reproduced INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX recordings_scenario ON recordings (scenario_id, recorded_at);
"""


def _row(recording, topology):
    return (recording.id, recording.scenario_id, recording.kind, int(recording.live), recording.backend, topology,
            recording.environment.torch, recording.environment.host, recording.recorded_at,
            recording.comparison.verdict if recording.comparison else None, int(recording.reproduced),
            json.dumps(to_dict(recording)))


def test_a_schema_1_store_is_migrated_and_keeps_its_recordings(tmp_path):
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_1)
        for recording in (RUN, BASELINE):
            db.execute("INSERT INTO recordings VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", _row(recording, "1x1"))
        db.execute("PRAGMA user_version=1")
    with Store(path) as store:
        assert {r.id for r in store.recordings()} == {RUN.id, BASELINE.id}
        assert store.drills() == [] and store.leaderboard() == []
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_schema_2_store_gets_its_baseline_key_from_data(tmp_path):
    path = tmp_path / "v2.db"
    hosts_baseline = dataclasses.replace(BASELINE, id=BASELINE.id.replace(BASELINE.scenario_id, "baseline-2x2-hosts"),
                                         scenario_id="baseline-2x2-hosts")
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA)
        db.execute("INSERT INTO recordings VALUES (?,1,?,?,?,?,?,?,?,?,?,?,?)", _row(hosts_baseline, "guessed"))
        db.execute("PRAGMA user_version=2")
    env = hosts_baseline.environment
    with Store(path) as store:
        found = store.latest_baseline("2x2-hosts", hosts_baseline.backend, env.torch, env.host)
        assert found is not None and found.id == hosts_baseline.id


def test_the_baseline_key_never_reads_the_network_wording(tmp_path):
    reworded = dataclasses.replace(BASELINE, capture=dataclasses.replace(BASELINE.capture, network="simulated hosts!"))
    env = reworded.environment
    with Store(tmp_path / "s.db") as store:
        store.save(reworded)
        key = reworded.scenario_id.removeprefix("baseline-")
        assert store.latest_baseline(key, reworded.backend, env.torch, env.host).id == reworded.id


def test_leaderboard_and_weak_spots_are_named_records(tmp_path):
    with Store(tmp_path / "s.db") as store:
        with store.transaction() as db:
            db.execute("INSERT INTO drills VALUES ('a.1.b', 'eve', NULL, 's', 'rank-crash', 1, 0, 7, 10, 3, "
                       "'2026-12-01T00:00:00+00:00', '{}')")
        assert store.leaderboard() == [LeaderboardRow("eve", 1, 7.0, 7.0, "2026-12-01T00:00:00+00:00")]
        assert store.weak_spots() == [WeakSpot("rank-crash", 1, 100.0, 0.0, 7.0)]


def test_an_import_never_rewrites_a_recording_already_there(tmp_path):
    forged = dataclasses.replace(RUN, source="forged")
    with Store(tmp_path / "s.db") as store:
        store.save(RUN)
        assert store.import_bundle([forged, BASELINE], []) == (1, 0)
        assert store.get(RUN.id).source == RUN.source


def test_a_read_only_store_that_is_absent_creates_nothing(tmp_path):
    path = tmp_path / "a" / "b" / "s.db"
    with Store(path, readonly=True) as store:
        assert store.missing and store.recordings() == [] and store.leaderboard() == []
        with pytest.raises(BadInput, match="no recordings yet"):
            store.save(RUN)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("content", [b"not a database at all" * 100, b"SQLite format 3\0" + b"\xff" * 4000])
def test_a_file_that_is_not_a_store_is_one_error(tmp_path, content):
    path = tmp_path / "s.db"
    path.write_bytes(content)
    with pytest.raises(StoreUnreadable, match="not a readable recording store"):
        Store(path)
    assert path.read_bytes() == content


def test_no_temporary_file_is_left_beside_a_new_store(tmp_path):
    Store(tmp_path / "s.db").close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_a_store_this_user_may_only_read_is_read_as_it_is(tmp_path, monkeypatch):
    import os

    path = tmp_path / "shared.db"
    with Store(path) as store:
        store.save(RUN)
    before = sorted(p.name for p in tmp_path.iterdir())
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode == os.W_OK else real_access(p, mode, **kw))
    with Store(path, readonly=True) as store:
        assert [r.id for r in store.recordings()] == [RUN.id]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_store_path_with_uri_characters_opens(tmp_path):
    path = tmp_path / "a?b#c%20.db"
    with Store(path) as store:
        store.save(RUN)
    with Store(path, readonly=True) as store:
        assert store.has(RUN.id)
