"""Write the shipped recordings' live logs as diagnose-accuracy cases, with the scenario's answer
(cause and culprit) as the known truth:

    python scripts/recordings_to_triage_cases.py recordings/ tests/diagnose_devset/

Each recording whose scenario names a culprit becomes a directory live/<recording>/ laid out as
a run directory (node<N>.launcher.log, ranks/node<N>-local<L>-rank<R>.stderr|stdout), and one
case in live-runs.yaml. The header of that file says where and how the recordings were made.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from faultlab import recording_files
from faultlab import scenario as scenarios

HEADER = """# faultlab's own live runs, as diagnose reads them: the logs of the shipped recordings in
# recordings/ (made live by scripts/record.py: the CPU corpus as root on the project's 2-core
# machine, torch 2.13.0+cpu, gloo, simulated hosts on veth links; *.h200x1 on one H200 with
# NCCL; the date and versions are in each recording), written out by
# scripts/recordings_to_triage_cases.py. Cause and culprit are the scenario's answer key.
# Not public logs: measured apart from them, and the only cases that name a culprit node.

"""


def main(recordings: Path, devset: Path) -> None:
    catalog = {item.id: item for item in scenarios.load_all()}
    cases = []
    shutil.rmtree(devset / "live", ignore_errors=True)
    for path in sorted(recordings.glob("*.json")):
        run, _ = recording_files.read(path)
        answer = catalog[run.scenario_id].answer
        if answer.culprit.kind == "job":  # nothing to single out
            continue
        directory = devset / "live" / path.stem
        (directory / "ranks").mkdir(parents=True)
        for node in run.capture.nodes:
            if node.log:
                (directory / f"node{node.node}.launcher.log").write_text(node.log)
        for rank in run.capture.ranks:
            for stream in ("stderr", "stdout"):
                if getattr(rank, stream):
                    name = f"node{rank.node}-local{rank.local_rank}-rank{rank.shown_rank}.{stream}"
                    (directory / "ranks" / name).write_text(getattr(rank, stream))
        cases.append({"log": f"live/{path.stem}", "source": f"recordings/{path.name}", "cause": answer.cause,
                      "established": f"The scenario {run.scenario_id} injects this fault (its answer key).",
                      "culprit": f"{answer.culprit.kind} {answer.culprit.index}"})
    (devset / "live-runs.yaml").write_text(HEADER + yaml.safe_dump(cases, sort_keys=False, width=110))
    print(f"{len(cases)} cases from {recordings}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
