"""diagnose decides from facts around a line, not its wording alone: rules, side effects,
absence, cross-rank comparison, calibrated confidence; and the command's behaviour for scripts."""

import collections
import os

import pytest

from faultlab import cause_rules, diagnose, fact_tests
from faultlab.errors import ExitCode
from faultlab.symptoms import SIGNATURES_BY_ID


def _diagnose(tmp_path, text: str, name: str = "job.log"):
    (tmp_path / name).write_text(text)
    return diagnose.diagnose([tmp_path / name])


def test_every_rule_reads_a_known_signature_with_a_known_test():
    for rule in cause_rules.RULES:
        assert rule.signature in SIGNATURES_BY_ID and rule.when in fact_tests.FACT_TESTS, rule
        assert rule.why, rule


def test_set_device_of_the_global_rank_reads_as_rank_as_device_id(tmp_path):
    found = _diagnose(tmp_path, "[rank1]:     torch.cuda.set_device(rank)\n"
                                "[rank1]: torch.AcceleratorError: CUDA error: invalid device ordinal\n")
    assert found.causes[0].cause == "rank-as-device-id"
    found = _diagnose(tmp_path, "[rank1]:     torch.cuda.set_device(local_rank)\n"
                                "[rank1]: torch.AcceleratorError: CUDA error: invalid device ordinal\n")
    assert found.causes[0].cause == "too-few-gpus"
    # The global rank by any spelling; a rank modulo the device count is a local index.
    for global_rank in ("dist.get_rank()", 'int(os.environ["RANK"])', "args.rank"):
        found = _diagnose(tmp_path, f"[rank18]:     torch.cuda.set_device({global_rank})\n"
                                    "[rank18]: RuntimeError: CUDA error: invalid device ordinal\n")
        assert found.causes[0].cause == "rank-as-device-id", global_rank
    for global_rank in ('int(os.environ.get("RANK", 0))', '"cuda:%d" % args.rank', 'torch.device("cuda", dist.get_rank())'):
        found = _diagnose(tmp_path, f"[rank18]:     torch.cuda.set_device({global_rank})\n"
                                    "[rank18]: RuntimeError: CUDA error: invalid device ordinal\n")
        assert found.causes[0].cause == "rank-as-device-id", global_rank
    for local_index in ('int(os.environ["LOCAL_RANK"])', "rank % torch.cuda.device_count()",
                        'int(os.environ.get("LOCAL_RANK", 0))'):
        found = _diagnose(tmp_path, f"[rank1]:     torch.cuda.set_device({local_index})\n"
                                    "[rank1]: RuntimeError: CUDA error: invalid device ordinal\n")
        assert found.causes[0].cause == "too-few-gpus", local_index


def test_a_refused_loopback_address_is_an_interface_problem_not_a_port(tmp_path):
    refused_loopback = ("RuntimeError: Gloo connectFullMesh failed with [pair.cc:152] timed out connecting: "
                        "SO_ERROR: Connection refused, remote=[127.0.0.1]:41951 (rank=8, size=16, local=[127.0.0.1])\n")
    assert _diagnose(tmp_path, refused_loopback).causes[0].cause == "wrong-socket-interface"
    refused_master = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [10.1.2.3]:29501 "
                      "(errno: 111 - Connection refused).\n")
    assert _diagnose(tmp_path, refused_master).causes[0].cause == "wrong-master-port"


def test_a_name_that_does_not_resolve_is_a_wrong_master_addr(tmp_path):
    found = _diagnose(tmp_path, "[W socket.cpp:767] [c10d] The IPv6 network addresses of (job-7.internal, 50745) "
                                "cannot be retrieved (gai error: -2 - Name or service not known).\n")
    assert found.causes[0].cause == "wrong-master-addr"


def test_shm_create_out_of_space_differs_from_a_failed_attach(tmp_path):
    full = _diagnose(tmp_path, "host:1:2 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment "
                               "/dev/shm/nccl-WU88OE (size 9637888), error: No space left on device (28)\n")
    attach = _diagnose(tmp_path, "host:1:2 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory "
                                 "segment /dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)\n")
    assert full.causes[0].cause == "shm-exhausted" and full.unknown < 0.1
    assert attach.answers()[0] == diagnose.NOT_IN_CATALOG and attach.unknown > 0.5


def test_an_exit_warning_after_a_crash_never_outranks_the_crash(tmp_path):
    found = _diagnose(tmp_path, (
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        + "".join(f"[rank{r}]:[W ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called "
                  "before program exit, which can leak resources.\n" for r in range(4))))
    assert found.causes[0].cause == "rank-crash"
    assert [c.cause for c in found.causes].index("missing-destroy-process-group") > 0


def test_the_worker_the_launcher_did_not_terminate_is_the_culprit(tmp_path):
    found = _diagnose(tmp_path, "".join(
        f"W0219 09:17:03.837000 140066 torch/distributed/elastic/multiprocessing/api.py:858] Sending process {pid} "
        "closing signal SIGTERM\n" for pid in (2448006, 2448007, 2448009, 2448010)))
    assert found.culprit == 2 and "2448008" in found.culprit_reason


def test_a_failed_workers_exit_line_names_the_culprit(tmp_path):
    found = _diagnose(tmp_path, (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1167 closing signal SIGTERM\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 1168) of binary: py\n"))
    assert found.causes[0].cause == "rank-crash" and found.culprit == 1


def test_ranks_stuck_in_different_collectives_are_a_mismatch(tmp_path):
    line = ("[rank{r}]:[E ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 ms\n")
    agree = "".join(line.format(r=r, seq=5, op="ALLREDUCE") for r in range(4))
    disagree = "".join(line.format(r=r, seq=5 if r else 6, op="ALLREDUCE" if r else "BROADCAST") for r in range(4))
    assert _diagnose(tmp_path, agree).causes[0].cause == "straggler-rank"
    found = _diagnose(tmp_path, disagree)
    assert found.causes[0].cause == "collective-mismatch"
    assert any("disagree" in reason for reason in found.reasons)


def test_a_ranks_collective_cut_before_its_size_is_the_same_collective(tmp_path):
    # One rank's watchdog line whole, then again cut before NumelIn (a paste's edge, a wrapped "what():").
    line = ("[rank{r}]:[E ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for 600013 ms\n")
    cut = "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE\n"
    found = _diagnose(tmp_path, line.format(r=1, n=8) + cut + line.format(r=2, n=8))
    assert found.causes[0].cause == "straggler-rank"
    found = _diagnose(tmp_path, line.format(r=1, n=8) + cut + line.format(r=2, n=16))
    assert found.causes[0].cause == "collective-mismatch"  # the sizes rank 1's cut line left out are 8, not 16
    found = _diagnose(tmp_path, cut + line.format(r=1, n=8) + line.format(r=2, n=16))  # the cut line first
    assert found.causes[0].cause == "collective-mismatch"


def test_one_ambiguous_line_never_shows_certainty(tmp_path):
    for line in ("RuntimeError: CUDA error: invalid device ordinal", "Duplicate GPU detected : rank 1 and rank 0",
                 "RuntimeError: Address already in use", "NCCL WARN NET/IB : Got completion with error 12"):
        found = _diagnose(tmp_path, line + "\n")
        assert found.causes and found.causes[0].confidence <= 0.95 and found.unknown >= 0.05, line
        assert sum(c.confidence for c in found.causes) + found.unknown == pytest.approx(1, abs=0.01)


def test_a_name_that_does_not_resolve_yet_may_be_a_store_host_not_up(tmp_path):
    # On Kubernetes the master pod's name resolves only once that pod runs.
    found = _diagnose(tmp_path, "ValueError: host not found: Name or service not known\n")
    assert found.answers()[:2] == ("wrong-master-addr", "late-store-host")


def test_a_single_process_killed_or_out_of_memory_is_no_rank_crash(tmp_path):
    killed = ('  File "/usr/lib/python3/site-packages/accelerate/commands/launch.py", line 637, in simple_launcher\n'
              "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
              "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'train.py']' died with "
              "<Signals.SIGKILL: 9>.\n")
    found = _diagnose(tmp_path, killed)
    assert found.answers() == (diagnose.NOT_IN_CATALOG,) and "killed-by-signal" in found.outside
    # still so after more lines of sizes than a file keeps of them
    chatty = _diagnose(tmp_path, "world_size=1\n" * 8 + killed)
    assert chatty.answers() == (diagnose.NOT_IN_CATALOG,)
    alone = _diagnose(tmp_path, "torchrun --nnodes=1 --nproc_per_node=1 train.py\n"
                                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.\n")
    assert alone.answers() == (diagnose.NOT_IN_CATALOG,)
    # the same lines from one of several processes are a rank that crashed
    several = _diagnose(tmp_path, killed.replace(", in simple_launcher", ", in multi_gpu_launcher"))
    assert several.answers()[0] == "rank-crash"
    elastic = _diagnose(tmp_path, "torchrun --nnodes=1:4 --nproc_per_node=1 train.py\n"
                                  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.\n")
    assert elastic.answers()[0] == "rank-crash"
    two = _diagnose(tmp_path, "torchrun --nnodes=1 --nproc_per_node=2 train.py\n"
                              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.\n")
    assert two.answers()[0] == "rank-crash"


def test_a_bare_system_error_names_its_likeliest_causes_at_low_confidence(tmp_path):
    """Alone, NCCL's "unhandled system error" was /dev/shm or the interface in most public logs: those come
    first, each shown far from certain, and "not in the catalog" right behind them."""
    found = _diagnose(tmp_path, "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:272, unhandled system error\n")
    assert found.answers()[:3] == ("shm-exhausted", diagnose.NOT_IN_CATALOG, "wrong-socket-interface")
    assert found.causes[0].confidence < 0.35


def test_known_failures_outside_the_catalog_are_named_and_exit_1(tmp_path, cli):
    (tmp_path / "job.log").write_text("Test CUDA failure common.cu:1045 'CUDA driver version is insufficient for "
                                      "CUDA runtime version'\n")
    result = cli("diagnose", tmp_path / "job.log")
    assert result.exit_code == 1 and "outside the catalog" in result.output
    assert "Culprit" not in result.output  # no rank structure, no culprit section


def test_exit_codes_for_scripts(tmp_path, cli):
    (tmp_path / "found.log").write_text("RuntimeError: Address already in use\n")
    (tmp_path / "nothing.log").write_text("step 1\nstep 2\n")
    assert cli("diagnose", tmp_path / "found.log").exit_code == 0
    assert cli("diagnose", tmp_path / "nothing.log").exit_code == 1
    assert cli("diagnose", tmp_path / "nowhere.log").exit_code == ExitCode.BAD_INPUT
    assert "0 causes found; 1 no known signature" in cli("diagnose", "--help").output


def test_standard_input_is_read_with_a_dash_or_a_pipe(tmp_path, db):
    from click.testing import CliRunner

    from faultlab.cli import main

    runner = CliRunner()
    for args in (["diagnose", "-"], ["diagnose"]):
        result = runner.invoke(main, args, input="[rank3]: KeyError: 'LOCAL_RANK'\n")
        assert result.exit_code == 0, result.output
        assert "no-launcher" in result.output and "<stdin>:1 [rank 3]" in result.output


def test_diagnose_never_creates_the_store(tmp_path, cli, monkeypatch):
    store = tmp_path / "not-yet" / "deeper" / "faultlab.db"
    monkeypatch.setenv("FAULTLAB_DB", str(store))
    (tmp_path / "job.log").write_text("RuntimeError: Address already in use\n")
    from click.testing import CliRunner

    from faultlab.cli import main

    assert CliRunner().invoke(main, ["diagnose", str(tmp_path / "job.log")]).exit_code == 0
    assert not (tmp_path / "not-yet").exists()


def test_an_existing_store_is_read_without_writing(tmp_path, monkeypatch):
    from faultlab.store import Store

    path = tmp_path / "faultlab.db"
    Store(path).close()
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    os.chmod(path, 0o444)
    (tmp_path / "job.log").write_text("RuntimeError: Address already in use\n")
    found = diagnose.triage([tmp_path / "job.log"], path)
    assert found.causes[0].cause == "port-in-use"
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name != "job.log"} == before


def test_a_huge_line_is_cut_around_the_deciding_words(tmp_path, cli):
    (tmp_path / "job.log").write_text("x" * 50_000 + " RuntimeError: Address already in use " + "y" * 50_000 + "\n")
    result = cli("diagnose", tmp_path / "job.log")
    shown = next(line for line in result.output.splitlines() if "Address already in use" in line)
    assert len(shown) < 500 and "…" in shown


def test_the_rank_whose_store_key_never_came_is_the_culprit(tmp_path):
    found = _diagnose(tmp_path, "".join(
        f"[rank{r}]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cuda//0/2\n"
        for r in (0, 1, 3)))
    assert found.culprit == 2 and "rank 2's key" in found.culprit_reason and found.victims == (0, 1, 3)


def test_the_one_rank_that_never_reported_waiting_is_the_culprit(tmp_path):
    found = _diagnose(tmp_path, "".join(
        f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 milliseconds\n" for r in (1, 2, 3)))
    assert found.culprit == 0 and found.victims == (1, 2, 3) and "rank 0 alone" in found.culprit_reason


def test_a_healthy_run_directory_has_no_culprit_section(tmp_path, cli):
    for rank in range(4):
        (tmp_path / f"node{rank // 2}-local{rank % 2}-rank{rank}.stdout").write_text(f"Rank {rank}: 6.0\n")
    result = cli("diagnose", tmp_path)
    assert result.exit_code == 1 and "No known signature, and no error line." in result.output
    assert "Culprit" not in result.output and "Silent" not in result.output


def test_a_launcher_hung_up_on_is_outside_the_catalog_and_says_why(tmp_path, cli):
    (tmp_path / "train.log").write_text(
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 1\n")
    result = cli("diagnose", tmp_path / "train.log")
    assert result.exit_code == 1 and "outside the catalog" in result.output
    assert "the launcher got SIGHUP: the terminal or ssh session that started it closed" in result.output
    (tmp_path / "train.log").write_text(
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 15\n")
    assert not diagnose.diagnose([tmp_path / "train.log"]).outside  # SIGTERM: a deadline or a preemption of a hang


def test_no_space_left_is_weighed_by_the_file_system_it_names(tmp_path):
    bare = _diagnose(tmp_path, "OSError: [Errno 28] No space left on device\n")
    assert bare.answers()[:2] == (diagnose.NOT_IN_CATALOG, "shm-exhausted") and bare.causes[0].confidence <= 0.35
    shm = _diagnose(tmp_path, "OSError: [Errno 28] No space left on device: '/dev/shm/torch_2231_0'\n")
    assert shm.answers()[0] == "shm-exhausted" and shm.unknown < 0.15
    told_by_context = _diagnose(tmp_path, "shm   64M   64M     0 100% /dev/shm\n"
                                          "OSError: [Errno 28] No space left on device\n")
    assert told_by_context.answers()[0] == "shm-exhausted"
    disk = _diagnose(tmp_path, "OSError: [Errno 28] No space left on device: '/data/ckpt/step_400/model.pt'\n")
    assert disk.answers()[0] == diagnose.NOT_IN_CATALOG and disk.outside


def test_side_effects_of_a_link_failure_never_outrank_it(tmp_path):
    found = _diagnose(tmp_path, (
        "node3:41:77 [2] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"
        + "".join(f"[rank{r}]:[E ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
                  "WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 ms\n"
                  f"[rank{r}]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed "
                  "before we destruct ProcessGroupNCCL.\n" for r in range(4))
        + "W0101 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 70 closing signal SIGTERM\n"))
    assert found.causes[0].cause == "link-down"
    assert [c.cause for c in found.causes].index("missing-destroy-process-group") > 0


def test_a_store_refused_at_a_loopback_is_the_master_address_unless_the_job_is_one_node(tmp_path):
    line = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 "
            "(errno: 111 - Connection refused).\n")
    several = _diagnose(tmp_path, "torchrun --nnodes=2 --nproc_per_node=8 train.py\n" + line)
    assert several.answers()[:2] == ("wrong-master-addr", "wrong-socket-interface")
    one = _diagnose(tmp_path, "torchrun --nnodes=1 --nproc_per_node=8 train.py\n" + line)
    assert one.answers()[0] == "wrong-master-port"


def test_a_failing_rank_past_one_nodes_processes_used_its_global_rank(tmp_path):
    found = _diagnose(tmp_path, "torchrun --nproc_per_node=4 train.py\n"
                                "[rank6]: RuntimeError: CUDA error: invalid device ordinal\n")
    assert found.causes[0].cause == "rank-as-device-id"
    found = _diagnose(tmp_path, "torchrun --nproc_per_node=8 train.py\n"
                                "[rank6]: RuntimeError: CUDA error: invalid device ordinal\n")
    assert found.causes[0].cause == "too-few-gpus"


def test_drills_in_the_store_add_causes_but_never_reorder_the_catalogs(tmp_path):
    # A store where one scenario's run was repeated: a new user's `make run`, many times over.
    log = tmp_path / "job.log"
    log.write_text("[rank0]: torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /default_pg/0//cpu//0/3\n")
    plain = diagnose.diagnose([log]).causes
    learned = {"store-wait-timeout": collections.Counter({"wrong-master-port": 50, "firewall": 3})}
    with_store = diagnose.diagnose([log], learned).causes
    assert [c.cause for c in with_store][:len(plain)] == [c.cause for c in plain]
    assert "firewall" in [c.cause for c in with_store]


def test_a_keyerror_message_without_its_prefix_reads_as_a_missing_launcher_variable(tmp_path):
    found = _diagnose(tmp_path, "'LOCAL_RANK'\n\nDuring handling of the above exception, another exception occurred:\n"
                                '    th.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n')
    assert found.causes[0].cause == "no-launcher"


def test_ranks_stopped_in_a_main_process_barrier_read_as_a_late_rank_0(tmp_path):
    found = _diagnose(tmp_path, '    with training_args.main_process_first(desc="dataset map tokenization"):\n'
                                '  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__\n')
    assert found.causes[0].cause == "straggler-rank"
    assert found.causes[0].confidence < 0.9


def test_nccls_bootstrap_names_the_rank_whose_unique_id_never_came(tmp_path):
    found = _diagnose(tmp_path, "[7] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
                                "key-value store by key '0', but store->get('0') got error: Socket Timeout\n")
    assert found.culprit == 0


def test_nccls_own_connect_reads_as_the_advertised_interface_not_master_addr(tmp_path):
    found = _diagnose(tmp_path, "ncclSystemError: System call (e.g. socket, malloc) or external library call failed\n"
                                "socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host\n")
    assert found.causes[0].cause == "wrong-socket-interface"
    assert "wrong-master-addr" != found.causes[1].cause
    found = _diagnose(tmp_path, "socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort\n")
    assert found.causes[0].cause == "wrong-socket-interface"
    found = _diagnose(tmp_path, "[rank1]: torch.distributed.DistNetworkError: The client socket has failed to connect to "
                                "[10.0.0.9]:29500 (errno: 113 - No route to host).\n")
    assert found.causes[0].cause == "wrong-master-addr"


def test_nccls_polled_connect_is_its_own_and_a_link_local_peer_is_the_interface(tmp_path):
    # NCCL >= 2.19 words its dial of a peer's advertised address this way; the store is not involved.
    found = _diagnose(tmp_path, "node1:1:2 [0] NCCL INFO socketPollConnect: Connect to 10.0.0.4<56849> returned "
                                "113(No route to host) errno 115(Operation now in progress)\n")
    assert found.causes[0].cause == "wrong-socket-interface"
    assert "wrong-master-addr" not in [cause.cause for cause in found.causes[:2]]
    # 169.254/16 is valid on its own link only: the peer advertised an interface no other host reaches.
    found = _diagnose(tmp_path, "NET/Socket : Using [0]enp73s0:10.1.216.156<0> [1]pod-id-link0:169.254.170.23<0>\n"
                                "socketPollConnect: connect to 169.254.170.23<...> returned Connection refused, "
                                "retrying (13/34)\n")
    assert [cause.cause for cause in found.causes[:2]] == ["wrong-socket-interface", "firewall"]
    assert found.causes[0].confidence > 0.5
    # NCCL retries while its peer starts listening: Init COMPLETE after the retry says it got through.
    found = _diagnose(tmp_path, "node1:1:2 [0] NCCL INFO socketPollConnect: connect to 10.0.0.4<5000> returned "
                                "Connection refused, retrying (1/34)\nnode1:1:2 [0] NCCL INFO comm 0x55 rank 1 nranks 2 "
                                "cudaDev 0 busId 1000 commId 0x1 - Init COMPLETE\n")
    assert found.unknown > 0.8


def test_the_first_process_of_a_later_node_refused_its_device_used_the_global_rank(tmp_path):
    ordinal = "[rank{r}]: torch.AcceleratorError: CUDA error: invalid device ordinal\n"
    for path, first in (("node1-local0-rank1.stderr", "rank-as-device-id"), ("node0-local1-rank1.stderr", "too-few-gpus")):
        found = _diagnose(tmp_path, ordinal.format(r=1), name=path)
        assert found.causes[0].cause == first, (path, found.causes)
        (tmp_path / path).unlink()


def test_torchs_desync_report_and_the_monitored_barrier_name_the_rank_waited_for(tmp_path):
    desync = ("[rank0]:[E ProcessGroupNCCL.cpp:577] [Rank 0] Watchdog caught collective operation timeout: "
              "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
              "milliseconds before timing out.\n"
              "[rank0]:\t - To our best knowledge, ranks [3] are the lagging ranks that caused this timeout. "
              "They never joined any collectives\n")
    found = _diagnose(tmp_path, desync)
    assert found.causes[0].cause == "straggler-rank" and found.culprit == 3
    barrier = ("RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
               "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n")
    assert _diagnose(tmp_path, barrier).culprit == 0


def test_an_ssh_refusal_is_the_launchers_ssh_not_the_store(tmp_path):
    found = _diagnose(tmp_path, "ssh: connect to host worker-1 port 22: Connection refused\n")
    assert not found.causes and found.outside == ("ssh-unreachable",)


def test_every_rank_of_two_hosts_timing_out_is_the_link_one_absent_rank_is_late(tmp_path):
    timeout = "[rank{r}]: RuntimeError: [unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete\n"
    for r in range(4):
        (tmp_path / f"node{r // 2}-local{r % 2}-rank{r}.stderr").write_text(timeout.format(r=r))
    assert diagnose.diagnose([tmp_path]).causes[0].cause == "link-down"
    for r in (2, 3):  # one node: nobody absent and no link crossed, so they wait in collectives that cannot meet
        (tmp_path / f"node1-local{r % 2}-rank{r}.stderr").unlink()
    assert diagnose.diagnose([tmp_path]).causes[0].cause == "collective-mismatch"
    for r in (2, 3):
        (tmp_path / f"node1-local{r % 2}-rank{r}.stderr").write_text(timeout.format(r=r))
    (tmp_path / "node0-local0-rank0.stderr").unlink()
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "straggler-rank" and found.culprit == 0


def test_ranks_whose_own_progress_lines_disagree_on_the_epoch_ran_different_numbers_of_steps(tmp_path):
    line = "[2022-04-26 13:57:20,757][INFO][train_epoch]:Rank:{r} Epoch:[{e}][20384/all] Loss 0.3403(0.3792)\n"
    found = _diagnose(tmp_path, line.format(r=1, e=48) + line.format(r=0, e=49) + line.format(r=3, e=49))
    assert found.causes[0].cause == "collective-mismatch"
    found = _diagnose(tmp_path, "[rank0]: epoch 3 step 120 loss 0.5\n[rank1]: epoch 2 step 120 loss 0.6\n")
    assert found.causes[0].cause == "collective-mismatch"
    # A step count that restarts each epoch: every rank passes step 10 in every epoch, in step with the others.
    healthy = "".join(f"Rank {r} | Epoch {e} | Iter [10/50] loss 0.4\n" for e in (1, 2) for r in (0, 1))
    assert not _diagnose(tmp_path, healthy).causes
    # One rank's lines alone, or two ranks at different steps, compare nothing.
    assert not _diagnose(tmp_path, "rank 0 epoch 1 step 10\nrank 0 epoch 2 step 10\n").causes
    assert not _diagnose(tmp_path, "rank 0 epoch 2 step 10\nrank 1 epoch 1 step 90\n").causes
    # A rank that is a value, not the line's label, is no process's rank.
    for value in ("Epoch 3 [100/500] loss 0.41 median rank 12\nEpoch 4 [100/500] loss 0.38 median rank 10\n",
                  "lora rank 8, epoch 1 step 50\nlora rank 16, epoch 2 step 50\n"):
        assert not _diagnose(tmp_path, value).causes, value


def test_a_bare_bind_failure_reads_as_a_leftover_or_another_job_not_a_second_node_0(tmp_path):
    found = _diagnose(tmp_path, "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
                                "local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, "
                                "message: address already in use\n")
    assert [cause.cause for cause in found.causes] == ["port-in-use", "shared-master-port"]


def test_a_bind_failure_while_the_store_host_waits_for_clients_is_a_second_node_0(tmp_path):
    (tmp_path / "node0.launcher.log").write_text(
        "torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. 1/2 clients joined.\n")
    (tmp_path / "node1.launcher.log").write_text(
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 45763, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "duplicate-node-rank" and found.culprit_node == 1


def test_a_peer_that_left_without_any_error_skipped_the_collective_one_killed_crashed(tmp_path):
    closed = ("[rank{r}]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:16291. This is typically "
              "caused by a remote worker crashing.\n")
    for r in range(3):
        (tmp_path / f"node0-local{r}-rank{r}.stderr").write_text(closed.format(r=r))
    (tmp_path / "node0-local3-rank3.stdout").write_text("Rank 3: 3.0\n")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "collective-mismatch" and found.culprit == 3
    (tmp_path / "node0.launcher.log").write_text("failed (exitcode: -9) local_rank: 3 (pid: 311) of binary: python\n")
    assert diagnose.diagnose([tmp_path]).causes[0].cause == "rank-crash"


def test_peers_lost_while_the_store_host_wrote_nothing_is_the_store_host_gone(tmp_path):
    closed = ("[rank{r}]: RuntimeError: [pair.cc:553] Connection closed by peer [172.31.213.1]:9634. This is "
              "typically caused by a remote worker crashing.\n")
    for r in range(4):
        (tmp_path / f"node{r // 2}-local{r % 2}-rank{r}.stderr").write_text(closed.format(r=r) if r >= 2 else "")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "store-host-lost" and found.culprit_node == 0


STOPPED = ("W1203 08:43:37.090000 15637 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
           "shutting down workers\n"
           "W1203 08:43:37.091000 15637 torch/distributed/elastic/multiprocessing/api.py:871] Closing process 15641 via "
           "signal SIGTERM\n"
           "torch.distributed.elastic.multiprocessing.api.SignalException: Process 15637 got signal: 15\n")


def test_a_job_stopped_from_outside_with_no_error_before_it_had_hung(tmp_path):
    """No rank's error, then the launcher signalled (a time limit, Ctrl-C): a hang. Not in the catalog stays first
    (nothing says which hang), the network and a late rank follow, and the reason is said."""
    (tmp_path / "node0.launcher.log").write_text(STOPPED)
    found = diagnose.diagnose([tmp_path])
    assert found.answers()[:3] == (diagnose.NOT_IN_CATALOG, "firewall", "straggler-rank"), found.answers()
    assert any("stopped from outside: the job hung" in reason for reason in found.reasons)


TORN_DOWN = "".join(f"W0720 21:25:13.524000 140546 torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
                    f"{pid} closing signal SIGTERM\n" for pid in (20360, 20361, 20363))
ROOT_CAUSE = "training FAILED\nRoot Cause (first observed failure):\n"
TEARDOWN_READING = next(rule.why for rule in cause_rules.RULES if rule.signature == "worker-torn-down")


def test_a_teardown_whose_cause_the_log_lost_is_a_rank_that_died(tmp_path):
    """torchrun signalled all workers but one (pid 20362) and the paste ends before that one's error: it died."""
    found = _diagnose(tmp_path, TORN_DOWN + ROOT_CAUSE)
    assert found.answers()[:2] == ("rank-crash", diagnose.NOT_IN_CATALOG)
    assert TEARDOWN_READING in found.reasons


@pytest.mark.parametrize("why", [
    STOPPED,  # the launcher was stopped from outside: a hang, not a death
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 2 (pid: 20362)\n",
    "[W api.py:699] [default] Detected 1 new nodes from group_rank=0; will restart worker group\n",
    "[default1]:KeyError: 'input_ids'\n",  # the worker's own error, behind torchrun's --tee label
])
def test_a_teardown_with_its_reason_in_the_log_is_read_by_that_reason(tmp_path, why):
    found = _diagnose(tmp_path, TORN_DOWN + why + ROOT_CAUSE)
    assert TEARDOWN_READING not in found.reasons, found.answers()


def test_a_teardown_of_every_worker_spares_none_that_died(tmp_path):
    every = TORN_DOWN.replace("20363", "20362")  # 20360-20362: no worker spared (DeepSpeed, a restart)
    assert _diagnose(tmp_path, every + ROOT_CAUSE).answers() == (diagnose.NOT_IN_CATALOG,)


def test_a_teardown_in_a_markdown_code_block_reads_the_workers_error(tmp_path):
    block = "".join(f"    {line}\n" for line in (TORN_DOWN + "KeyError: 'input_ids'\n").splitlines())
    found = _diagnose(tmp_path, block)
    assert TEARDOWN_READING not in found.reasons, found.answers()


WINDOWS_LAUNCHER = (
    'W1021 19:21:30.531000 10520 torch\\distributed\\elastic\\multiprocessing\\redirects.py:28] NOTE: Redirects are '
    'currently not supported in Windows or MacOs.\n'
    'Traceback (most recent call last):\n'
    '  File "C:\\Users\\user\\env\\lib\\site-packages\\torch\\distributed\\run.py", line 892, in run\n'
    '    elastic_launch(\n'
    '  File "C:\\Users\\user\\env\\lib\\site-packages\\torch\\distributed\\launcher\\api.py", line 138, in __call__\n'
    '    return launch_agent(self._config,\n')


@pytest.mark.parametrize("frame", [
    "",
    '  File "F:\\envs\\lf\\Scripts\\torchrun.exe\\__main__.py", line 7, in <module>\n',
    '  File "E:\\env\\lib\\site-packages\\accelerate\\commands\\launch.py", line 734, in multi_gpu_launcher\n',
])
def test_torchruns_own_trace_on_windows_cut_before_its_error_is_the_store_backend(tmp_path, frame):
    """Windows builds of torch >= 2.4 lack libuv, which torchrun's store asks for before any worker starts."""
    text = WINDOWS_LAUNCHER if not frame else "Traceback (most recent call last):\n" + frame
    found = _diagnose(tmp_path, text)
    assert found.answers()[:2] == ("store-backend-unavailable", diagnose.NOT_IN_CATALOG)


@pytest.mark.parametrize("after", [
    "RuntimeError: Distributed package doesn't have NCCL built in\n",  # a worker's own failure decides
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 9412) of binary: "
    "C:\\env\\python.exe\n",  # a worker started and failed
    "W1021 19:22:01.1 10520 torch\\distributed\\elastic\\agent\\server\\api.py:704] Received Signals.SIGINT death "
    "signal, shutting down workers\n",  # stopped from outside
    "KeyboardInterrupt\n",
    '  File "C:\\env\\lib\\site-packages\\accelerate\\commands\\launch.py", line 637, in simple_launcher\n',  # one process
])
def test_torchruns_own_trace_on_windows_with_more_said_is_read_by_that(tmp_path, after):
    found = _diagnose(tmp_path, WINDOWS_LAUNCHER + after)
    assert "store-backend-unavailable" not in found.answers()[:1], found.answers()


def test_the_same_launcher_trace_off_windows_says_nothing(tmp_path):
    assert _diagnose(tmp_path, WINDOWS_LAUNCHER.replace("\\", "/")).answers() == (diagnose.NOT_IN_CATALOG,)


def test_a_bootstrap_error_after_the_communicator_was_complete_is_a_lost_peer(tmp_path):
    """NCCL < 2.12 returns a system error through its bootstrap when a peer closes its socket mid-job."""
    trace = ("node1:2330:2658 [2] NCCL INFO misc/socket.cc:538 -> 2\n"
             "node1:2330:2658 [2] NCCL INFO bootstrap.cc:401 -> 2\n")
    assert _diagnose(tmp_path, trace).answers()[0] == "wrong-socket-interface"
    complete = "node1:2330:2330 [2] NCCL INFO comm 0x55d0 rank 2 nranks 4 cudaDev 2 busId 3b000 - Init COMPLETE\n"
    found = _diagnose(tmp_path, complete + trace)
    assert found.answers() == (diagnose.NOT_IN_CATALOG,)
    assert any("echo of a peer lost later" in reason for reason in found.reasons)


def test_a_job_stopped_after_an_error_of_its_own_is_read_by_that_error(tmp_path):
    (tmp_path / "node0.launcher.log").write_text(STOPPED)
    (tmp_path / "rank1.log").write_text("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    found = diagnose.diagnose([tmp_path])
    assert "firewall" not in found.answers()
    assert not any("stopped from outside" in reason for reason in found.reasons)


def _py_spy_dump(pid: int, main_frames: list[str]) -> str:
    """What `py-spy dump --pid PID` prints of a training process: its main thread and a pin-memory thread."""
    return "\n".join([
        f"Process {pid}: /usr/bin/python3 -u train.py", "Python v3.10.12 (/usr/bin/python3.10)", "",
        f'Thread {pid} (idle): "MainThread"', *(f"    {frame}" for frame in main_frames), "",
        f'Thread {pid + 40} (idle): "Thread-2 (_pin_memory_loop)"',
        "    wait (threading.py:324)", "    get (queue.py:180)",
        "    do_one_step (torch/utils/data/_utils/pin_memory.py:31)",
        "    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:54)", "    run (threading.py:953)", "", ""])


IN_ALL_REDUCE = ["all_reduce (torch/distributed/distributed_c10d.py:2501)", "wrapper (torch/distributed/c10d_logger.py:83)",
                 "train_step (train.py:88)", "<module> (train.py:120)"]
WAITING_FOR_DATA = ["wait (threading.py:324)", "get (queue.py:180)", "_try_get_data (torch/utils/data/dataloader.py:1133)",
                    "_get_data (torch/utils/data/dataloader.py:1294)", "_next_data (torch/utils/data/dataloader.py:1332)",
                    "__next__ (torch/utils/data/dataloader.py:631)", "train (train.py:80)", "<module> (train.py:120)"]


def test_py_spy_stacks_name_the_main_thread_that_waits_outside_the_collective(tmp_path):
    """Three ranks' main threads wait in all_reduce, one waits for its data: that rank holds them.
    Every process's pin-memory thread also waits on a queue, which says nothing."""
    one_apart = _diagnose(tmp_path, "".join(_py_spy_dump(1000 + rank, WAITING_FOR_DATA if rank == 2 else IN_ALL_REDUCE)
                                            for rank in range(4)))
    assert one_apart.causes[0].cause == "frozen-rank" and one_apart.unknown < 0.2
    assert any('Thread 1002 (idle): "MainThread"' in item.line for item in one_apart.evidence)
    all_inside = _diagnose(tmp_path, "".join(_py_spy_dump(1000 + rank, IN_ALL_REDUCE) for rank in range(4)))
    assert all_inside.unknown > 0.7  # every main thread is in the collective: the stacks do not say who holds it


def test_py_spy_stacks_of_helpers_and_nameless_threads_are_read_for_what_they_are(tmp_path):
    """mp.spawn's parent and DataLoader workers wait by design: they hold nobody. A thread py-spy could
    not name still begins a stack of its own, so its frames are not the main thread's."""
    spawn_parent = _py_spy_dump(900, ["select (selectors.py:416)", "wait (multiprocessing/connection.py:936)",
                                      "join (torch/multiprocessing/spawn.py:118)", "start_processes (torch/multiprocessing/spawn.py:202)",
                                      "<module> (train.py:130)"])
    data_worker = _py_spy_dump(950, ["get (multiprocessing/queues.py:113)",
                                     "_worker_loop (torch/utils/data/_utils/worker.py:275)", "run (multiprocessing/process.py:108)"])
    ranks = "".join(_py_spy_dump(1000 + rank, IN_ALL_REDUCE) for rank in range(4))
    assert _diagnose(tmp_path, spawn_parent + data_worker + ranks).unknown > 0.7
    nameless = "\n".join(['Thread 1047 (idle)', *(f"    {frame}" for frame in IN_ALL_REDUCE), "", ""])
    dumps = "".join(_py_spy_dump(1000 + rank, IN_ALL_REDUCE) if rank != 2 else
                    _py_spy_dump(1002, WAITING_FOR_DATA).replace('Thread 1042 (idle): "Thread-2', nameless + 'Thread 1042 (idle): "Thread-2')
                    for rank in range(4))
    assert 'Thread 1047 (idle)\n' in dumps
    assert _diagnose(tmp_path, dumps).causes[0].cause == "frozen-rank"


def test_py_spy_stacks_in_different_collectives_read_as_a_mismatch(tmp_path):
    """One rank waits in broadcast while the others wait in all_reduce: whole dumps, or fragments of them
    pasted without their headers (broadcast_object_list's own broadcast is one call, not two)."""
    in_broadcast = ["broadcast (torch/distributed/distributed_c10d.py:2974)", "wrapper (torch/distributed/c10d_logger.py:83)",
                    "broadcast_object_list (torch/distributed/distributed_c10d.py:3320)", "sync_config (train.py:60)"]
    dumps = "".join(_py_spy_dump(1000 + rank, in_broadcast if rank == 3 else IN_ALL_REDUCE) for rank in range(4))
    assert _diagnose(tmp_path, dumps).causes[0].cause == "collective-mismatch"
    fragments = "\n".join(IN_ALL_REDUCE + ["  " + frame for frame in in_broadcast]) + "\n"
    assert _diagnose(tmp_path, fragments).causes[0].cause == "collective-mismatch"
    one_call = "\n".join(in_broadcast) + "\n"
    assert not _diagnose(tmp_path, one_call).causes
    # A pipeline's stages wait in send and recv at once.
    pipeline = "".join(_py_spy_dump(1000 + rank, [f"{call} (torch/distributed/distributed_c10d.py:2100)",
                                                  "send_forward (pipeline.py:40)", "<module> (train.py:120)"])
                       for rank, call in enumerate(("send", "recv")))
    assert "collective-mismatch" not in _diagnose(tmp_path, pipeline).answers()


def test_a_store_connect_that_timed_out_is_read_by_where_it_went(tmp_path):
    """No answer from a remote store is a drop (a firewall, an address where no host is); at a loopback
    the host is up and nothing lies between, so torch was retrying refusals: nothing listened on that port."""
    def timed_out(host: str, before: str = "") -> str:
        return before + ("[E1203 08:44:01.551215399 socket.cpp:1028] [c10d] The client socket has timed out after "
                         f"5000ms while trying to connect to ({host}, 29500).\n")
    assert _diagnose(tmp_path, timed_out("10.20.0.7")).answers()[:2] == ("firewall", "wrong-master-addr")
    assert _diagnose(tmp_path, timed_out("127.0.0.1")).causes[0].cause == "wrong-master-port"
    several_nodes = timed_out("127.0.0.1", "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 train.py\n")
    assert _diagnose(tmp_path, several_nodes).causes[0].cause == "wrong-master-addr"
    # torchrun's warning that localhost over IPv6 failed is not where the store connect timed out.
    ipv6_first = timed_out("10.20.0.7", "[W socket.cpp:697] [c10d] The client socket has failed to connect to "
                                        "[localhost]:29400 (errno: 99 - Cannot assign requested address).\n")
    assert _diagnose(tmp_path, ipv6_first).causes[0].cause == "firewall"


def test_under_slurm_one_process_of_several_announcing_itself_is_a_missing_srun(tmp_path):
    started = ("Multi-processing is handled by Slurm.\n"
               "GPU available: True, used: True\n"
               "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n")
    assert _diagnose(tmp_path, started).answers()[0] == "no-launcher"
    # Every process of the world announced itself: srun started them all, and the hang is something else.
    everyone = started + "".join(f"initializing ddp: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/8\n" for rank in range(1, 8))
    assert "no-launcher" not in _diagnose(tmp_path, everyone).answers()
    # Outside SLURM one announcement is one node's share, not a missing launcher.
    assert "no-launcher" not in _diagnose(tmp_path, started.replace("Multi-processing is handled by Slurm.\n", "")).answers()


def test_the_ranks_a_trainer_announced_beside_its_visible_devices_tell_too_few_gpus(tmp_path):
    log = ("LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n"
           "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2\n"
           "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/2\n"
           "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, invalid usage\n")
    assert _diagnose(tmp_path, log).answers()[0] == "too-few-gpus"
    # As many devices as ranks: the line alone again, where a missing set_device is the likelier reading.
    answers = _diagnose(tmp_path, log.replace("[0]", "[0, 1]")).answers()
    assert answers.index("missing-set-device") < answers.index("too-few-gpus")


def test_visible_devices_named_by_physical_ids_leave_an_invalid_ordinal_open(tmp_path):
    """CUDA_VISIBLE_DEVICES=6,7 numbers the two devices 0 and 1 inside the process: an index taken from the
    physical ids fails as surely as a rank past the devices, and only the second is in the catalog."""
    log = ("INFO:lightning:VISIBLE GPUS: 6,7\n"
           "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid device ordinal\n")
    answers = _diagnose(tmp_path, log).answers()
    assert answers[0] == diagnose.NOT_IN_CATALOG and "too-few-gpus" in answers[:3]
    assert _diagnose(tmp_path, log.replace("6,7", "0,1")).answers()[0] == "too-few-gpus"
    assert _diagnose(tmp_path, log.replace("INFO:lightning:VISIBLE GPUS: 6,7", "CUDA_VISIBLE_DEVICES=6,7")
                     ).answers()[0] == diagnose.NOT_IN_CATALOG
    # An index known to be none of the listed ids, past their count: too many ranks, not an id.
    assert _diagnose(tmp_path, "CUDA_VISIBLE_DEVICES=4,5,6\n[ERROR] SetDevice for id:7 failed, ret[101], invalid device "
                               "ordinal.\n").answers()[0] == "too-few-gpus"


def test_a_trace_through_set_device_that_ends_in_another_error_is_read_by_that_error(tmp_path):
    trace = ('  File "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", line 404, in set_device\n'
             '    torch._C._cuda_setDevice(device)\n')
    assert _diagnose(tmp_path, trace + "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable\n"
                     ).answers()[0] == "missing-set-device"
    assert _diagnose(tmp_path, trace).answers()[0] == "too-few-gpus"


def test_a_store_host_that_wrote_nothing_until_the_others_gave_up_came_up_late(tmp_path):
    """Each node's log: node 0 (the store's host) said its first word only after node 1 had given up
    dialing its store. Started in time, its store would have been there; the clocks tell which node was late."""
    timed_out = ("[E1203 09:43:{:02d}.311403410 socket.cpp:1028] [c10d] The client socket has timed out after 5000ms "
                 "while trying to connect to (172.31.213.1, 29500).\n")
    node0_first = "[W1203 09:43:{:02d}.556775962 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
    for node0_at, late in ((51, True), (30, False)):
        run = tmp_path / str(node0_at)
        run.mkdir()
        (run / "node1.launcher.log").write_text(timed_out.format(40) + timed_out.format(47))
        (run / "node0.launcher.log").write_text(node0_first.format(node0_at) + "Traceback (most recent call last):\n")
        found = diagnose.diagnose([run])
        assert (found.answers()[0] == "late-store-host") is late, found.answers()
        assert ("only after the others had given up" in found.culprit_reason) is late, found.culprit_reason
    # A store host whose first stamped word is that it waited 30 s for clients was up before node 1 gave up.
    waited = tmp_path / "waited"
    waited.mkdir()
    (waited / "node1.launcher.log").write_text(timed_out.format(40) + timed_out.format(47))
    (waited / "node0.launcher.log").write_text(
        "[E1203 09:43:55.000000000 TCPStore.cpp:120] torch.distributed.DistStoreError: Timed out after 30 seconds "
        "waiting for clients. 1/2 clients joined.\n")
    assert diagnose.diagnose([waited]).answers()[0] != "late-store-host"


def test_nodes_that_ran_different_numbers_of_ranks_disagree_on_the_job(tmp_path):
    """A run directory whose nodes hold different numbers of ranks' files: one node's launcher was given
    another --nproc_per_node. The job may even finish, on a world of another size than meant."""
    run = tmp_path / "run"
    (run / "ranks").mkdir(parents=True)
    for node, local, rank in ((0, 0, 0), (0, 1, 1), (1, 0, 2)):
        (run / "ranks" / f"node{node}-local{local}-rank{rank}.stdout").write_text(f"Rank {rank}: 3.0\n")
    found = diagnose.diagnose([run])
    assert found.answers()[0] == "world-size-mismatch" and found.culprit_node == 1, (found.answers(), found.culprit_node)
    (run / "ranks" / "node1-local1-rank3.stdout").write_text("Rank 3: 4.0\n")
    assert "world-size-mismatch" not in diagnose.diagnose([run]).answers()
    # Of three nodes, the one whose count differs from the other two's, more or fewer.
    three = tmp_path / "three"
    (three / "ranks").mkdir(parents=True)
    for node, locals_ in ((0, 2), (1, 2), (2, 3)):
        for local in range(locals_):
            (three / "ranks" / f"node{node}-local{local}.stdout").write_text("Rank: 7.0\n")
    found = diagnose.diagnose([three])
    assert found.answers()[0] == "world-size-mismatch" and found.culprit_node == 2, (found.answers(), found.culprit_node)


def test_a_store_the_other_nodes_could_not_reach_through_a_firewall_names_the_store_host(tmp_path):
    """Node 1 logs the failed connects, but a firewall dropping them, like a store host that came up late, lies
    with the store's host: node 0 is where to look. A wrong MASTER_ADDR lies with the node that dialed it."""
    timed_out = ("[E1203 09:43:{:02d}.311403410 socket.cpp:1028] [c10d] The client socket has timed out after 5000ms "
                 "while trying to connect to (172.31.213.1, 29500).\n")
    (tmp_path / "node1.launcher.log").write_text(timed_out.format(40) + timed_out.format(47))
    (tmp_path / "node0.launcher.log").write_text("torch.distributed.DistStoreError: Timed out after 30 seconds waiting "
                                                 "for clients. 1/2 clients joined.\n")
    found = diagnose.diagnose([tmp_path])
    assert found.answers()[0] == "firewall" and found.culprit_node == 0, (found.answers(), found.culprit_node)
    (tmp_path / "node1.launcher.log").write_text(
        "[rank2]: torch.distributed.DistNetworkError: The client socket has failed to connect to any network address "
        "of (gpu-node-0, 29500).\ngaierror: [Errno -2] Name or service not known\n")
    found = diagnose.diagnose([tmp_path])
    assert found.answers()[0] == "wrong-master-addr" and found.culprit_node == 1, (found.answers(), found.culprit_node)


def test_rank_0_named_without_files_of_its_own_is_on_node_0(tmp_path):
    """Launchers number ranks node by node, node 0's first: the rank the others waited for, 0, is node 0's."""
    (tmp_path / "node1.launcher.log").write_text(
        "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
        "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n")
    found = diagnose.diagnose([tmp_path])
    assert (found.culprit, found.culprit_node) == (0, 0), (found.culprit, found.culprit_node, found.culprit_reason)


def test_two_processes_claiming_each_rank_while_others_never_start_are_a_duplicate_node_rank(tmp_path):
    announced = "".join(f"initializing ddp: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/8\n" for rank in range(4))
    found = _diagnose(tmp_path, announced * 2)
    assert found.answers()[0] == "duplicate-node-rank"
    # each rank once, the rest still to come: nothing claimed twice
    assert "duplicate-node-rank" not in _diagnose(tmp_path, announced).answers()
    # every rank twice: a log printed twice, no rank missing
    everyone = "".join(f"initializing ddp: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/4\n" for rank in range(4))
    assert "duplicate-node-rank" not in _diagnose(tmp_path, everyone * 2).answers()
    # one line repeated while the rest of the world is still to come; every rank thrice, more than the world
    assert "duplicate-node-rank" not in _diagnose(tmp_path, announced.splitlines(keepends=True)[0] + announced).answers()
    assert "duplicate-node-rank" not in _diagnose(tmp_path, announced * 3).answers()
    # node 0's workers restarted by torchrun announce themselves again
    restarted = announced + ("[default] Worker group FAILED. 1/1 attempts left; will restart worker group\n"
                             + announced)
    assert "duplicate-node-rank" not in _diagnose(tmp_path, restarted).answers()
    # two nodes' own logs, each announcing the same ranks; one node's log with its lines twice is not two nodes
    nodes = tmp_path / "run"
    for node in (0, 1):
        (nodes / f"node{node}").mkdir(parents=True)
        (nodes / f"node{node}" / "out.log").write_text(announced)
    assert diagnose.diagnose([nodes]).answers()[0] == "duplicate-node-rank"
    # a restart on one node takes nothing from what two nodes' logs say
    (nodes / "node1" / "out.log").write_text(
        announced + "[default] Worker group FAILED. 1/1 attempts left; will restart worker group\n" + announced)
    assert diagnose.diagnose([nodes]).answers()[0] == "duplicate-node-rank"
    (nodes / "node1" / "out.log").write_text(
        "".join(f"initializing ddp: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/8\n" for rank in range(4, 8)))
    (nodes / "node0" / "out.log").write_text(announced * 2)
    assert "duplicate-node-rank" not in diagnose.diagnose([nodes]).answers()


def test_two_launcher_tasks_claiming_the_same_ranks_are_a_duplicate_node_rank_in_a_paste_cut_short(tmp_path):
    """srun's (or mpirun's) label names the task that printed a line: two tasks claiming the same ranks are two
    launchers on one node rank, though the paste lost rank 0's lines and so leaves more ranks unclaimed."""
    def claims(label):
        return "".join(f"{label}Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/8\n"
                       for rank in (1, 2, 3))
    assert _diagnose(tmp_path, claims("0: ") + claims("1: ")).answers()[0] == "duplicate-node-rank"
    assert _diagnose(tmp_path, claims("[1,0]<stdout>:") + claims("[1,1]<stdout>:")).answers()[0] == "duplicate-node-rank"
    # one task's lines printed twice, or unlabelled lines: no second launcher is known
    assert "duplicate-node-rank" not in _diagnose(tmp_path, claims("0: ") * 2).answers()
    assert "duplicate-node-rank" not in _diagnose(tmp_path, claims("") * 2).answers()
    # an editor's line numbers: each "task" printed one line, as no node's launcher does
    numbered = "".join(f"{number}: Initializing distributed: GLOBAL_RANK: {number % 2}, MEMBER: {number % 2 + 1}/8\n"
                       for number in range(10, 14))
    assert "duplicate-node-rank" not in _diagnose(tmp_path, numbered).answers()
    # workers restarted: node ranks, and so the ranks their workers get, may change between attempts
    restarted = (claims("0: ") + "0: [default] Worker group FAILED. 3/3 attempts left; will restart worker group\n"
                 + claims("1: "))
    assert "duplicate-node-rank" not in _diagnose(tmp_path, restarted).answers()


def test_an_srun_task_that_runs_torchrun_is_a_node_not_a_rank(tmp_path):
    """srun's task 1 killed while node 0's ranks 0-3 time out: under torchrun a task is a node's launcher, so node 1
    is at fault, not rank 1 (which timed out on node 0); where srun starts every rank itself, task N is rank N."""
    timeouts = "".join(f"0: [rank{rank}]:[E1205 10:10:00.000000 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                       "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n" for rank in range(4))
    killed = "srun: error: node2: task 1: Killed\n"
    found = _diagnose(tmp_path, killed + timeouts)
    assert (found.culprit, found.culprit_node) == (None, 1), (found.culprit, found.culprit_node, found.culprit_reason)
    # torchrun's agent speaks, unlabelled: srun launched torchrun
    agent = "Root Cause (first observed failure):\n"
    assert _diagnose(tmp_path, killed + agent + timeouts.replace("0: ", "")).culprit != 1
    # srun starting each rank itself: task 1 is rank 1, though slurmstepd cancels the step as it does any
    per_rank = "".join(f"{rank}: [rank{rank}]:" + line.split("]:", 1)[1] + "\n"
                       for rank, line in enumerate(timeouts.splitlines()) if rank != 1)
    cancelled = "slurmstepd: error: *** STEP 1234.0 ON node1 CANCELLED AT 2026-12-05T10:20:00 ***\n"
    for tail in ("", cancelled):
        found = _diagnose(tmp_path, killed + per_rank + tail)
        assert found.culprit == 1, (tail, found.culprit, found.culprit_node, found.culprit_reason)
    # srun --label -o node%t.out: node 1's own file, its torchrun's lines labelled by task 1
    nodes = tmp_path / "logs"
    nodes.mkdir()
    (nodes / "node0.out").write_text(timeouts)
    (nodes / "node1.out").write_text("1: E1205 10:00:06.000000 222 torch/distributed/elastic/multiprocessing/api.py:869] "
                                     "failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /usr/bin/python\n"
                                     "1: Killed\n")
    found = diagnose.diagnose([nodes])
    assert (found.culprit, found.culprit_node) == (None, 1), (found.culprit, found.culprit_node, found.culprit_reason)


def test_a_lone_allocation_failure_is_not_read_as_a_rank_of_a_job_dying(tmp_path):
    """One CUDA out-of-memory error and nothing of a job around it: as likely one process's model too big for its
    GPU as a rank of a job; a rank's label, the others torn down, or the host's OOM killer make it a rank crash."""
    oom = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.94 GiB (GPU 1; 79.35 GiB total "
           "capacity; 77.65 GiB already allocated)\n")
    found = _diagnose(tmp_path, oom)
    assert found.answers()[:2] == ("not-in-catalog", "rank-crash"), found.answers()
    assert found.causes[0].confidence < 0.5
    assert _diagnose(tmp_path, "[rank3]: " + oom).answers()[0] == "rank-crash"
    assert _diagnose(tmp_path, "3: " + oom).answers()[0] == "rank-crash"  # srun's task 3: a job of several
    assert _diagnose(tmp_path, "[rank0]: " + oom).answers()[0] == "not-in-catalog"  # torchrun's one worker too
    torn_down = ("W1026 03:51:31.222000 2521679 torch/distributed/elastic/multiprocessing/api.py:908] Sending process "
                 "2521733 closing signal SIGTERM\n")
    assert _diagnose(tmp_path, oom + torn_down).answers()[0] == "rank-crash"
    # the host's kills, however worded
    for killed in ("[12345.678] Out of memory: Killed process 4242 (python) total-vm:123456kB\n",
                   "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n",
                   "srun: error: node1: task 0: Out Of Memory\n",
                   "[99.1] Memory cgroup out of memory: Killed process 4321 (python) total-vm:1kB\n",
                   "slurmstepd: error: Job 5 exceeded memory limit (10 > 5), being killed\n"):
        assert _diagnose(tmp_path, killed).answers()[0] == "rank-crash", killed
    # a job of several said by its size, a launcher's line, or the files given
    for job in ("world_size=4\n", "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4\n",
                "All distributed processes registered. Starting with 4 processes\n",
                "[launch.py:151:main] nnodes=1, num_local_procs=4, node_rank=0\n",
                "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 2 (pid: 5555)\n",
                "node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"):
        assert _diagnose(tmp_path, job + oom).answers()[0] == "rank-crash", job
    assert _diagnose(tmp_path, "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/1\n" + oom).answers()[0] == (
        "not-in-catalog")
    files = tmp_path / "ranks"
    files.mkdir()
    (files / "rank_0.log").write_text(oom)
    (files / "rank_1.log").write_text("step 10 loss 1.0\n")
    assert diagnose.diagnose([files]).answers()[0] == "rank-crash"


def test_nccl_on_a_veth_beside_the_nic_is_a_lead_only_when_nothing_failed_across_hosts(tmp_path):
    interfaces = ("host1:14605:14673 [0] NCCL INFO NET/Socket : Using [0]ens5:172.31.0.137<0> "
                  "[1]veth75fa783:fe80::14ad:64ff:fe64:b31e%veth75fa783<0>\n")
    quiet = _diagnose(tmp_path, interfaces)
    assert quiet.answers()[:2] == (diagnose.NOT_IN_CATALOG, "wrong-socket-interface")
    # a hang the scheduler stopped leaves its teardown and a SignalException: nothing failed before
    stopped = ("torch.distributed.elastic.multiprocessing.api: [WARNING] Received 15 death signal, shutting down workers\n"
               "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15\n")
    assert _diagnose(tmp_path, interfaces + stopped).answers()[0] == "wrong-socket-interface"
    for failed in ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4 GiB.\n", "KeyError: 'model'\n",
                   "torchrun --nnodes=1 --nproc_per_node=2 train.py\n"):  # one host: no peer elsewhere to miss
        assert "wrong-socket-interface" not in _diagnose(tmp_path, interfaces + failed).answers(), failed


def test_tensor_sizes_the_script_prints_per_rank_at_a_collective_are_compared(tmp_path):
    line = "Rank {r} tensor before allreduce: torch.Size([{n}]) 1.0\n"
    odd = "".join(line.format(r=r, n=409600 if r == 0 else 32768000) for r in range(4))
    found = _diagnose(tmp_path, odd)
    assert found.answers()[0] == "collective-mismatch" and found.culprit == 0, (found.answers(), found.culprit)
    # every rank alike, sizes printed apart from any collective (a batch's shape), or one rank alone: nothing
    assert not _diagnose(tmp_path, "".join(line.format(r=r, n=8) for r in range(4))).causes
    assert not _diagnose(tmp_path, "".join(f"[rank{r}]: batch torch.Size([{8 + r}, 512])\n" for r in range(4))).causes
    assert not _diagnose(tmp_path, line.format(r=0, n=8) + line.format(r=0, n=16)).causes
    # two ranks of each size single out none, and may be two groups of their own (pipeline stages): weak
    pairs = "".join(line.format(r=r, n=8 if r < 2 else 16) for r in range(4))
    found = _diagnose(tmp_path, pairs)
    assert found.answers()[:2] == (diagnose.NOT_IN_CATALOG, "collective-mismatch") and found.culprit is None
    # the same call compared: an evaluation's last batch smaller on one rank alone
    gather = "Rank {r} all_gather input: torch.Size([{n}, 10])\n"
    last = "".join(gather.format(r=r, n=n) for n in (32, 32) for r in range(4)) + "".join(
        gather.format(r=r, n=7 if r == 3 else 32) for r in range(4))
    found = _diagnose(tmp_path, last)
    assert found.answers()[0] == "collective-mismatch" and found.culprit == 3, (found.answers(), found.culprit)
    # sizes that change from step to step, one rank's lines cut a step earlier: a size in common, no mismatch
    steps = "".join(line.format(r=r, n=n) for n in (8, 16) for r in range(3) if (r, n) != (1, 16))
    assert not _diagnose(tmp_path, steps).causes
    # all_to_all's sizes differ across ranks by design
    assert not _diagnose(tmp_path, "".join(f"Rank {r} before all_to_all: torch.Size([{r + 1}, 64])\n"
                                           for r in range(4))).causes
    # ranks that print the same sizes and stop at different sequence numbers: no word of sizes in the reasons
    watchdog = ("[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [Rank {r}] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
                "600062 milliseconds before timing out.\n")
    late = "".join(line.format(r=r, n=8) + watchdog.format(r=r, seq=5 if r else 4) for r in range(3))
    assert not any("sizes" in reason for reason in _diagnose(tmp_path, late).reasons)


def test_a_store_barrier_that_half_the_world_never_reached_is_whole_nodes_elsewhere(tmp_path):
    timeout = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
               "store_based_barrier_key:1 (world_size={size}, worker_count={count}, timeout=0:30:00)\n")
    answers = _diagnose(tmp_path, timeout.format(size=8, count=2)).answers()
    assert answers[0] == "world-size-mismatch" and "split-world" in answers[:3], answers
    for size, count in ((8, 7), (2, 1), (4, 2)):  # one or two ranks missing: late or dead
        assert _diagnose(tmp_path, timeout.format(size=size, count=count)).answers()[0] == "straggler-rank"
    # the waiting lines count up as ranks arrive: the largest count (the timeout's own) decides
    waiting = ("INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group "
               "for rank: 0, key: store_based_barrier_key:1 (world_size=16, worker_count={count}, timeout=0:30:00)\n")
    rising = "".join(waiting.format(count=count) for count in (2, 4, 8, 12, 15)) + timeout.format(size=16, count=15)
    assert _diagnose(tmp_path, rising).answers()[0] == "straggler-rank"
    # a hang cut before the timeout, after many more waiting lines than a few
    hung = _diagnose(tmp_path, "".join(waiting.format(count=min(2 + step, 15)) for step in range(60))).answers()
    assert hung.index("straggler-rank") < hung.index("world-size-mismatch"), hung
    # torch 2's words
    torch2 = ("torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank "
              "0, for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=2, timeout=0:30:00 error=Socket "
              "Timeout)\n")
    assert _diagnose(tmp_path, torch2).answers()[0] == "world-size-mismatch"


def test_a_store_connection_lost_while_the_store_is_created_is_its_listen_backlog(tmp_path):
    reset = ("[trainer|12]:W0701 13:41:43.421574  4776 TCPStore.cpp:182] [c10d] recvValue failed on SocketImpl(fd=24, "
             "...): Connection reset by peer\n")
    frames = "[trainer|12]:#11 c10d::TCPStore::TCPStore(std::string, c10d::TCPStoreOptions const&) from libtorch_cpu.so\n"
    assert _diagnose(tmp_path, reset + frames).answers()[0] == "listen-backlog-overflow"
    assert _diagnose(tmp_path, reset).answers()[0] == "rank-crash"  # mid-job: a peer that went away
    # a store created long before (its connect retried at start), the reset mid-job far below
    training = "".join(f"[trainer|12]: step {step} loss 0.5\n" for step in range(60))
    assert _diagnose(tmp_path, frames + training + reset).answers()[0] == "rank-crash"
    # Python's frames come above the error (its cut trace's own readings, a taken or wrong port, rank beside it);
    # another rank's trace says nothing of this rank's
    python = ('  File "/usr/lib/python3/site-packages/torch/distributed/rendezvous.py", line 189, in _create_c10d_store\n'
              "    return TCPStore(\n")
    found = _diagnose(tmp_path, python + reset)
    assert "listen-backlog-overflow" in found.answers() and any("creating its store" in why for why in found.reasons)
    other = frames.replace("[trainer|12]", "[trainer|3]")
    assert _diagnose(tmp_path, "[rank12]: " + reset + "[rank3]: " + other).answers()[0] == "rank-crash"


def test_a_launcher_that_lost_the_rendezvous_store_after_joining_it_lost_its_host(tmp_path):
    keepalive = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'b_3427_0' has failed to send "
                 "a keep-alive heartbeat to the rendezvous 'test' due to an error of type RendezvousConnectionError.\n")
    assert _diagnose(tmp_path, keepalive).answers()[0] == "store-host-lost"
    crash = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 970)\n"
    assert _diagnose(tmp_path, crash + keepalive).answers()[0] == "rank-crash"  # node 0's failure came first
    # the rendezvous's shutdown is tried on every exit path, joined or not, after a run that succeeded too
    shutdown = keepalive.replace("send a keep-alive heartbeat to", "shutdown")
    assert "store-host-lost" not in _diagnose(tmp_path, shutdown).answers()


def test_a_peer_that_hung_up_on_gloos_connect_was_reached(tmp_path):
    hung_up = ("[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
               "pair.cc:534] Connection closed by peer [{host}]:{port}\n")
    # one node's ranks gone (each peer shows its own port, a listening or an outgoing one): a dead rank first, then
    # another job's addresses in the same store; the addresses answered, so not the interface or a firewall
    for lines in ([hung_up.format(host="10.0.0.2", port=35001)],
                  [hung_up.format(host="10.0.0.2", port=port) for port in (35001, 51870)],
                  [hung_up.format(host="127.0.0.1", port=41227)]):  # a peer on the dialer's own host
        answers = _diagnose(tmp_path, "".join(lines)).answers()
        assert answers[0] == "rank-crash" and "shared-master-port" in answers[:3], answers
        assert "wrong-socket-interface" not in answers[:3] and "firewall" not in answers[:3], answers
    read_error = hung_up.replace("Connection closed by peer [{host}]:{port}", "Read error [{host}]:{port}: Connection "
                                 "reset by peer")  # gloo's read of a reset from the peer it reached
    assert _diagnose(tmp_path, read_error.format(host="10.0.0.2", port=41327)).answers()[0] == "rank-crash"
    # on several nodes a loopback address is a peer's mistake, whatever answered there
    several = "torchrun --nnodes=2 --nproc_per_node=4 train.py\n" + hung_up.format(host="127.0.0.1", port=41227)
    assert _diagnose(tmp_path, several).answers()[0] == "wrong-socket-interface"
    # a connect that never got through is still the address, or what lies between
    no_error = ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
                "no error\n")
    assert _diagnose(tmp_path, no_error).answers()[0] in ("wrong-socket-interface", "firewall")
    reset = no_error.replace("no error", "timed out connecting: SO_ERROR: Connection reset by peer, remote=[10.0.0.5]:"
                             "41000 (rank=3, size=8, local=[10.0.0.6])")
    assert _diagnose(tmp_path, reset).answers()[0] in ("wrong-socket-interface", "firewall")


def test_a_trace_through_the_main_process_barrier_is_a_late_main_process_only_where_it_worked_or_others_timed_out(
        tmp_path):
    trace = ("Traceback (most recent call last):\n"
             '  File "/workspace/repro.py", line 10, in <module>\n'
             "    with accelerator.main_process_first():\n"
             '  File "/usr/lib/python3.10/contextlib.py", line 135, in __enter__\n')
    assert _diagnose(tmp_path, trace).answers()[0] == "not-in-catalog"  # cut before its error: which is unknown
    bar = "Map:  17%|█████▋                            | 1000/6000 [00:01<00:05, 912.31 examples/s]\n"
    assert _diagnose(tmp_path, bar + trace).answers()[0] == "straggler-rank"
    named = trace.replace("main_process_first()", 'main_process_first(desc="dataset map tokenization")')
    assert _diagnose(tmp_path, named).answers()[0] == "straggler-rank"
    timeout = ("[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800460 "
               "milliseconds before timing out.\n")
    stopped = "slurmstepd: error: *** JOB 4242 ON node01 CANCELLED AT 2024-03-01T10:30:00 DUE TO TIME LIMIT ***\n"
    for ending in (timeout, stopped, "KeyboardInterrupt\n"):  # a hang that ran out of time, or was stopped
        assert _diagnose(tmp_path, trace + ending).answers()[0] == "straggler-rank", ending
