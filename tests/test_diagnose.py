"""diagnose on real logs: the reference NCCL logs, faultlab's own captures, and bad input."""

import os

import pytest

from faultlab import diagnose, literal_search, log_inputs, log_scan
from faultlab.errors import ExitCode
from faultlab.symptoms import SIGNATURES

from conftest import ROOT
from test_diagnose_reasoning import _diagnose

REFERENCE = ROOT.parent / "shared" / "reference-logs" / "h200-torch2.11-nccl2.28.9"


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="the shared reference logs are not beside this checkout")
@pytest.mark.parametrize("name, cause", [
    ("no_set_device_2.log", "missing-set-device"),
    ("rank_as_device_n1.log", "rank-as-device-id"),
    ("two_on_one.log", "rank-as-device-id"),
    ("no_destroy_1.log", "missing-destroy-process-group"),
])
def test_reference_logs_rank_their_cause_in_the_top_two(name, cause):
    found = diagnose.diagnose([REFERENCE / name])
    assert cause in [ranked.cause for ranked in found.causes[:2]], found.causes


def test_culprit_and_victims_from_rank_prefixes(tmp_path):
    (tmp_path / "job.log").write_text(
        "[rank1]: torch.AcceleratorError: CUDA error: invalid device ordinal\n"
        "\x1b[31m[rank0]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cuda//0/1\x1b[0m\n"
    )
    found = diagnose.diagnose([tmp_path])
    assert found.culprits == (1,) and found.victims == (0,)
    # One node short of GPUs and the global rank used as device read the same from these lines:
    # both lead, and the next check says how to tell them apart.
    assert {ranked.cause for ranked in found.causes[:2]} == {"rank-as-device-id", "too-few-gpus"}
    assert "rank-as-device-id" in found.next_check and "too-few-gpus" in found.next_check
    assert all("\x1b" not in item.line for item in found.evidence)


ORDINAL_TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 5, in <module>\n'
                     'RuntimeError: CUDA error: invalid device ordinal\n')


@pytest.mark.parametrize("given", ["file", "directory"])
def test_directories_above_the_inputs_name_no_rank_or_node(tmp_path, given):
    """A case kept in '.../case_rank_1_node_3/' is not rank 1 of node 3: only the part of a
    path below what was given (and what tells several inputs apart) places a file in the job."""
    case = tmp_path / "case_rank_1_node_3"
    case.mkdir()
    (case / "job.log").write_text(ORDINAL_TRACEBACK)
    found = diagnose.diagnose([case / "job.log" if given == "file" else case])
    assert found.culprits == () and found.culprit is None and found.culprit_node is None
    assert {item.place for item in found.evidence} == {log_inputs.JobPlace()}


def test_the_parts_that_tell_inputs_apart_place_them(tmp_path):
    for node in (0, 1):
        (tmp_path / "rank_9" / f"node{node}").mkdir(parents=True)
        (tmp_path / "rank_9" / f"node{node}" / f"local0-rank{node}.log").write_text(
            ORDINAL_TRACEBACK if node else "[rank0]: still waiting\n")
    found = diagnose.diagnose([tmp_path / "rank_9" / "node0", tmp_path / "rank_9" / "node1"])
    assert (found.culprit, found.culprit_node) == (1, 1)
    assert {item.place for item in found.evidence} == {log_inputs.JobPlace(node=1, rank=1, local_rank=0)}


def test_unknown_failure_shows_error_lines_instead_of_guessing(tmp_path):
    (tmp_path / "rank_2.log").write_text("starting\nRuntimeError: the flux capacitor failed\n")
    found = diagnose.diagnose([tmp_path])
    assert not found.causes
    assert [(e.rank, e.line) for e in found.error_lines] == [(2, "RuntimeError: the flux capacitor failed")]


def test_empty_binary_unreadable_and_missing(tmp_path, cli):
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "core.bin").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    locked = tmp_path / "locked.log"
    locked.write_text("Duplicate GPU detected : rank 0 and rank 1\n")
    os.chmod(locked, 0)
    found = diagnose.diagnose([tmp_path])
    assert any("empty" in note for note in found.notes) and any("binary" in note for note in found.notes)
    if os.geteuid() != 0:  # root reads it anyway
        assert any("unreadable" in note for note in found.notes)
    result = cli("diagnose", tmp_path / "nowhere")
    assert result.exit_code == ExitCode.BAD_INPUT and "no such file or directory" in result.output


def test_long_file_streams_across_blocks(tmp_path):
    path = tmp_path / "rank0.log"
    filler = b"x" * 200 + b"\n"
    with open(path, "wb") as out:
        out.write(filler * (log_scan.BLOCK_BYTES // len(filler) + 10))
        out.write(b"[rank0]: ValueError: trying to initialize the default process group twice!\n")
    found = diagnose.diagnose([path])
    hit = next(e for e in found.evidence if e.signature == "default-pg-twice")
    assert hit.line_number == log_scan.BLOCK_BYTES // len(filler) + 11


@pytest.mark.parametrize("block_bytes", [log_scan.BLOCK_BYTES, 4096])  # within a block, and across blocks
def test_a_training_logs_progress_on_every_line_hides_no_fact(tmp_path, monkeypatch, block_bytes):
    """An epoch and a progress bar on every line: lines without a rank are not read as a rank's progress, and the
    bar is searched for until the file has one; the ranks' own lines after them read as without them."""
    monkeypatch.setattr(log_scan, "BLOCK_BYTES", block_bytes)
    ranks = "".join(f"[rank{rank}]: Epoch {epoch} | step 95 | loss 0.41\n" for rank, epoch in ((0, 0), (1, 1)))
    timeout = ("[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=96, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600325 "
               "milliseconds before timing out.\n")
    bars = "".join(f"Epoch 0: {step % 100:3d}%|{'#' * (step % 10):<10}| {step}/5000 [00:10<00:12, 44.1it/s]\n"
                   for step in range(5000))
    found = {}
    for name, text in (("alone", ranks + timeout), ("after bars", bars + ranks + timeout)):
        (tmp_path / "job.log").write_text(text)
        found[name] = diagnose.diagnose([tmp_path / "job.log"])
    progress = {name: [(item.rank, item.line) for item in result.evidence if item.signature == "ctx-rank-progress"]
                for name, result in found.items()}
    assert progress["after bars"] == progress["alone"] and len(progress["alone"]) == 2
    assert found["after bars"].answers()[:2] == found["alone"].answers()[:2]
    assert found["alone"].answers()[0] == "collective-mismatch"
    assert [item.signature for item in found["after bars"].evidence].count("ctx-progress-bar") == 1


def test_a_prefilter_finds_every_line_its_signature_matches():
    """A signature searched for by its prefilter is never read on a line the prefilter misses: every line of the
    development set's logs (and of a script's own ways) that the signature matches, as read, holds the prefilter's
    words in order, as written."""
    prefiltered = [signature for signature in SIGNATURES if signature.prefilter]
    assert prefiltered
    scripts = ["[rank3]: Epoch 2 | step 10", "]:Rank:2, EPOCH: 3", "(rank 1) done, epoch=4",
               "2024-01-01 12:00:00 | RANK 12 | " + "x" * 150 + " epoch 5",  # a script's own ways, the gap at its widest
               "[rank0] " + "\x1b[1;32mloss\x1b[0m \x1b[33m0.1\x1b[0m " * 14 + "epoch 3 step 10",  # colours,
               "[rank0] " + "训练" * 35 + " epoch 3", "[rank0] " + "&quot;a&quot; " * 20 + "epoch 3"]  # wide, escaped
    logs = sorted((ROOT / "tests" / "diagnose_devset" / "logs").rglob("*.log"))
    matched = 0
    for name, lines in [("scripts", scripts)] + [(path.name, path.read_text(errors="replace").splitlines())
                                                 for path in logs]:
        for line in lines:
            for signature in prefiltered:
                if log_scan._matches(signature.regex, log_scan._as_read(line)):
                    matched += 1
                    fast = literal_search.LiteralFinder([], [(*map(str.encode, signature.prefilter), signature.id)])
                    slow = literal_search.LiteralFinder([], fast.in_order)
                    slow.database = None  # the pure-Python search
                    assert fast.find(line.encode()) and slow.find(line.encode()), (signature.id, name, line)
    assert matched >= len(scripts) + 5


# A paste word-wrapped inside a rank's progress line, which names its epoch twice: the prefilter's hits mark where
# a signature may run on into the next line, in both engines alike.
WRAPPED_PROGRESS = (
    "2024-05-01 10:00:00 INFO starting the run with a configuration that is long enough to be the widest line ok\n"
    "2024-05-01 10:00:00 INFO data loaded\n"
    "[rank0]: training step 100 of 1000, loss 0.2534, lr 0.0001, grad norm 1.25, next\n"
    "epoch 3 begins; the scheduler warms up for a while, tokens 12345, then saves at epoch 4 as planned ok\n"
    "2024-05-01 10:00:00 INFO done\n")


@pytest.mark.parametrize("paste", [False, True])
def test_both_literal_engines_find_the_same_lines(tmp_path, monkeypatch, paste):
    pytest.importorskip("hyperscan")
    text = (REFERENCE / "no_set_device_2.log").read_text() if REFERENCE.is_dir() else (
        "[rank0]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60\n" * 3)
    text += "[rank1]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: x/1\n"
    (tmp_path / "job.log").write_text(WRAPPED_PROGRESS if paste else text)
    fast = diagnose.diagnose([tmp_path])
    monkeypatch.setattr(literal_search, "ACCELERATED", False)
    monkeypatch.setattr(literal_search, "FINDERS", {})
    slow = diagnose.diagnose([tmp_path])
    assert literal_search.finder().database is None
    assert fast.evidence == slow.evidence and fast.causes == slow.causes


def test_many_files_are_read_in_parallel(tmp_path):
    for rank in range(40):
        line = ("[rank%d]: RuntimeError: corrupt sample in shard 7\n" % rank if rank == 7 else
                "[rank%d]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:1234\n" % rank)
        (tmp_path / f"rank{rank}.log").write_text("step 1\n" * 1000 + line)
    found = diagnose.diagnose([tmp_path], workers=4)
    assert found.culprits == (7,)
    assert found.victims == tuple(r for r in range(40) if r != 7)


def test_fifos_devices_and_broken_links_are_skipped_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")  # open() on a FIFO blocks until a writer comes
    os.symlink(tmp_path / "gone.log", tmp_path / "dangling.log")
    os.symlink("/dev/zero", tmp_path / "zero.log")
    (tmp_path / "rank0.log").write_text("[rank0]: RuntimeError: Address already in use\n")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "port-in-use" and found.files == 1
    assert any("pipe.log: not a regular file" in note for note in found.notes)
    assert any("zero.log: a link out of" in note for note in found.notes)
    assert any("dangling.log: unreadable" in note for note in found.notes)


@pytest.mark.slow
def test_a_2gb_file_streams_in_flat_memory(tmp_path):
    """Past 2**31 bytes (32-bit offsets overflow there), with the failure on the very last line;
    peak memory is that of a 1 MB file of the same text."""
    import json
    import subprocess
    import sys

    measure = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from faultlab import diagnose\n"
        "found = diagnose.diagnose([Path(sys.argv[1])])\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked (large) test process.
        "peak_kb = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "print(json.dumps({'peak_mb': peak_kb / 1024, 'bytes': found.bytes, 'top': found.causes[0].cause,\n"
        "                  'evidence': [(e.signature, e.rank, e.line_number) for e in found.evidence]}))\n"
    )
    chunk = (b"step 1200 loss 2.3141 lr 0.000300 tokens/s 181234\n" * 20000)[: 1 << 20]
    chunk = chunk[: chunk.rfind(b"\n") + 1]
    failure = b"RuntimeError: CUDA error: invalid device ordinal\n"

    def diagnose_file(chunks: int) -> dict:
        path = tmp_path / "rank7.log"
        with open(path, "wb") as out:
            out.writelines(chunk for _ in range(chunks))
            out.write(failure)
        result = json.loads(subprocess.run([sys.executable, "-c", measure, str(path)], check=True,
                                           capture_output=True, text=True, cwd=ROOT).stdout)
        path.unlink()
        assert result["bytes"] == chunks * len(chunk) + len(failure)
        assert ["invalid-device-ordinal", 7, chunks * chunk.count(b"\n") + 1] in result["evidence"]
        assert result["top"] == "too-few-gpus"
        return result

    small = diagnose_file(1)
    large = diagnose_file((1 << 31) // len(chunk) + 1)
    assert large["bytes"] > 1 << 31
    assert large["peak_mb"] < small["peak_mb"] + 32, (small, large)  # a few 4 MB blocks, never the file


def test_an_own_traceback_among_waiting_ranks_reads_as_a_crash(tmp_path):
    (tmp_path / "job.log").write_text(
        "[rank3]: RuntimeError: corrupt sample in shard 3\n"
        + "".join(f"[rank{r}]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /x/3\n" for r in (0, 1, 2))
    )
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "rank-crash" and found.culprits == (3,) and found.victims == (0, 1, 2)


def test_rank_lists_are_ranges(cli, tmp_path):
    (tmp_path / "job.log").write_text(
        "[rank300]: RuntimeError: corrupt sample\n"
        + "".join(f"[rank{r}]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: x\n"
                  for r in range(512) if r != 300)
    )
    result = cli("diagnose", tmp_path)
    assert "Culprit: rank 300 (the only rank with an error of its own)\n" in result.output
    assert "Ranks with errors of their own: 300\n" in result.output
    assert "Victims (waiting on others, or their connections cut): 0-299, 301-511 (511 ranks)" in result.output


@pytest.mark.parametrize("line, signature", [
    ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [10.1.2.3]:29500 "
     "(errno: 110 - Connection timed out).", "client-connect-failed"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
     "failed. See inner exception for details.", "rendezvous-connect-failed"),
    ('    "message": "RendezvousTimeoutError: ",', "rendezvous-timeout"),
    ("host:41449:43711 [6] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused",
     "nccl-connect-failed"),
    ("host:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<57557>",
     "nccl-remote-error"),
    ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there "
     "was a network error, NCCL version 2.21.5", "nccl-remote-error"),
])
def test_network_wordings_of_torch_and_nccl(tmp_path, line, signature):
    (tmp_path / "job.log").write_text(line + "\n")
    assert signature in {item.signature for item in diagnose.diagnose([tmp_path]).evidence}


def test_mpirun_and_srun_rank_labels(tmp_path):
    (tmp_path / "mpi.log").write_text(
        "[1,2]<stdout>:host:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000\n")
    (tmp_path / "srun.log").write_text(
        " 5: torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /default_pg/0//cuda//0/2\n")
    found = diagnose.diagnose([tmp_path])
    assert found.culprits == (2,) and found.victims == (5,)


def test_torchs_rank_label_outranks_the_task_label_of_srun_over_torchrun(tmp_path):
    # srun --label before torchrun: the task is a node's launcher; torch's [rankN] is the rank. The launcher's
    # own ChildFailedError is its report of a worker, no rank's error.
    (tmp_path / "job.log").write_text(
        "1: [rank5]: RuntimeError: corrupt sample in shard 5\n"
        + "".join(f"{r // 4}: [rank{r}]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /x/5\n"
                  for r in (0, 1, 2, 3, 4, 6, 7))
        + "1: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED\n")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "rank-crash" and found.culprits == (5,)
    assert found.victims == (0, 1, 2, 3, 4, 6, 7)
    assert not any("ChildFailedError" in item.line for item in found.evidence if item.signature == "python-exception")


def _timeouts(ranks) -> str:
    return "".join(
        f"[rank{r}]:[E1205 10:10:00.000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        f"600010 milliseconds before timing out.\n" for r in ranks)


def _aborted(ranks) -> str:
    """torchrun's report of workers that died by SIGABRT."""
    return "".join(f"  rank      : {r} (local_rank: {r})\n  exitcode  : -6 (pid: {100 + r})\n"
                   f"  traceback : Signal 6 (SIGABRT) received by PID {100 + r}\n" for r in ranks)


FIRST_ABORTED = ("[E1205 10:10:05,000] torch.distributed.elastic.multiprocessing.api: failed (exitcode: -6) "
                 "local_rank: 2 (pid: 102) of binary: /usr/bin/python\n")


def test_ranks_their_watchdog_aborted_after_a_timeout_are_victims_not_culprits(tmp_path):
    # torch ends a rank whose collective timed out with SIGABRT; srun reports each such task "Aborted".
    (tmp_path / "job.log").write_text("".join(f"{r}: {_timeouts((r,))}" for r in (0, 1, 2))
                                      + "".join(f"srun: error: nid00{r}: task {r}: Aborted (core dumped)\n"
                                                for r in (0, 1, 2)))
    found = diagnose.diagnose([tmp_path])
    assert found.answers()[0] == "straggler-rank" and found.culprits == () and found.victims == (0, 1, 2)
    # a task aborted with no timeout before it crashed on its own
    assert _diagnose(tmp_path, "srun: error: nid002: task 2: Aborted (core dumped)\n").answers()[0] == "rank-crash"


@pytest.mark.parametrize("ranks", [3, 8])  # a node of 8 workers: its report has 16 lines of signals
def test_torchruns_report_of_ranks_aborted_after_a_timeout_is_no_crash(tmp_path, ranks):
    timed_out = _diagnose(tmp_path, _timeouts(range(ranks)))
    found = _diagnose(tmp_path, _timeouts(range(ranks)) + FIRST_ABORTED + _aborted(range(ranks)))
    assert "rank-crash" not in found.answers()[:2] and found.culprits == () and found.culprit is None
    # the timeouts read as they do alone: the dismissed aborts take no weight from them
    assert (found.causes, found.unknown) == (timed_out.causes, timed_out.unknown)


def test_a_worker_stopped_from_outside_is_no_culprit(tmp_path):
    stopped = ("[E1205 10:10:05,000] torch.distributed.elastic.multiprocessing.api: failed (exitcode: -15) "
               "local_rank: 3 (pid: 103) of binary: /usr/bin/python\n")
    assert _diagnose(tmp_path, _timeouts((0, 1, 2)) + stopped).culprit is None


def test_an_aborted_ranks_own_error_still_makes_it_the_culprit(tmp_path):
    for rank in (0, 1):
        (tmp_path / f"rank{rank}.log").write_text(_timeouts((rank,)))
    (tmp_path / "rank2.log").write_text("Traceback (most recent call last):\nKeyError: 'labels'\n"
                                        "Signal 6 (SIGABRT) received by PID 102\n")
    found = diagnose.diagnose([tmp_path])
    assert found.answers()[0] == "rank-crash" and found.culprit == 2


@pytest.mark.parametrize("crash", [
    "  rank      : 3 (local_rank: 3)\n  exitcode  : -9 (pid: 103)\n",  # one rank killed outright among them
    # a launcher echoing the command: its arguments are not the signal
    "[launch.py:315:sigkill_handler] ['python', 'train.py', '--eps=-6'] exits with return code = -9\n",
])
def test_a_kill_among_aborted_ranks_is_a_crash(tmp_path, crash):
    assert _diagnose(tmp_path, _timeouts((0, 1, 2)) + _aborted((0, 1, 2)) + crash).answers()[0] == "rank-crash"


def test_a_kill_past_the_abort_lines_kept_is_not_assumed_away(tmp_path):
    many = _timeouts(range(40)) + _aborted(range(40)) + "  rank      : 40 (local_rank: 0)\n  exitcode  : -9 (pid: 140)\n"
    assert _diagnose(tmp_path, many).answers()[0] == "rank-crash"


def test_an_abort_before_the_others_timed_out_or_with_no_timeout_is_a_crash(tmp_path):
    before = _diagnose(tmp_path, "WORLD_SIZE=4\n" + FIRST_ABORTED + _timeouts((0, 1, 3)))
    assert before.answers()[0] == "rank-crash"
    # in a file of its own, without a timeout there: its stamp tells (10:10:05 after the others' 10:10:00;
    # an unstamped line tells nothing, and is read as before)
    (tmp_path / "job.log").unlink()
    (tmp_path / "ranks.log").write_text(_timeouts((0, 1, 2)))
    (tmp_path / "launcher.log").write_text(FIRST_ABORTED)
    assert diagnose.diagnose([tmp_path]).answers()[0] != "rank-crash"
    (tmp_path / "launcher.log").write_text(FIRST_ABORTED + _aborted((0, 1, 2)))
    assert diagnose.diagnose([tmp_path]).answers()[0] == "rank-crash"
    (tmp_path / "launcher.log").write_text(FIRST_ABORTED.replace("10:10:05", "10:00:05"))
    assert diagnose.diagnose([tmp_path]).answers()[0] == "rank-crash"
    reset = ("[rank0]: RuntimeError: Connection closed by peer [10.0.0.2]:29500\n"
             "[rank1]: RuntimeError: Connection closed by peer [10.0.0.2]:29500\n")
    assert _diagnose(tmp_path, reset + FIRST_ABORTED).culprit == 2


def test_a_node_whose_only_own_error_is_its_watchdogs_abort_is_not_singled_out(tmp_path):
    (tmp_path / "node0.log").write_text(_timeouts((0, 1)))
    (tmp_path / "node1.log").write_text(_timeouts((2, 3)) + _aborted((2, 3)))
    found = diagnose.diagnose([tmp_path])
    assert found.culprit is None and found.culprit_node is None


def test_srun_names_the_task_it_saw_killed(tmp_path):
    (tmp_path / "job.out").write_text("srun: error: node3: task 6: Killed\nsrun: error: node3: tasks 0-5,7: Terminated\n")
    found = diagnose.diagnose([tmp_path / "job.out"])
    assert found.answers()[0] == "rank-crash" and found.culprits == (6,)


def test_processes_find_what_one_process_finds(tmp_path, monkeypatch):
    pools = []

    class CountedPool(log_scan.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs["max_workers"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(log_scan, "ProcessPoolExecutor", CountedPool)
    line = b"step 1200 loss 2.3141 lr 0.000300 tokens/s 181234\n"
    filler = line * (log_scan.PARALLEL_MIN_BYTES // 3 // len(line) + 1)
    for rank in range(3):
        tail = ("[rank1]: RuntimeError: corrupt sample in shard 1\n" if rank == 1 else
                f"[rank{rank}]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /x/1\n")
        (tmp_path / f"rank{rank}.log").write_bytes(filler + tail.encode())
    serial, parallel = diagnose.diagnose([tmp_path], workers=1), diagnose.diagnose([tmp_path], workers=2)
    assert parallel.bytes > log_scan.PARALLEL_MIN_BYTES and pools == [2]
    assert parallel == serial and parallel.culprits == (1,) and parallel.causes[0].cause == "rank-crash"


def test_a_repeated_error_keeps_its_first_lines_with_their_numbers(tmp_path):
    line = b"[rank3]:[E1206 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: x\n"
    count = log_scan.BLOCK_BYTES // len(line) * 2  # spans several blocks
    (tmp_path / "job.log").write_bytes(b"starting\n" + line * count)
    found = diagnose.diagnose([tmp_path])
    timeouts = [e for e in found.evidence if e.signature == "collective-timeout"]
    assert [(e.rank, e.line_number) for e in timeouts] == [(3, 2), (3, 3), (3, 4)]
    assert found.victims == (3,)


def test_a_block_of_few_repeated_lines_reads_as_the_line_by_line_scan(tmp_path, monkeypatch):
    """The shortcut for a flooding error keeps exactly the lines, ranks and numbers the plain scan keeps."""
    flood = b"".join(
        b"[rank%d]:[E ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught collective operation timeout: x\n" % (r % 3, r % 3)
        + (b"[rank1]: RuntimeError: Address already in use\n" if r == 5000 else b"") for r in range(40000))
    text = b"starting\n" + flood + b"step 9\n" + flood
    (tmp_path / "job.log").write_bytes(text)
    shortcut = diagnose.diagnose([tmp_path])
    monkeypatch.setattr(log_scan, "REPETITION", 10**9)  # no block is repetitive enough: never the shortcut
    plain = diagnose.diagnose([tmp_path])
    assert shortcut == plain
    numbers = [n for n, line in enumerate(text.splitlines(), 1) if b"Address already" in line]
    assert [(e.rank, e.line_number) for e in plain.evidence if e.signature == "address-in-use"] == [(1, n) for n in numbers]
    assert [(e.rank, e.line_number) for e in plain.evidence if e.signature == "collective-timeout"] == [
        (0, 2), (1, 3), (2, 4), (0, 5), (1, 6), (2, 7), (0, 8), (1, 9), (2, 10)]
