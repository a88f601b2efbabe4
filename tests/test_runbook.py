"""The runbook, from real recordings: verbatim excerpts, every recorded cause, honest gaps."""

import os
import re
import shutil
import subprocess

import pytest

from faultlab import runbook as runbooks
from faultlab.reports import runbook_pages
from faultlab import scenario as scenarios

from conftest import ROOT, load, replay_file

CPU_SCENARIOS = ["rank-crash", "rank-oom-killed", "wrong-reduce-op", "skipped-destroy", "plain-python", "nccl-without-gpu"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store holding replays of six CPU recordings and every GPU recording: real runs,
    nothing launched."""
    from faultlab.store import Store

    db = tmp_path_factory.mktemp("runbook") / "faultlab.db"
    chosen = [ROOT / "recordings" / f"{scenario_id}.cpu.json" for scenario_id in CPU_SCENARIOS]
    chosen += [path for path in sorted((ROOT / "recordings").glob("*.json")) if not path.name.endswith(".cpu.json")]
    with Store(db) as store:
        for path in chosen:
            scenario_id = path.name.split(".")[0]
            replay_file(load(ROOT / "scenarios" / f"{scenario_id}.yaml"), path, store)
        runs = store.recordings(kind="run")
        baselines = {r.id: store.get(r.baseline_id) for r in runs if r.baseline_id}
    cause_of = scenarios.cause_of_each()
    return db, runs, runbooks.build(runs, baselines, cause_of)


def all_output(runs) -> str:
    texts = []
    for recording in runs:
        texts += [r.stdout + r.stderr for r in recording.capture.ranks] + [n.log for n in recording.capture.nodes]
    return "\n".join(texts)


def test_every_excerpt_is_verbatim_from_a_recording(recorded):
    _, runs, book = recorded
    logs = all_output(runs)
    assert book.sections
    for section in book.sections:
        assert section.excerpts, section.signature
        for excerpt in section.excerpts:
            assert excerpt.line in logs, f"{section.signature}: {excerpt.line!r} is not in any recording"


def test_every_recorded_cause_has_its_section_and_gaps_are_named(recorded):
    _, runs, book = recorded
    markdown = runbook_pages.to_markdown(book)
    recorded_causes = {book.cause_of[r.scenario_id] for r in book.recordings}
    for cause in recorded_causes:
        assert f"(`{cause}`): `" in markdown, f"{cause} has no entry in the index by cause"
    assert "wrong-master-port" in book.causes_without_recordings
    assert "(`wrong-master-port`): no recording yet" in markdown
    duplicate = next(s for s in book.sections if s.signature == "duplicate-gpu")
    assert duplicate.only_replayed and duplicate.platforms == ("gpu",)
    assert "Only seen in replayed recordings" in markdown
    ranked = next(s for s in book.sections if s.signature == "connection-closed-by-peer")
    assert [c.recordings for c in ranked.causes] == sorted((c.recordings for c in ranked.causes), reverse=True)


def test_html_is_self_contained_and_renders(recorded, tmp_path, cli, monkeypatch):
    db, _, _ = recorded
    monkeypatch.setenv("FAULTLAB_DB", str(db))
    page = tmp_path / "runbook.html"
    result = cli("runbook", "--format", "html", "-o", page)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "<svg" in text and "healthy baseline" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(|<script|<link|@import""", text), "no requests"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        assert not os.environ.get("CI"), "CI installs chromium (.ci/run): the page must be rendered there"
        pytest.skip("chromium is not installed here")
    shot = tmp_path / "runbook.png"
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,3000", f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_markdown_filters(recorded, cli, monkeypatch):
    db, _, _ = recorded
    monkeypatch.setenv("FAULTLAB_DB", str(db))
    gpu = cli("runbook", "--platform", "gpu").output
    assert "duplicate-gpu" in gpu and "wrong-reduce-op:" not in gpu and "Never recorded on: cpu" in gpu
    crash = cli("runbook", "--cause", "rank-crash").output
    assert "### rank-oom-killed: crashed" in crash and "### missing-set-device" not in crash
    assert "no recordings match" in cli("runbook", "--cause", "port-in-use").output
