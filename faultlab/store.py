"""The recording store: the only module that touches the database (SQLite, one file).

Default location: $FAULTLAB_DB, else $XDG_DATA_HOME/faultlab/faultlab.db (~/.local/share/...).
A team can share the file; writes are single transactions and SQLite's WAL journal lets
several processes write to it at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from .errors import BadInput, EnvironmentProblem
from .records import RECORDING_FORMAT, Recording
from .serial import RecordError, from_dict, to_dict

DB_ENV = "FAULTLAB_DB"
SCHEMA_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS recordings (
    id TEXT PRIMARY KEY,
    format INTEGER NOT NULL,
    scenario_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    live INTEGER NOT NULL,
    backend TEXT NOT NULL,
    topology TEXT NOT NULL,
    torch TEXT NOT NULL,
    host TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    verdict TEXT,
    reproduced INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recordings_baseline
    ON recordings (kind, topology, backend, torch, host, recorded_at);
CREATE INDEX IF NOT EXISTS recordings_scenario ON recordings (scenario_id, recorded_at);
CREATE TABLE IF NOT EXISTS drills (
    id TEXT PRIMARY KEY,
    trainee TEXT NOT NULL,
    pack TEXT,
    scenario_id TEXT NOT NULL,
    cause TEXT NOT NULL,
    cause_right INTEGER NOT NULL,
    culprit_right INTEGER NOT NULL,
    total REAL NOT NULL,
    max INTEGER NOT NULL,
    seconds REAL NOT NULL,
    started_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS drills_trainee ON drills (trainee, started_at);
"""


def default_path() -> Path:
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "faultlab" / "faultlab.db"


def topology_key(recording: Recording) -> str:
    """Nodes x ranks per node as planned, e.g. '2x2' ('2x2-hosts' on simulated hosts)."""
    capture = recording.capture
    shape = f"{len(capture.nodes)}x{capture.world_size // max(len(capture.nodes), 1)}"
    return shape + ("-hosts" if capture.network.startswith("simulated hosts") else "")


class Store:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=30000")
            with self.transaction():
                found = self._db.execute("PRAGMA user_version").fetchone()[0]
                tables = self._db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
                if tables and found != SCHEMA_VERSION:
                    raise EnvironmentProblem(
                        f"{self.path}: written by another faultlab version (store schema {found}, this one reads "
                        f"{SCHEMA_VERSION}); move it aside or choose another with --db"
                    )
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as error:
            raise EnvironmentProblem(f"{self.path}: cannot open the recording store: {error}") from None
        except OSError as error:
            raise EnvironmentProblem(f"{self.path}: cannot create the recording store: {error}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self):
        """One atomic write: all of it lands, or none of it."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def save(self, recording: Recording) -> None:
        with self.transaction() as db:
            self._insert(db, recording)

    def _insert(self, db, recording: Recording) -> None:
        db.execute(
            "INSERT OR REPLACE INTO recordings VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                recording.id,
                recording.format,
                recording.scenario_id,
                recording.kind,
                int(recording.live),
                recording.backend,
                topology_key(recording),
                recording.environment.torch,
                recording.environment.host,
                recording.recorded_at,
                recording.comparison.verdict if recording.comparison else None,
                int(recording.reproduced),
                json.dumps(to_dict(recording)),
            ),
        )

    def has(self, recording_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM recordings WHERE id = ?", (recording_id,)).fetchone() is not None

    def get(self, recording_id: str) -> Recording:
        row = self._db.execute("SELECT body FROM recordings WHERE id = ?", (recording_id,)).fetchone()
        if row is None:
            raise BadInput(f"no recording {recording_id!r} in {self.path}")
        return self._decode(row[0])

    def latest_baseline(self, topology: str, backend: str, torch: str, host: str) -> Recording | None:
        row = self._db.execute(
            "SELECT body FROM recordings WHERE kind = 'baseline' AND topology = ? AND backend = ? "
            "AND torch = ? AND host = ? AND format = ? AND live = 1 ORDER BY recorded_at DESC LIMIT 1",
            (topology, backend, torch, host, RECORDING_FORMAT),
        ).fetchone()
        return self._decode(row[0]) if row else None

    def recordings(self, scenario_id: str | None = None, kind: str | None = None) -> list[Recording]:
        query, args = "SELECT body FROM recordings WHERE format = ?", [RECORDING_FORMAT]
        if scenario_id:
            query, args = query + " AND scenario_id = ?", args + [scenario_id]
        if kind:
            query, args = query + " AND kind = ?", args + [kind]
        return [self._decode(row[0]) for row in self._db.execute(query + " ORDER BY recorded_at", args)]

    # --- drills ----------------------------------------------------------------------------

    def save_drill(self, drill) -> None:
        with self.transaction() as db:
            self._insert_drill(db, drill)

    def _insert_drill(self, db, drill) -> None:
        db.execute(
            "INSERT OR REPLACE INTO drills VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (drill.id, drill.trainee, drill.pack, drill.scenario_id, drill.cause,
             int(drill.score_cause > 0), int(drill.score_culprit > 0), drill.total, drill.max,
             drill.seconds, drill.started_at, json.dumps(to_dict(drill))),
        )

    def drills(self, trainee: str | None = None, pack: str | None = None) -> list:
        from .drill import DrillResult

        query, args = "SELECT body FROM drills WHERE 1=1", []
        if trainee:
            query, args = query + " AND trainee = ?", args + [trainee]
        if pack:
            query, args = query + " AND pack = ?", args + [pack]
        rows = self._db.execute(query + " ORDER BY started_at, id", args)
        return [from_dict(DrillResult, json.loads(row[0]), "drill") for row in rows]

    def leaderboard(self, pack: str | None = None) -> list[tuple]:
        """(trainee, drills, mean score, best, last played) per trainee, best mean first."""
        where, args = ("WHERE pack = ?", [pack]) if pack else ("", [])
        return self._db.execute(
            f"SELECT trainee, COUNT(*), ROUND(AVG(total), 1), MAX(total), MAX(started_at) FROM drills {where} "
            "GROUP BY trainee ORDER BY AVG(total) DESC, trainee",
            args,
        ).fetchall()

    def weak_spots(self, pack: str | None = None, trainee: str | None = None) -> list[tuple]:
        """(cause, drills, cause named right %, culprit right %, mean score) per cause, weakest first."""
        clauses, args = [], []
        for column, value in (("pack", pack), ("trainee", trainee)):
            if value:
                clauses.append(f"{column} = ?")
                args.append(value)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        return self._db.execute(
            f"SELECT cause, COUNT(*), ROUND(100.0 * AVG(cause_right)), ROUND(100.0 * AVG(culprit_right)), "
            f"ROUND(AVG(total), 1) FROM drills {where} GROUP BY cause ORDER BY AVG(total), cause",
            args,
        ).fetchall()

    # --- bundles -----------------------------------------------------------------------------

    def import_bundle(self, recordings: list[Recording], drills: list) -> tuple[int, int]:
        """Add every record in one transaction (all or nothing); returns how many were new."""
        with self.transaction() as db:
            new_recordings = sum(1 for r in recordings if not self.has(r.id))
            new_drills = sum(
                1 for d in drills if not db.execute("SELECT 1 FROM drills WHERE id = ?", (d.id,)).fetchone()
            )
            for recording in recordings:
                self._insert(db, recording)
            for drill in drills:
                self._insert_drill(db, drill)
        return new_recordings, new_drills

    def _decode(self, body: str) -> Recording:
        try:
            return from_dict(Recording, json.loads(body))
        except (RecordError, ValueError) as error:
            raise EnvironmentProblem(f"{self.path}: a stored recording is unreadable: {error}") from None
