"""Write the shipped recordings' live logs as diagnose-accuracy cases, with the scenario's answer
(cause and culprit) as the known truth:

    python scripts/recordings_to_triage_cases.py recordings/ tests/diagnose_devset/

Each recording of a faulted scenario becomes a directory live/<recording>/ written as `faultlab
run --logs` writes a replay (launcher logs, per-rank streams, Flight Recorder dumps, RECORDED.txt;
not the program, which diagnose skips and the recording keeps), and one case in live-runs.yaml,
with the culprit where the scenario singles one out. The header of that file says where and how
the recordings were made.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from faultlab import recording_files
from faultlab import scenario as scenarios
from faultlab.lab.recorded_files import write_recorded

HEADER = """# faultlab's own live runs, as diagnose reads them: the logs of the shipped recordings in
# recordings/ (made live by scripts/record.py: the CPU corpus as root on the project's 2-core
# machine, torch 2.13.0+cpu, gloo, simulated hosts on veth links; *.h200x1 on one H200 with
# NCCL; the date and versions are in each recording and in each directory's RECORDED.txt), written
# out by scripts/recordings_to_triage_cases.py with their Flight Recorder dumps. Cause and culprit
# are the scenario's answer key. Not public logs: measured apart from them, and the only cases that
# name a culprit node. Some faults leave nothing in the logs (a wrong reduce op, a hang killed at
# the deadline): those are the cases no reading of lines can get right.

"""


def main(recordings: Path, devset: Path) -> None:
    catalog = {item.id: item for item in scenarios.load_all()}
    cases = []
    shutil.rmtree(devset / "live", ignore_errors=True)
    for path in sorted(recordings.glob("*.json")):
        run, _ = recording_files.read(path)
        answer = catalog[run.scenario_id].answer
        if answer.cause == "healthy":
            continue
        made, directory = run.environment, devset / "live" / path.stem
        write_recorded(run.capture, directory,
                       f"Recorded live {run.recorded_at} on {made.host} (torch {made.torch}, NCCL {made.nccl or '-'}) "
                       f"by faultlab run {run.scenario_id}; written out from {path.name}", with_program=False)
        case = {"log": f"live/{path.stem}", "source": f"recordings/{path.name}", "cause": answer.cause,
                "established": f"The scenario {run.scenario_id} injects this fault (its answer key)."}
        if answer.culprit.kind != "job":  # a whole-job fault singles nobody out
            case["culprit"] = f"{answer.culprit.kind} {answer.culprit.index}"
        cases.append(case)
    (devset / "live-runs.yaml").write_text(HEADER + yaml.safe_dump(cases, sort_keys=False, width=110))
    print(f"{len(cases)} cases from {recordings}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
