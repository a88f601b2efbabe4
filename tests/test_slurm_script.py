"""The SLURM side without a cluster: the job script, options and config files, refusals, preflight's reasoning."""

import dataclasses
import os
import shutil
import subprocess

import pytest

from faultlab import scenario as scenarios
from faultlab.errors import BadInput, EnvironmentProblem
from faultlab.lab.plan import build_plan
from faultlab.records import PhaseEvent
from faultlab.slurm import script
from faultlab.slurm.launcher import SlurmLauncher
from faultlab.slurm.options import SlurmOptions, load_config
from faultlab.slurm.preflight import Check, isolate, phase_times

OPTIONS = SlurmOptions(partition="gpu", account="ml-infra", env=(("GLOO_SOCKET_IFNAME", "eth0"),),
                       sbatch_args=("--qos=debug",), srun_args=("--cpu-bind=none",))


def render(scenario_id: str, options: SlurmOptions = OPTIONS, backend: str = "gloo") -> str:
    scenario = scenarios.resolve(scenario_id)
    plan = build_plan(scenario, backend, cluster_env=options.env_dict)
    return script.render(plan, options, run_dir="/shared/runs/x", run_id="r1", title="t", job_name="faultlab-x")


def node_branch(text: str, node: int) -> str:
    """The lines of one node's case branch in the node script."""
    branch = text.split(f"    {node})\n", 1)[1]
    return branch.split(";;", 1)[0]


def test_script_asks_for_what_the_user_gave():
    text = render("healthy")
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --partition=gpu",
                 "#SBATCH --account=ml-infra", "#SBATCH --qos=debug", "#SBATCH --job-name=faultlab-x",
                 "export GLOO_SOCKET_IFNAME=eth0", "srun --ntasks-per-node=1 --kill-on-bad-exit=0 --cpu-bind=none"):
        assert line in text
    assert "#SBATCH --time=" in text and "127.0.0.1" not in text and "GLOO_SOCKET_IFNAME=lo" not in text


def test_script_is_valid_bash_and_carries_the_program_verbatim():
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    text = render("rank-crash")
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    program = build_plan(scenarios.resolve("rank-crash"), "gloo", cluster_env={}).program
    assert program.rstrip("\n") in text
    node_script = text.split("<<'FAULTLAB_NODE'\n", 1)[1].split("\nFAULTLAB_NODE\n", 1)[0]
    assert subprocess.run(["bash", "-n"], input=node_script, text=True).returncode == 0


def test_each_nodes_sweep_ends_only_what_its_own_script_started():
    """The sweep matches a marker the node's script exports before it starts anything; the batch
    script's srun, on node 0's machine with SLURM_NODEID=0, carries the run's marker only."""
    text = render("rank-crash")
    head, node_script = text.split("<<'FAULTLAB_NODE'\n", 1)
    node_lines = node_script.split("\nFAULTLAB_NODE\n", 1)[0].splitlines()
    marked = node_lines.index('export FAULTLAB_NODE="$FAULTLAB_RUN/$node"')
    assert marked < min(index for index, line in enumerate(node_lines) if '"$PYTHON"' in line)
    assert '"$PYTHON" -m faultlab.lab.supervise "$FAULTLAB_RUN" "FAULTLAB_NODE=$FAULTLAB_NODE"' in node_lines
    assert "FAULTLAB_NODE" not in head


def test_each_node_gets_its_own_slice_of_the_faults():
    text = render("wrong-master-port-node")
    assert '--master_port="$MASTER_PORT"' in node_branch(text, 0)
    assert "--master_port=$((MASTER_PORT + 1))" in node_branch(text, 1)
    interface = render("wrong-socket-interface")
    assert "export GLOO_SOCKET_IFNAME=eth9" in node_branch(interface, 1)
    assert "eth9" not in node_branch(interface, 0)
    assert "export GLOO_SOCKET_IFNAME=eth0" in node_branch(interface, 0)  # not job-wide any more: node 1 differs


def test_port_in_use_and_plain_python_are_applied_on_the_nodes():
    squatted = render("port-in-use")
    assert "socket.create_server" in node_branch(squatted, 0) and "create_server" not in node_branch(squatted, 1)
    plain = render("plain-python")
    assert "torch.distributed.run" not in plain and '"$PYTHON" -m faultlab.lab.worker 0' in plain


@pytest.mark.parametrize("scenario_id", ["firewall-master-port", "link-down", "wrong-master-addr", "too-few-gpus"])
def test_root_only_and_address_faults_are_refused_with_a_reason(scenario_id):
    launcher = SlurmLauncher(OPTIONS)
    scenario = scenarios.resolve(scenario_id)
    with pytest.raises(EnvironmentProblem) as refused:
        launcher.plan(scenario, "gloo")
    refused_kind = next(fault.kind for fault in scenario.faults if fault.kind in script.REFUSED)
    assert "not applied on a cluster" in str(refused.value) and refused_kind in str(refused.value)


def test_gpu_scenarios_need_gpus_asked_for():
    with pytest.raises(EnvironmentProblem, match="--gpus-per-node"):
        SlurmLauncher(SlurmOptions()).backend(scenarios.resolve("missing-set-device"))
    assert SlurmLauncher(SlurmOptions(gpus_per_node=2)).backend(scenarios.resolve("missing-set-device")) == "nccl"
    assert SlurmLauncher(SlurmOptions()).backend(scenarios.resolve("healthy")) == "gloo"
    nccl = render("missing-set-device", dataclasses.replace(OPTIONS, gpus_per_node=2), backend="nccl")
    assert "#SBATCH --gpus-per-node=2" in nccl and "CUDA_VISIBLE_DEVICES" not in nccl


def test_config_file_and_its_mistakes(tmp_path):
    good = tmp_path / "cluster.yaml"
    good.write_text("partition: debug\ntime: '0:10:00'\nsbatch_args: --qos=low --exclusive\n"
                    "env: {NCCL_SOCKET_IFNAME: ib0}\nshared_dir: /scratch/fl\n")
    options = load_config(good)
    assert options.partition == "debug" and options.sbatch_args == ("--qos=low", "--exclusive")
    assert options.env == (("NCCL_SOCKET_IFNAME", "ib0"),) and str(options.shared_dir) == "/scratch/fl"
    for body, problem in (("partiton: x\n", "unknown key 'partiton'"), ("- a\n", "expected a mapping"),
                          ("time: soon\n", "not a SLURM time limit"), ("env: [A]\n", "env must be a mapping"),
                          ("env: {'1A': x}\n", "not an environment variable name"), ("{{\n", "not a readable YAML")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(BadInput, match=problem):
            load_config(bad)
    with pytest.raises(BadInput, match="no such file"):
        load_config(tmp_path / "missing.yaml")


def test_cli_prints_the_script_and_rejects_stray_options(cli, tmp_path):
    printed = cli("run", "wrong-master-port-node", "--slurm", "--partition", "p1", "--slurm-env",
                  "GLOO_SOCKET_IFNAME=ib0", "--shared-dir", tmp_path, "--print-script")
    assert printed.exit_code == 0 and printed.output.startswith("#!/bin/bash")
    assert "#SBATCH --partition=p1" in printed.output and str(tmp_path) in printed.output
    assert list(tmp_path.iterdir()) == []  # printing submits and writes nothing
    stray = cli("run", "healthy", "--partition", "p1")
    assert stray.exit_code == 2 and "add --slurm" in stray.output
    bad_env = cli("run", "healthy", "--slurm", "--slurm-env", "NOEQUALS", "--print-script")
    assert bad_env.exit_code == 2 and "--slurm-env" in bad_env.output
    refused = cli("run", "link-down", "--slurm", "--print-script")
    assert refused.exit_code == 3 and "link-down fault is not applied on a cluster" in refused.output


def _check(nodes, healthy):
    recording = type("R", (), {"reproduced": healthy})()
    return Check(tuple(nodes), recording, {}, "")


def test_isolate_names_the_node_every_failing_pair_shares():
    nodes = ("n1", "n2", "n3", "n4")
    pairs = [_check(pair, "n3" not in pair) for pair in
             [("n1", "n2"), ("n1", "n3"), ("n1", "n4"), ("n2", "n3"), ("n2", "n4"), ("n3", "n4")]]
    assert isolate(nodes, pairs) == (("n3",), ())
    link = [_check(pair, pair != ("n1", "n2")) for pair in [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]]
    assert isolate(nodes[:3], link) == ((), (("n1", "n2"),))
    assert isolate(nodes[:3], [_check(p, False) for p in [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]]) == ((), (
        ("n1", "n2"), ("n1", "n3"), ("n2", "n3")))


def test_phase_times_are_the_slowest_rank_and_absent_when_a_rank_never_finished():
    def rank(events):
        return type("Rank", (), {"events": tuple(PhaseEvent(phase, t) for phase, t in events)})()

    done = [("init_begin", 1.0), ("init_end", 1.5), ("all_reduce_begin", 1.6), ("all_reduce_end", 1.7)]
    capture = type("C", (), {"ranks": (rank(done), rank([("init_begin", 1.0), ("init_end", 2.0)]))})()
    assert phase_times(capture) == {"init": 1.0, "all_reduce": None, "destroy": None}


def test_without_slurm_commands_the_run_says_so(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, squeue or scontrol here
    result = cli("run", "healthy", "--slurm", "--shared-dir", tmp_path / "shared")
    assert result.exit_code == 3 and "not installed" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "shared").exists()


def test_the_job_sets_its_port_after_clearing_an_outer_jobs_variables():
    """MASTER_PORT is among the variables a job run from inside another job clears: it must be set after."""
    for text in (render("healthy"), render_step()):
        assert text.index("unset MASTER_ADDR MASTER_PORT") < text.index("\nMASTER_PORT=") < text.index("\nsrun ")


def render_step() -> str:
    plan = build_plan(scenarios.resolve("healthy"), "gloo", cluster_env=OPTIONS.env_dict)
    step = script.StepTarget("41", ("n3", "n5"), "faultlab-x-r1", script.step_port("41", 2))
    return script.render(plan, OPTIONS, run_dir="/shared/runs/x", run_id="r1", title="t", job_name="faultlab-x",
                         step=step)


def test_a_step_script_runs_srun_in_the_allocation_on_its_nodes():
    text = render_step()
    assert "#SBATCH" not in text
    srun = next(line for line in text.splitlines() if line.startswith("srun "))
    for argument in ("--jobid=41", "--job-name=faultlab-x-r1", "--nodes=2", "--ntasks=2", "--nodelist=n3,n5",
                     "--overlap", "--ntasks-per-node=1", "--cpu-bind=none"):
        assert argument in srun.split()
    assert "JOB_ID=41" in text and "NODES=n3,n5" in text and f"MASTER_PORT={29500 + 43}" in text


def test_the_script_takes_the_store_host_from_its_own_nodes():
    assert 'first_node=$(scontrol show hostnames "$NODES" | head -n 1)' in render("healthy")
    assert "NODES=$SLURM_JOB_NODELIST" in render("healthy")


def fake_slurm(directory, squeue_failures: int, squeue_error: str = "slurm_load_jobs error: Unable to contact slurm "
               "controller (connect failure)"):
    """sbatch, squeue and scancel on PATH that log their calls: squeue fails `squeue_failures`
    times, then lists nothing (the job and its steps left)."""
    calls = directory / "calls"
    for name, body in {
        "sbatch": 'echo "7;cluster"',
        "scancel": "",
        "squeue": f'n=$(grep -c "^squeue" "{calls}"); '
                  f'if [ "$n" -le {squeue_failures} ]; then echo "{squeue_error}" >&2; exit 1; fi',
    }.items():
        command = directory / name
        command.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\n{body}\n')
        command.chmod(0o755)
    return calls


def test_a_squeue_that_fails_is_an_error_not_a_job_without_steps(monkeypatch, tmp_path):
    from faultlab.slurm import scheduler

    fake_slurm(tmp_path, squeue_failures=1)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")  # these first
    with pytest.raises(EnvironmentProblem, match="squeue failed: slurm_load_jobs error: Unable to contact"):
        scheduler.job_steps("7")
    assert scheduler.job_steps("7") == {}  # answered: nothing listed
    fake_slurm(tmp_path, squeue_failures=99, squeue_error="slurm_load_jobs error: Invalid job id specified")
    assert scheduler.job_steps("7") == {}  # the job left: no steps


def test_a_job_whose_state_squeue_cannot_tell_is_cancelled_and_waited_for(monkeypatch, tmp_path):
    from faultlab.slurm import scheduler

    calls = fake_slurm(tmp_path, squeue_failures=3)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")  # these first
    with scheduler.submitted(tmp_path / "job.sh", tmp_path / "job.out") as job:
        assert job.id == "7"
    made = calls.read_text().splitlines()
    assert [line.split()[0] for line in made] == ["sbatch", "squeue", "scancel", "squeue", "squeue", "squeue"]
    assert "scancel 7" in made


def test_a_step_squeue_never_answers_for_is_named_at_the_limit(monkeypatch, tmp_path):
    from faultlab.slurm.steps import Step

    fake_slurm(tmp_path, squeue_failures=999)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")  # these first
    srun = subprocess.Popen(["sleep", "60"], start_new_session=True)
    step = Step(srun, "7", "faultlab-x-r1")
    step.cancel()  # squeue cannot say which step: the local srun is terminated instead
    assert srun.wait(timeout=10) == -15
    with pytest.raises(EnvironmentProblem, match=r"still there 1 s after it was cancelled \(squeue failed: "):
        step.wait_until_gone(limit_s=1.0)


def test_every_step_in_an_allocation_gets_a_port_of_its_own_across_launchers(monkeypatch):
    """preflight makes a launcher per group it checks, all in one allocation: their steps must not
    share a port a stopped predecessor may still hold."""
    from faultlab.slurm import scheduler

    monkeypatch.setattr(scheduler, "job_nodes", lambda job_id: ["n1", "n2", "n3"])
    monkeypatch.setattr(scheduler, "expand_nodelist", lambda nodelist: nodelist.split(","))
    healthy = scenarios.resolve("healthy")
    plan = build_plan(healthy, "gloo", cluster_env={})
    options = dataclasses.replace(OPTIONS, jobid="90210")
    ports = [SlurmLauncher(dataclasses.replace(options, nodelist=group))._step(plan, healthy, "r").master_port
             for group in ("n1,n2", "n1,n3", "n2,n3", "n1,n2")]
    assert len(set(ports)) == 4, ports
