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
SCHEMA_VERSION = 1
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
"""


def default_path() -> Path:
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "faultlab" / "faultlab.db"


def topology_key(recording: Recording) -> str:
    """Nodes x ranks per node as planned, e.g. '2x2'."""
    capture = recording.capture
    return f"{len(capture.nodes)}x{capture.world_size // max(len(capture.nodes), 1)}"


class Store:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=30000")
            with self.transaction():
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

    def get(self, recording_id: str) -> Recording:
        row = self._db.execute("SELECT body FROM recordings WHERE id = ?", (recording_id,)).fetchone()
        if row is None:
            raise BadInput(f"no recording {recording_id!r} in {self.path}")
        return self._decode(row[0])

    def latest_baseline(self, topology: str, backend: str, torch: str, host: str) -> Recording | None:
        row = self._db.execute(
            "SELECT body FROM recordings WHERE kind = 'baseline' AND topology = ? AND backend = ? "
            "AND torch = ? AND host = ? AND format = ? ORDER BY recorded_at DESC LIMIT 1",
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

    def _decode(self, body: str) -> Recording:
        try:
            return from_dict(Recording, json.loads(body))
        except (RecordError, ValueError) as error:
            raise EnvironmentProblem(f"{self.path}: a stored recording is unreadable: {error}") from None
