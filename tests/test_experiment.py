"""The program a worker runs: the seed program plus each fault's patch, valid Python."""

import pytest

from faultlab import faults
from faultlab.lab import program as seed
from faultlab.lab.plan import program_for

from conftest import load, shipped_scenarios


def test_healthy_program_is_the_seed_program():
    program = seed.render_program("gloo", 5)
    for line in (
        "dist.init_process_group(BACKEND, timeout=TIMEOUT)",
        'local_rank = int(os.environ["LOCAL_RANK"])',
        "    torch.cuda.set_device(local_rank)",
        "x = torch.ones(1, device=device) * rank",
        "dist.all_reduce(x)",
        'print(f"Rank {rank}: {x.item()}", flush=True)',
        "dist.destroy_process_group()",
    ):
        assert line in program.splitlines()
    compile(program, "train.py", "exec")


@pytest.mark.parametrize("path", shipped_scenarios(), ids=lambda p: p.stem)
@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_every_scenario_program_compiles(path, backend):
    compile(program_for(load(path), backend), "train.py", "exec")


def test_code_faults_change_the_program_and_launch_faults_do_not():
    scenario = load("scenarios/skipped-destroy.yaml")
    assert program_for(scenario, "gloo") != program_for(scenario, "gloo", healthy=True)
    scenario = load("scenarios/wrong-master-port-node.yaml")
    assert program_for(scenario, "gloo") == program_for(scenario, "gloo", healthy=True)


def test_every_fault_kind_names_a_known_cause():
    from faultlab.causes import CAUSES_BY_ID

    for kind in faults.FAULT_KINDS:
        assert kind.cause in CAUSES_BY_ID, kind.id


def test_unknown_injection_point_is_refused():
    with pytest.raises(ValueError):
        seed.CodePatch("nowhere")


def test_every_fault_kind_is_exercised_by_a_shipped_scenario():
    used = {fault.kind for path in shipped_scenarios() for fault in load(path).faults}
    assert used == {kind.id for kind in faults.FAULT_KINDS}
