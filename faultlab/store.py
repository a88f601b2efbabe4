"""The recording store: the only module that touches the database (SQLite, one file).

Default location: $FAULTLAB_DB, else $XDG_DATA_HOME/faultlab/faultlab.db (~/.local/share/...).
A team can share the file; writes are single transactions and SQLite's WAL journal lets
several processes write to it at once. A new store appears whole: it is built under a
unique temporary name and linked into place, so two processes creating one never collide.
An older store is migrated step by step on `user_version`; a damaged one is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
from pathlib import Path

from .errors import BadInput, EnvironmentProblem, FaultlabError
from .records import RECORDING_FORMAT, DrillResult, LeaderboardRow, Recording, WeakSpot
from .serial import RecordError, from_dict, to_dict

DB_ENV = "FAULTLAB_DB"
BUSY_TIMEOUT_S = 30
SCHEMA_VERSION = 3
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
BASELINE_PREFIX = "baseline-"  # a baseline's scenario id is baseline-<topology key>


def _to_2(db) -> None:
    """Schema 1 stores made before bundles: no format column, no drills table."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(recordings)")}
    if "format" not in columns:
        db.execute("ALTER TABLE recordings ADD COLUMN format INTEGER NOT NULL DEFAULT 1")
    for statement in filter(str.strip, _SCHEMA.split(";")):
        db.execute(statement)


def _to_3(db) -> None:
    """The baseline key is data: a baseline's topology column is the key in its scenario id,
    not read from the wording of its network description."""
    db.execute(
        "UPDATE recordings SET topology = substr(scenario_id, ?) WHERE kind = 'baseline' AND scenario_id LIKE ?",
        (len(BASELINE_PREFIX) + 1, BASELINE_PREFIX + "%"),
    )


# MIGRATIONS[n] takes a store of schema n to n + 1.
MIGRATIONS = {1: _to_2, 2: _to_3}


class StoreUnreadable(BadInput):
    """The store file is damaged, not a store, or from a newer faultlab (exit 2, bad input)."""


def default_path() -> Path:
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "faultlab" / "faultlab.db"


def topology_key(recording: Recording) -> str:
    """A baseline's key, from its scenario id ('2x2', '2x2-hosts'); a run's planned shape."""
    if recording.kind == "baseline" and recording.scenario_id.startswith(BASELINE_PREFIX):
        return recording.scenario_id[len(BASELINE_PREFIX):]
    capture = recording.capture
    return f"{len(capture.nodes)}x{capture.world_size // max(len(capture.nodes), 1)}"


def _create(path: Path) -> None:
    """Build a new, empty store under a unique temporary name and link it into place: whoever
    links first made the store, and every other process opens that one."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    os.close(descriptor)
    try:
        db = sqlite3.connect(temporary, isolation_level=None)
        try:
            db.executescript(_SCHEMA)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        finally:
            db.close()
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        for leftover in (temporary, temporary + "-wal", temporary + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


class Store:
    """The store at `path`. Read-only (`readonly=True`) never creates it: where the file is
    absent, `missing` is true and every query finds nothing."""

    def __init__(self, path: Path | None = None, readonly: bool = False) -> None:
        self.path = Path(path) if path else default_path()
        self._db = None
        self._guard()
        self.missing = readonly and not self.path.exists()
        if self.missing:
            return
        if self.path.exists() and not self.path.is_file():
            raise StoreUnreadable(f"{self.path}: not a regular file, so not a recording store")
        try:
            if not readonly:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if not self.path.exists():
                    _create(self.path)
            self._open(writable=not readonly or os.access(self.path, os.W_OK))
        except sqlite3.DatabaseError as error:
            self.close()
            raise self._unreadable(error) from None
        except OSError as error:
            self.close()
            raise EnvironmentProblem(f"{self.path}: cannot create the recording store: {error}") from None
        except BaseException:
            self.close()
            raise
        self._guard()

    def _guard(self) -> None:
        """No output of this command may be written over the store or its journal."""
        from . import userfiles

        for suffix in ("", "-wal", "-shm"):
            userfiles.guard(Path(f"{self.path}{suffix}"), "is the recording store")

    def _open(self, writable: bool) -> None:
        """Connect (never creating the file) and bring the schema up to date. A store this user
        may only read is read as it is: without a write-ahead log beside it nobody is writing,
        so it is read immutable (no -wal/-shm files are made); it cannot be migrated."""
        uri = self.path.resolve().as_uri()
        if writable:
            uri += "?mode=rw"
        else:
            uri += "?mode=ro" + ("" if Path(f"{self.path}-wal").exists() else "&immutable=1")
        self._db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        if writable:
            self._migrate()
            return
        found = self._db.execute("PRAGMA user_version").fetchone()[0]
        if found != SCHEMA_VERSION:
            raise StoreUnreadable(f"{self.path}: store schema {found}, this faultlab reads {SCHEMA_VERSION}, and "
                                  "this user may not write it to upgrade it; open it once with write access")

    def _migrate(self) -> None:
        if self._db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        with self.transaction():
            found = self._db.execute("PRAGMA user_version").fetchone()[0]
            if found > SCHEMA_VERSION:
                raise StoreUnreadable(f"{self.path}: written by a newer faultlab (store schema {found}, this one "
                                      f"reads up to {SCHEMA_VERSION}); upgrade faultlab or choose another with --db")
            if found == 0:  # made by hand, or empty: give it the schema
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    self._db.execute(statement)
                found = SCHEMA_VERSION
            for version in range(found, SCHEMA_VERSION):
                MIGRATIONS[version](self._db)
            if found != SCHEMA_VERSION or self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _unreadable(self, error: sqlite3.DatabaseError) -> FaultlabError:
        if isinstance(error, sqlite3.OperationalError) and ("locked" in str(error) or "busy" in str(error)):
            return EnvironmentProblem(f"{self.path}: the store stayed locked by another process for {BUSY_TIMEOUT_S} s")
        return StoreUnreadable(f"{self.path}: not a readable recording store ({error}); move it aside or "
                               "choose another with --db")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self):
        """One atomic write: all of it lands, or none of it."""
        if self._db is None:
            raise BadInput(f"{self.path}: no recordings yet (the store does not exist)")
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as error:
            raise self._unreadable(error) from None
        try:
            yield self._db
        except BaseException as error:
            with contextlib.suppress(sqlite3.DatabaseError):
                self._db.execute("ROLLBACK")
            if isinstance(error, sqlite3.DatabaseError):
                raise self._unreadable(error) from None
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as error:
            raise self._unreadable(error) from None

    def _rows(self, query: str, args=()) -> list[tuple]:
        """Every row of a read; a damaged store is one StoreUnreadable, never a traceback."""
        if self._db is None:
            return []
        try:
            return self._db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as error:
            raise self._unreadable(error) from None

    def save(self, recording: Recording) -> None:
        with self.transaction() as db:
            self._insert(db, recording)

    def _insert(self, db, recording: Recording, keep_existing: bool = False) -> None:
        db.execute(
            f"INSERT OR {'IGNORE' if keep_existing else 'REPLACE'} INTO recordings VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
        return bool(self._rows("SELECT 1 FROM recordings WHERE id = ?", (recording_id,)))

    def get(self, recording_id: str) -> Recording:
        rows = self._rows("SELECT body FROM recordings WHERE id = ?", (recording_id,))
        if not rows:
            raise BadInput(f"no recording {recording_id!r} in {self.path}")
        return self._decode(rows[0][0])

    def latest_baseline(self, topology: str, backend: str, torch: str, host: str) -> Recording | None:
        rows = self._rows(
            "SELECT body FROM recordings WHERE kind = 'baseline' AND topology = ? AND backend = ? "
            "AND torch = ? AND host = ? AND format = ? AND live = 1 ORDER BY recorded_at DESC LIMIT 1",
            (topology, backend, torch, host, RECORDING_FORMAT),
        )
        return self._decode(rows[0][0]) if rows else None

    def recordings(self, scenario_id: str | None = None, kind: str | None = None) -> list[Recording]:
        query, args = "SELECT body FROM recordings WHERE format = ?", [RECORDING_FORMAT]
        if scenario_id:
            query, args = query + " AND scenario_id = ?", args + [scenario_id]
        if kind:
            query, args = query + " AND kind = ?", args + [kind]
        return [self._decode(row[0]) for row in self._rows(query + " ORDER BY recorded_at", args)]

    # --- drills ----------------------------------------------------------------------------

    def save_drill(self, drill: DrillResult) -> None:
        with self.transaction() as db:
            self._insert_drill(db, drill)

    def _insert_drill(self, db, drill: DrillResult, keep_existing: bool = False) -> None:
        db.execute(
            f"INSERT OR {'IGNORE' if keep_existing else 'REPLACE'} INTO drills VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (drill.id, drill.trainee, drill.pack, drill.scenario_id, drill.cause,
             int(drill.score_cause > 0), int(drill.score_culprit > 0), drill.total, drill.max,
             drill.seconds, drill.started_at, json.dumps(to_dict(drill))),
        )

    def drills(self, trainee: str | None = None, pack: str | None = None) -> list[DrillResult]:
        query, args = "SELECT body FROM drills WHERE 1=1", []
        if trainee:
            query, args = query + " AND trainee = ?", args + [trainee]
        if pack:
            query, args = query + " AND pack = ?", args + [pack]
        return [self._decode(row[0], DrillResult) for row in self._rows(query + " ORDER BY started_at, id", args)]

    def leaderboard(self, pack: str | None = None) -> list[LeaderboardRow]:
        """Each trainee's drills, mean score, best and last played, best mean first."""
        where, args = ("WHERE pack = ?", [pack]) if pack else ("", [])
        rows = self._rows(
            f"SELECT trainee, COUNT(*), ROUND(AVG(total), 1), MAX(total), MAX(started_at) FROM drills {where} "
            "GROUP BY trainee ORDER BY AVG(total) DESC, trainee",
            args,
        )
        return [LeaderboardRow(*row) for row in rows]

    def weak_spots(self, pack: str | None = None, trainee: str | None = None) -> list[WeakSpot]:
        """Per cause: drills, cause named right %, culprit right %, mean score; weakest first."""
        clauses, args = [], []
        for column, value in (("pack", pack), ("trainee", trainee)):
            if value:
                clauses.append(f"{column} = ?")
                args.append(value)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self._rows(
            f"SELECT cause, COUNT(*), ROUND(100.0 * AVG(cause_right)), ROUND(100.0 * AVG(culprit_right)), "
            f"ROUND(AVG(total), 1) FROM drills {where} GROUP BY cause ORDER BY AVG(total), cause",
            args,
        )
        return [WeakSpot(*row) for row in rows]

    # --- bundles -----------------------------------------------------------------------------

    def import_bundle(self, recordings: list[Recording], drills: list[DrillResult]) -> tuple[int, int]:
        """Add every record in one transaction (all or nothing); returns how many were new.
        A record already here is kept: a bundle never rewrites a recording it shares an id with."""
        with self.transaction() as db:
            new_recordings = sum(
                1 for r in recordings if not db.execute("SELECT 1 FROM recordings WHERE id = ?", (r.id,)).fetchone()
            )
            new_drills = sum(
                1 for d in drills if not db.execute("SELECT 1 FROM drills WHERE id = ?", (d.id,)).fetchone()
            )
            for recording in recordings:
                self._insert(db, recording, keep_existing=True)
            for drill in drills:
                self._insert_drill(db, drill, keep_existing=True)
        return new_recordings, new_drills

    def _decode(self, body: str, record=Recording):
        try:
            return from_dict(record, json.loads(body), "drill" if record is DrillResult else "record")
        except (RecordError, ValueError) as error:
            raise StoreUnreadable(f"{self.path}: a stored record is unreadable: {error}") from None
