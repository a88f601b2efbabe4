"""diagnose reads logs as people paste them: through a web page, a terminal that wraps, a log collector."""

import dataclasses
import html
import re
import shutil
import textwrap

import pytest

from faultlab import diagnose, literal_search, log_scan, pasted, triage_accuracy
from faultlab.symptoms import SIGNATURES_BY_ID

from test_diagnose_devset import DEVSET, SETS


def _wrapped(width: int):
    def wrap(text: str) -> str:
        return "\n".join(line[start:start + width] for line in text.split("\n")
                         for start in range(0, max(len(line), 1), width))
    return wrap


def _prefixed(prefix: str):
    return lambda text: "\n".join(prefix + line for line in text.split("\n"))


PASTED = {
    "escaped by a page": lambda text: html.escape(text),
    "typographic quotes": lambda text: text.replace("'", "\u2019"),
    "wrapped at 80 columns": _wrapped(80),
    "wrapped at 120 columns": _wrapped(120),
    "wrapped at 100 columns, trailing spaces dropped": lambda text: "\n".join(
        line.rstrip() for line in _wrapped(100)(text).split("\n")),
    "timestamped by a logger": _prefixed("2024-03-05 12:34:56,789 - INFO - "),
    "labelled by pdsh": _prefixed("10.0.0.5: "),
    "labelled by srun": _prefixed("0: "),  # task 0: a job of one task as well as of several
    "quoted in markdown": _prefixed("> "),
    "collected by docker compose": _prefixed("trainer-1  | "),
    "timestamped and wrapped": lambda text: _wrapped(100)(_prefixed("[2024-03-05 12:34:56] ")(text)),
    "CRLF line ends": lambda text: text.replace("\n", "\r\n"),
    "saved by PowerShell (UTF-16, CRLF)": lambda text: text.replace("\n", "\r\n").encode("utf-16"),
}


@pytest.fixture(scope="module")
def devset_answers():
    cases = [case for name in SETS for case in triage_accuracy.load_cases(DEVSET / name)]
    return cases, [result.ranked[:3] for result in triage_accuracy.evaluate(cases).results]


@pytest.mark.parametrize("how", PASTED)
def test_the_dev_set_reads_the_same_pasted(how, devset_answers, tmp_path):
    cases, answers = devset_answers
    reshaped = []
    for number, case in enumerate(cases):
        copy = tmp_path / str(number) / case.log.name
        if case.log.is_dir():
            shutil.copytree(case.log, copy)
        else:
            copy.parent.mkdir()
            shutil.copy(case.log, copy)
        for path in [copy] if copy.is_file() else [path for path in copy.rglob("*") if path.is_file()]:
            text = PASTED[how](path.read_text(errors="surrogateescape"))
            path.write_bytes(text if isinstance(text, bytes) else text.encode(errors="surrogateescape"))
        reshaped.append(dataclasses.replace(case, log=copy))
    results = triage_accuracy.evaluate(reshaped).results
    changed = [(case.log.name, before, result.ranked[:3])
               for case, before, result in zip(cases, answers, results) if result.ranked[:3] != before]
    assert not changed


def test_a_page_spells_quotes_and_brackets_its_own_way():
    assert pasted.spellings("KeyError: 'RANK'") == {
        "KeyError: 'RANK'", "KeyError: &#x27;RANK&#x27;", "KeyError: &#39;RANK&#39;", "KeyError: \u2018RANK\u2019"}
    assert pasted.as_written("died with &lt;Signals.SIGKILL: 9&gt; and &amp;lt; stays") == \
        "died with <Signals.SIGKILL: 9> and &lt; stays"
    assert pasted.as_written("didn\u2019t join \u201call\u201d") == 'didn\'t join "all"'


@pytest.mark.parametrize("line, body", [
    ("2024-03-05 12:34:56,789 - INFO -     store = TCPStore(", "    store = TCPStore("),  # indentation kept
    ("2022-10-12 01:39:21,014 INFO training on gpu 5", "training on gpu 5"),
    ("worker-1: [rank3]: RuntimeError: boom", "RuntimeError: boom"),
    ("10.0.0.5: Killed", "Killed"),
    ("> 0: 'LOCAL_RANK'", "'LOCAL_RANK'"),
    ("trainer-1  | Bus error (core dumped)", "Bus error (core dumped)"),
    ("[1,3]<stderr>:KeyError: 'RANK'", "KeyError: 'RANK'"),
    ("(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] x", "[E socket.cpp:922] x"),
    # what is not a collector's prefix stays
    ("RuntimeError: Connection timed out", "RuntimeError: Connection timed out"),
    ("node1:946:988 [0] NCCL INFO Bootstrap : Using eth0", "node1:946:988 [0] NCCL INFO Bootstrap : Using eth0"),
    ("  File \"train.py\", line 3, in <module>", "  File \"train.py\", line 3, in <module>"),
])
def test_a_collectors_prefix_does_not_hide_a_lines_start(line, body):
    assert pasted.body(line) == body


def test_prefixes_are_looked_for_only_near_a_lines_start():
    # What bounds the patterns' work on a huge line: a "host label" longer than the reach is text.
    far = "a1" * (pasted.PREFIX_REACH // 2) + ": Killed"
    assert pasted.body(far) == far
    assert pasted.body("a1" * 500_000) == "a1" * 500_000


def test_a_wrapped_line_is_one_line_again_and_keeps_its_number(tmp_path):
    line = ("[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, "
            "addr=[localhost]:41170, remote=[localhost]:29500) timed out after 1800000ms")
    log = tmp_path / "paste.log"
    log.write_text("training starts\n" + _wrapped(64)(line) + "\nstep 1 loss 2.31\n")
    found = diagnose.diagnose([log])
    evidence = [item for item in found.evidence if "timed out after 1800000ms" in item.line]
    assert evidence and evidence[0].line == line and evidence[0].line_number == 2
    assert found.causes[0].cause == "straggler-rank"


def test_a_surely_wrapped_line_is_read_whole_not_as_its_pieces(tmp_path):
    timeout = ("(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed out "
               "after 1800s while trying to connect to (172.17.0.2, 44737).")
    watchdog = ("(ActorModelRayActor pid=207260, ip=10.0.1.75) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=3856, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=1800000) ran for 1800268 milliseconds before timing out.")
    log = tmp_path / "paste.log"
    log.write_text(_wrapped(100)(timeout) + "\nLoading checkpoint shards: 100%\n" + _wrapped(100)(watchdog) + "\n")
    evidence = diagnose.diagnose([log]).evidence
    assert {item.line for item in evidence} == {timeout, watchdog}
    assert {item.line_number for item in evidence} == {1, 4}


def _runs(lines):
    wrapped = pasted.wrapped_lines(lines, word_breaks=set(range(len(lines))))  # a word wrap looked for everywhere
    return [(line.first, line.pieces, line.readings) for line in wrapped], any(line.sure for line in wrapped)


def test_one_widest_line_is_a_guessed_wrap_several_are_a_sure_one():
    lines = ["x" * 55 + "Address already", "in use", "RuntimeError: Address already in use"]
    assert _runs(lines) == ([(0, lines[:2], ("x" * 55 + "Address alreadyin use", "x" * 55 + "Address already in use"))],
                            False)
    lines = ["a" * 80, "b" * 80, "c" * 20, "d" * 79, "e"]  # "d"'s edge fell on a space the copy dropped
    # a full line may also have been an editor's word wrap: read with a space at each break too
    assert _runs(lines) == ([(0, lines[:3], ("a" * 80 + "b" * 80 + "c" * 20,
                                             "a" * 80 + " " + "b" * 80 + " " + "c" * 20)),
                             (3, lines[3:], ("d" * 79 + " e",))], True)
    assert _runs(["short", "lines", "only"]) == ([], False)


def test_a_wrapped_paste_quoted_whole_joins_without_the_quotes_on_its_pieces():
    # Quoted in markdown after the wrap (or labelled by srun): every piece carries the prefix; only
    # the outer prefixes the first piece carries are taken off the others.
    lines = ["> (Worker pid=7) " + "a" * 70, "> " + "b" * 85, "> c", "> " + "d" * 85, "> e"]
    assert _runs(lines) == ([(0, lines[:3], ("> (Worker pid=7) " + "a" * 70 + "b" * 85 + "c",
                                             "> (Worker pid=7) " + "a" * 70 + " " + "b" * 85 + " c")),
                             (3, lines[3:], ("> " + "d" * 85 + "e", "> " + "d" * 85 + " e"))], True)


# Lines of different lengths (67, 73, 45); two of one length (65, 65: a "sure" wrap, read with spaces too).
@pytest.mark.parametrize("pid, width", [("4711", 73), ("47", 66)])
def test_a_word_wrapped_paste_is_read_joined(tmp_path, pid, width):
    error = (f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Bus error. It is possible that "
             "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.")
    log = tmp_path / "paste.log"
    log.write_text("\n".join(textwrap.wrap(error, width)) + "\n")
    found = diagnose.diagnose([log])
    assert found.causes[0].cause == "shm-exhausted"
    assert any("killed by signal: Bus error" in item.line and item.line_number == 1 for item in found.evidence)


def test_a_word_wrapped_paste_quoted_in_markdown_is_read_joined(tmp_path):
    # Quoted after the wrap: every piece carries "> ", which stays between the words a line end split.
    error = ("RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus error. It is possible that "
             "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.")
    log = tmp_path / "paste.log"
    log.write_text("Any idea? I got\n\n" + "".join(f"> {line}\n" for line in textwrap.wrap(error, 73)))
    found = diagnose.diagnose([log])
    assert found.causes[0].cause == "shm-exhausted"
    assert any("killed by signal: Bus error" in item.line and item.line_number == 3 for item in found.evidence)


def test_a_word_wrapped_paste_indented_as_a_code_block_is_read_joined(tmp_path):
    # Markdown's four spaces on every line: each would otherwise begin as an indented traceback frame does.
    error = ("RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus error. It is possible that "
             "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.")
    log = tmp_path / "paste.log"
    log.write_text("".join(f"    {line}\n" for line in textwrap.wrap(error, 66)))
    found = diagnose.diagnose([log])
    assert found.causes[0].cause == "shm-exhausted"
    assert any("killed by signal: Bus error" in item.line and item.line_number == 1 for item in found.evidence)


def test_a_word_wrap_ending_on_a_hard_wraps_first_piece_is_read_joined(tmp_path):
    # 73, 80, 80, 79: the two full lines make a sure hard wrap of the last three; the first joins the second.
    error = ("torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while trying to "
             "connect to (10.0.0.1, 29500). " + "x" * 23 + " " + "y" * 80 + " zzzz")
    log = tmp_path / "paste.log"
    log.write_text("\n".join(textwrap.wrap(error, 80)) + "\n")
    assert any(item.signature == "client-connect-timeout" for item in diagnose.diagnose([log]).evidence)


def test_word_wraps_are_looked_for_only_where_a_signature_may_be_split():
    finder = literal_search.finder(False)
    split = (b"step 1 loss 2.31\nRuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus\n"
             b"error. It is possible that dataloader's workers are out of shared memory.\n")
    assert log_scan._word_breaks(split, finder) == {1}  # "Bus error" runs across line 1's end
    whole = (b"[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:12355 (errno: 98 - Address "
             b"already in use). Retrying later\nstep 1 loss 2.31\n")
    assert log_scan._word_breaks(whole, finder) == set()
    quoted = b"I got\n> " + split.replace(b"\n", b"\n> ", 2)  # a markdown quote's marks on every line
    assert log_scan._word_breaks(quoted, finder) == {2}


def test_a_word_wrap_breaks_only_where_the_next_word_would_not_fit():
    # the widest line is a line of its own; "refused" would have fitted after the 62: that line ended
    lines = ["w" * 90, '  File "train.py", line 3', "x" * 75, "y" * 62, "refused to go on", "z"]
    assert _runs(lines) == ([(2, lines[2:4], ("x" * 75 + " " + "y" * 62,))], False)


def test_records_with_their_own_timestamps_or_of_one_format_are_not_word_wrapped():
    stamped = ["[2024-05-01 10:00:01] INFO Initializing process group: rank 3, world size 8, backend nccl",
               "[2024-05-01 10:00:09] INFO Epoch 0 step 100/1000 loss 2.31 lr 1e-4 throughput 1234 samples/s",
               "Traceback (most recent call last):"]
    assert _runs(stamped)[0] == []
    ranks = [f"Rank {rank:02d}: allreduce 1073741824 bytes in 12.{rank:03d} ms, bus bandwidth {rank % 7} GB/s"
             for rank in range(20)]
    assert _runs(ranks + ["Traceback (most recent call last):"])[0] == []


def test_a_sure_wraps_spaced_reading_adds_nothing_a_piece_says_alone(tmp_path):
    # The wrap cut "host" (a sure wrap: two distinct full lines): with a space there, "connect to h ost" would
    # escape the exclusion of ssh's own refusal that the whole line keeps.
    lines = ["pdsh@node01: [2024-03-01 10:00:02,000] [INFO] xxxxxxxxxnode02: ssh: connect to h",
             "ost node02 port 22: Connection refused",
             "[2024-03-01 10:00:00,124] [INFO] [runner.py:570:main] cmd = pdsh -S -f 1024 -w n",
             "ode01,node02 export PYTHONPATH=/work"]
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    assert not any(item.signature == "connection-refused" for item in diagnose.diagnose([log]).evidence)


def test_a_guessed_space_does_not_undo_what_an_exclusion_refused_in_the_whole(tmp_path):
    # torch's first try of localhost over IPv6 is excluded from the store's connect failures; a sure wrap cut
    # "localhos|t", and its spaced reading "[localhos t]" escapes the exclusion that the whole line keeps
    warning = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [{host}]:29500 (errno: 97 - "
               "Address family not supported by protocol).")
    width = warning.index("{host}") + len("localhos")
    other = "I1202 16:37:43.000000 1234 torch/distributed/elastic/agent/server/api.py:525] [default] Starting workers"
    log = tmp_path / "paste.log"
    for host, read in (("localhost", False), ("10.0.0.5", True)):
        log.write_text(_wrapped(width)(other) + "\n" + _wrapped(width)(warning.format(host=host)) + "\n")
        assert any(item.signature == "client-connect-failed" for item in diagnose.diagnose([log]).evidence) == read
    # a wrap not sure of itself whose edge fell on the space the exclusion needs: the spaced reading is refused
    log.write_text("other line\n" + warning.format(host="localhost").replace(" (errno", "\n(errno") + "\n")
    assert not any(item.signature == "client-connect-failed" for item in diagnose.diagnose([log]).evidence)
    # a refused wording inside one piece says nothing of the join: the store's real failure after it on the same
    # wrapped line, split inside "conn|ect", is read
    both = ("short line\n" + warning.format(host="localhost") + " The client socket has failed to conn\n"
            "ect to [10.0.0.1]:29500 (errno: 110 - Connection timed out).\n")
    log.write_text(both)
    assert any(item.signature == "client-connect-failed" and "errno: 110" in item.line
               for item in diagnose.diagnose([log]).evidence)
    # a space the copy dropped at the break is still put back for the exclusion's signature (the positive words)
    unset = "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK"
    log.write_text(unset + "\nexpected, but not set\n")
    assert any(item.signature == "rank-env-missing" for item in diagnose.diagnose([log]).evidence)


def test_an_exclusion_is_taken_out_whole_past_escapes_and_character_classes():
    included = pasted.without_exclusions(re.compile(r"to (?!\[(?:localhost|::1)\]:\d+ \(errno: 9[79]\b).{0,3}?\(",
                                                    re.I))
    assert included.pattern == r"to .{0,3}?\(" and included.flags & re.I
    assert pasted.without_exclusions(re.compile(r"a(?![)(])b(?<!\))c[(?!]")).pattern == "abc[(?!]"
    for signature_id in log_scan.EXCLUDING:  # every signature's, compiled
        assert not pasted.has_exclusions(pasted.without_exclusions(SIGNATURES_BY_ID[signature_id].regex))


def test_a_guessed_wrap_adds_nothing_a_line_says_alone(tmp_path):
    failure = ("[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
               "network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, "
               "message: address already in use")
    log = tmp_path / "job.log"
    log.write_text(failure + "\nstep 1 loss 2.31\n")
    evidence = diagnose.diagnose([log]).evidence
    assert evidence and all(item.line == failure and item.line_number == 1 for item in evidence)


def test_lines_of_one_format_are_lines_of_their_own():
    # One line per rank, all of one length: the widest, but none continues the one before it.
    ranks = [f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout"
             for rank in range(4)]
    runs, sure = _runs(ranks + ["end"])
    assert [(first, pieces) for first, pieces, _ in runs] == [(3, [ranks[3], "end"])] and not sure
    flood = ["Timed out waiting 20000ms for recv operation to complete, the job will now exit"] * 40
    runs, sure = _runs(flood + ["end"])
    assert [(first, pieces) for first, pieces, _ in runs] == [(39, [flood[0], "end"])] and not sure


def _respelled(respeller: pasted.Respeller, line: str) -> str:
    return pasted.with_corrections(line, respeller.corrections(line))


@pytest.mark.parametrize("retyped, cause", [
    ("RuntimeError: CUDA error: invalid device ordinnal", "too-few-gpus"),  # a letter too many
    ("RuntimeError: Adress already in use", "port-in-use"),  # one missing
    ("RuntimeError: Duplicate GPU detcted: rank 1 and rank 0 both on CUDA device 1a000", "missing-set-device"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:53467: Connection "
     "refsued", "wrong-socket-interface"),  # two letters swapped
])
def test_an_error_retyped_by_hand_with_one_letter_wrong_is_read(tmp_path, retyped, cause):
    (tmp_path / "job.log").write_text(retyped + "\n")
    found = diagnose.diagnose([tmp_path / "job.log"])
    assert found.causes and found.causes[0].cause == cause
    # read, like a page's quotes, as the machine wrote it
    respelled = _respelled(pasted.Respeller(["ordinal", "address", "detected", "refused"]), retyped)
    assert respelled in [item.line for item in found.evidence if item.signature in found.causes[0].signatures]


def test_only_the_words_a_signature_needed_are_respelled_in_the_line_shown(tmp_path):
    (tmp_path / "job.log").write_text("Traceback (most revent call last): RuntimeError: Adress already in use\n")
    found = diagnose.diagnose([tmp_path / "job.log"])
    assert "Traceback (most revent call last): RuntimeError: Address already in use" in [
        item.line for item in found.evidence if item.signature == "address-in-use"]


def test_respelling_only_corrects_long_words_one_edit_from_exactly_one_known_word():
    respeller = pasted.Respeller(["ordinal", "already", "detected", "protected", "RendezvousTimeoutError", "detect"])
    assert _respelled(respeller, "invalid device ordinnal") == "invalid device ordinal"
    assert _respelled(respeller, "Alredy here, ALREADDY there") == "Already here, ALREADY there"
    assert _respelled(respeller, "RendezvousTimoutError") == "RendezvousTimeoutError"  # spelt as the literal is
    assert not respeller.corrections("invalid device ordinal")  # nothing misspelt
    assert not respeller.corrections("ordinary words stay")  # two edits away
    assert not respeller.corrections("detct")  # one edit, but too short a word to tell
    assert not respeller.corrections("x" * 3000 + " ordinnal")  # a line this long is machine output


def test_a_word_wrap_in_the_listen_failures_port_and_code_is_looked_for():
    # the listen failure's pattern reaches a port and a code past its literal: a wrap after "code:" splits it
    finder = literal_search.finder(False)
    split = (b"[W1205 socket.cpp:752] [c10d] The server socket has failed to listen on any local network address. "
             b"port: 29500, useIpv6: 0, code:\n-13, name: EACCES, message: permission denied\n")
    assert log_scan._word_breaks(split, finder) == {0}


@pytest.mark.parametrize("wrapped_after", ["useIpv6: 0,", "code:"])
def test_a_word_wrapped_listen_failure_is_read_joined(tmp_path, wrapped_after):
    error = ("[W1205 socket.cpp:752] [c10d] The server socket has failed to listen on any local network address. "
             "port: 29500, useIpv6: 0, code: -13, name: EACCES, message: permission denied")
    cut = error.index(wrapped_after) + len(wrapped_after)
    log = tmp_path / "paste.log"
    # not the paste's widest line: only the word-wrap reading can join it
    widest = "[I1205 socket.cpp:752] [c10d] " + "w" * 160
    log.write_text(f"{widest}\n{error[:cut]}\n{error[cut + 1:]}\n")
    found = diagnose.diagnose([log])
    assert any(item.signature == "server-bind-failed" for item in found.evidence)


def test_lightning_lines_of_one_width_each_begin_a_line_of_their_own():
    # behind a collector's prefix they reach a terminal's width, yet each is a process's own start line
    lines = [f"trainer-1  | {text}" for rank in range(4) for text in (
        f"LOCAL_RANK: {rank} - CUDA_VISIBLE_DEVICES: [0,1,2,3]", f"initializing ddp: GLOBAL_RANK: {rank}, MEMBER: 1/8")]
    assert pasted.wrapped_lines(lines) == []
