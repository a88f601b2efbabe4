from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab import scenario as scenarios
from faultlab.cli import main
from faultlab.store import Store

ROOT = Path(__file__).resolve().parent.parent
TEST_SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def shipped_scenarios():
    return scenarios.scenario_files()


@pytest.fixture(scope="session")
def shared_db(tmp_path_factory):
    """One store for the session, so live tests reuse each topology's healthy baseline."""
    return tmp_path_factory.mktemp("store") / "faultlab.db"


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "faultlab.db"
    monkeypatch.setenv("FAULTLAB_DB", str(path))
    return path


@pytest.fixture
def store(shared_db):
    with Store(shared_db) as opened:
        yield opened


@pytest.fixture
def cli(db):
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    return invoke


def host_gpus() -> int:
    from faultlab.plan import gpus_on_host

    return gpus_on_host()


def load(path) -> scenarios.Scenario:
    return scenarios.load_file(Path(path))
