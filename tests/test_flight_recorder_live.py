"""Real gloo dumps from a real torchrun job, read, analysed, and given to torch's analyzer."""

import os
import subprocess
import sys

import pytest

from faultlab.flight_recorder.analysis import analyse
from faultlab.flight_recorder.evidence import evidence_from_dumps
from faultlab.flight_recorder.torch_analyzer import agreement, run_torch_analyzer

JOB = os.path.join(os.path.dirname(__file__), "flight_recorder_job.py")


def run_job(tmp_path, mode: str, ranks: int = 3):
    """Launch the job under torchrun (loopback, a free port) and return the dump directory."""
    out = tmp_path / "dumps"
    out.mkdir()
    env = dict(os.environ, FR_OUT=str(out), FR_MODE=mode, FR_TIMEOUT_S="3", TORCH_FR_BUFFER_SIZE="100",
               MASTER_ADDR="127.0.0.1", OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks),
               "--monitor_interval", "0.1", JOB]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=50, start_new_session=True)
    assert done.returncode != 0, "the job should fail: a rank times out in the collective"
    return out


@pytest.mark.live
def test_real_dumps_name_the_rank_that_never_joined(tmp_path):
    dumps = run_job(tmp_path, "skip")
    raw = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(dumps)],
                         capture_output=True, text=True, timeout=60)
    assert raw.returncode != 0 and "KeyError: ('0', " in raw.stderr  # gloo's pg_config keyed by ''
    evidence = evidence_from_dumps([dumps])
    assert [dump.rank for dump in evidence.capture.dumps] == [0, 1, 2]
    analysis = evidence.analysis
    assert (analysis.divergence_seq, analysis.divergence_op, analysis.culprits) == (2, "all_reduce", (2,))
    assert [row.last_enqueued for row in analysis.progress] == [2, 2, 1]
    torch_run = run_torch_analyzer(evidence.capture)
    assert torch_run.exit_code == 0, torch_run.output
    assert "missing ranks: {2}" in torch_run.output
    assert agreement(analysis, torch_run) == "agree on the sequence id (#2); agree on the rank(s): [2]"


@pytest.mark.live
def test_real_dumps_name_the_rank_that_issued_another_op(tmp_path):
    evidence = evidence_from_dumps([run_job(tmp_path, "swap")])
    analysis = analyse(evidence.capture)
    assert analysis.findings[0].kind == "op-mismatch" and analysis.culprits == (1,)
    torch_run = run_torch_analyzer(evidence.capture)
    assert "Culprit rank 1" in torch_run.output and "COLLECTIVE_TYPE_MISMATCH" in torch_run.output
