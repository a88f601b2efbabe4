"""The comparison and the symptom matcher are pure: tested on hand-made captures and real lines."""

from faultlab import compare, symptoms
from faultlab.records import Capture, NodeCapture, PhaseEvent, RankCapture

HEALTHY_EVENTS = (
    PhaseEvent("start", 0.0), PhaseEvent("init_begin", 0.01), PhaseEvent("init_end", 0.05),
    PhaseEvent("all_reduce_begin", 0.06), PhaseEvent("all_reduce_end", 0.07), PhaseEvent("destroy_begin", 0.08),
    PhaseEvent("destroy_end", 0.09), PhaseEvent("exit", 0.1),
)


def rank(index, *, value=1.0, ending="exited", exit_code=0, events=HEALTHY_EVENTS, stderr="", end_t=0.1, node=None):
    return RankCapture(
        node=index // 2 if node is None else node, local_rank=index % 2, expected_rank=index, rank=index,
        pid=1000 + index, stdout=f"Rank {index}: {value}\n" if value is not None else "", stderr=stderr,
        events=events, ending=ending, exit_code=exit_code, value=value, end_t=end_t,
    )


def capture(ranks, hit_deadline=False, launcher_log=""):
    nodes = tuple(
        NodeCapture(node=n, node_rank=n, nnodes=2, nproc_per_node=2, master_port=29500, command="torchrun", network="", log=launcher_log if n == 0 else "",
                    exit_code=0, env={})
        for n in range(2)
    )
    return Capture(backend="gloo", world_size=len(ranks), timeout_s=5, deadline_s=6.5, hit_deadline=hit_deadline,
                   duration_s=1.0, network="test", program="", ranks=tuple(ranks), nodes=nodes)


BASELINE = capture([rank(i, value=6.0) for i in range(4)])


def judge(run):
    return compare.compare(run, symptoms.match_capture(run), BASELINE, symptoms.match_capture(BASELINE))


def test_expected_value_is_the_sum_of_ranks():
    assert compare.expected_value(4) == 6.0
    assert compare.expected_value(1) == 0.0


def test_baseline_against_itself_is_healthy():
    result = judge(BASELINE)
    assert result.verdict == "healthy"
    assert result.deviating_ranks == ()


def test_silent_wrong_result_flags_every_rank():
    result = judge(capture([rank(i, value=3.0) for i in range(4)]))
    assert result.verdict == "wrong-result"
    assert result.deviating_ranks == (0, 1, 2, 3)
    assert all("value 3 != 6" in delta.how for delta in result.deltas)


def test_a_crash_names_the_first_failure():
    stuck = HEALTHY_EVENTS[:4]
    ranks = [rank(0, value=None, exit_code=1, events=stuck + (PhaseEvent("error", 5.0), PhaseEvent("exit", 5.0)), end_t=5.0),
             rank(1, value=None, ending="torn_down", exit_code=-15, events=stuck, end_t=5.2),
             rank(2, value=6.0), rank(3, value=None, exit_code=1, events=stuck + (PhaseEvent("exit", 3.0),), end_t=3.0)]
    result = judge(capture(ranks))
    assert result.verdict == "crashed"
    assert result.first_failure.startswith("rank 3 (node 1) at 3.00s")
    assert result.deviating_ranks == (0, 1, 3)
    torn = result.deltas[1]
    assert torn.waiting_in == "all_reduce" and "torn down by the launcher while in all_reduce" in torn.how


def test_a_rank_alive_at_the_deadline_is_a_hang_with_its_wait():
    waiting = HEALTHY_EVENTS[:4]
    ranks = [rank(i, value=None, ending="killed_at_deadline", exit_code=-9, events=waiting, end_t=6.5) for i in range(4)]
    result = judge(capture(ranks, hit_deadline=True))
    assert result.verdict == "hung"
    assert result.deltas[0].waited_s == 6.44
    assert "hung in all_reduce for 6.4s" in result.deltas[0].how


def test_new_warnings_alone_give_warnings_only():
    warn = "[rank0]:[W1202 15:21:38.713067862 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources."
    result = judge(capture([rank(0, value=6.0, stderr=warn)] + [rank(i, value=6.0) for i in range(1, 4)]))
    assert result.verdict == "warnings-only"
    assert result.deltas[0].new_symptoms == ("destroy-not-called",)


def test_signatures_match_real_lines():
    cases = {
        "duplicate-gpu": "[rank0]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60",
        "invalid-device-ordinal": "[rank1]: torch.AcceleratorError: CUDA error: invalid device ordinal",
        "store-wait-timeout": "torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/3",
        "rendezvous-clients-timeout": "torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. 1/2 clients joined.",
        "client-connect-timeout": "[c10d] The client socket has timed out after 5000ms while trying to connect to (127.0.0.1, 33138).",
        "default-pg-twice": "[rank0]: ValueError: trying to initialize the default process group twice!",
        "store-recv-failed": "recvValue failed on SocketImpl(fd=3): Failed to recv, got 0 bytes. Connection was likely closed.",
    }
    for signature_id, line in cases.items():
        assert signature_id in symptoms.match_text(line), signature_id
    assert symptoms.match_text("Rank 0: 6.0\nall good") == {}


def test_representative_line_is_the_error_not_the_raise():
    text = (
        '[rank0]:     raise ValueError("trying to initialize the default process group twice!")\n'
        "[rank0]: ValueError: trying to initialize the default process group twice!\n"
    )
    line, count = symptoms.match_text(text)["default-pg-twice"]
    assert count == 2 and line.startswith("[rank0]: ValueError")


def test_every_signature_can_be_found_by_diagnose_and_names_known_causes():
    from faultlab.causes import CAUSES_BY_ID

    for signature in symptoms.SIGNATURES:
        assert signature.literals, f"{signature.id}: diagnose searches literals first and would never see it"
        assert set(signature.suggests) <= set(CAUSES_BY_ID), signature.id
