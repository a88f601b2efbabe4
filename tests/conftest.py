import functools
import signal
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


@functools.lru_cache(maxsize=None)
def this_host():
    """This machine's facts, probed once for the session."""
    from faultlab.host import Host

    return Host.probe()


def host_gpus() -> int:
    return this_host().gpus


def run_live(scenario, store, options=None):
    """Run `scenario` live here, or skip the test naming what this host lacks."""
    from faultlab import runner
    from faultlab.launchers import LocalLauncher, RunOptions

    here = this_host().availability(scenario)
    if not here.live:
        pytest.skip(f"{scenario.id} {here.reason}")
    return runner.run_scenario(scenario, store, LocalLauncher(this_host()), here.backend, options or RunOptions())


def replay_file(scenario, path, store):
    from faultlab import runner
    from faultlab.launchers import ReplayLauncher

    return runner.run_scenario(scenario, store, ReplayLauncher.from_file(scenario, path), None)


def load(path) -> scenarios.Scenario:
    return scenarios.load_file(Path(path))


def takes_ctrl_c() -> None:
    """preexec_fn for a child the test interrupts: a shell's background job (CI's, a nohup)
    starts with SIGINT ignored, and its children inherit that; a terminal's job does not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
