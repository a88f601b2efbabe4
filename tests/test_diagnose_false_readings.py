"""Readings diagnose must not make from what it reads across lines and files: retries and healthy runs'
lines taken for failures, clocks compared across midnight or a new year, a rank's missing file taken for a node
that ran fewer, device lists of other spellings."""

from faultlab import diagnose

TIMED_OUT = ("[E{} socket.cpp:1028] [c10d] The client socket has timed out after 900000ms while trying to connect "
             "to (10.0.0.9, 29500).\n")
WATCHDOG = ("[rank{r}]:[E1203 10:40:00.000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 "
            "milliseconds before timing out.\n")


def _paste(tmp_path, text: str):
    (tmp_path / "job.log").write_text(text)
    return diagnose.diagnose([tmp_path / "job.log"])


def _run(tmp_path, name: str, files: dict):
    run = tmp_path / name
    for path, text in files.items():
        (run / path).parent.mkdir(parents=True, exist_ok=True)
        (run / path).write_text(text)
    return diagnose.diagnose([run])


# -- _store_host_late --------------------------------------------------------------------------------------------

def test_store_retries_that_then_connected_are_not_a_late_store_host(tmp_path):
    """torch prints a refused connect (and 'is listening yet') per retry, then connects: node 1 started a few
    seconds before node 0 and the job trained for 40 minutes. Those lines are no node giving up."""
    refused = ("[W1203 10:00:{:02d}.000000000 socket.cpp:464] [c10d] The client socket has failed to connect to "
               "[node0]:29500 (errno: 111 - Connection refused).\n")
    listening = "[I1203 10:00:{:02d}.000000000 socket.cpp:882] [c10d] No socket on (node0, 29500) is listening yet, will retry.\n"
    node0 = ("[W1203 10:00:10.000000000 Utils.hpp:135] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is "
             "deprecated\nepoch 1 step 100 loss 2.3\n" + WATCHDOG.format(r=0))
    for retry in (refused, listening):
        node1 = retry.format(5) + retry.format(7) + "epoch 1 step 100 loss 2.3\n" + WATCHDOG.format(r=1)
        found = _run(tmp_path, f"run{len(retry)}", {"node0.log": node0, "node1.log": node1})
        assert found.answers()[0] != "late-store-host" and found.culprit_node != 0, (found.answers(), found.culprit_node)


def test_a_clients_wait_that_began_before_midnight_is_not_a_late_store_host(tmp_path):
    """Node 0 waited 900 s for clients from 23:45 to 00:00; node 1 gave up at 23:58:20, after node 0 was up.
    The subtraction leaves (12, 4, -900), which compares after (12, 3, 86300)."""
    found = _run(tmp_path, "midnight", {
        "node1.launcher.log": TIMED_OUT.format("1203 23:58:20.311"),
        "node0.launcher.log": "[E1204 00:00:00.000000000 TCPStore.cpp:120] torch.distributed.DistStoreError: Timed out "
                              "after 900 seconds waiting for clients. 1/2 clients joined.\n"})
    assert found.answers()[0] != "late-store-host", found.answers()


def test_a_store_host_up_on_new_years_eve_is_not_late_for_a_dial_that_failed_on_new_years_day(tmp_path):
    found = _run(tmp_path, "year", {
        "node1.launcher.log": TIMED_OUT.format("0101 00:05:00.000"),
        "node0.launcher.log": "[W1231 23:59:00.000000000 socket.cpp:207] [c10d] The hostname of the client socket "
                              "cannot be retrieved. err=-3\nTraceback (most recent call last):\n"})
    assert found.answers()[0] != "late-store-host", found.answers()


def test_a_store_host_whose_first_stamped_line_is_its_own_wait_was_up_before_it(tmp_path):
    """Node 0 was up at 10:00 and waited: for workers (the signature's other wording, which CLIENTS_WAIT does not
    read), for keys, or in the rendezvous. Node 1 gave up at 10:14:50 / 10:15, after node 0 was up."""
    waits = {
        "workers": "[E1203 10:15:00.000000000 TCPStore.cpp:120] torch.distributed.DistStoreError: Timed out after "
                   "900 seconds waiting for workers. 1/2 workers joined.\n",
        "keys": "[E1203 10:30:00.000000000 TCPStore.cpp:120] [c10d] wait timeout after 1800000ms, keys: "
                "/default_pg/0//cuda//0\n",
        "rendezvous": "Traceback (most recent call last):\n[2024-12-03 10:30:00,000] "
                      "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n",
    }
    for name, node0 in waits.items():
        found = _run(tmp_path, name, {"node1.launcher.log": TIMED_OUT.format("1203 10:14:50.311"),
                                      "node0.launcher.log": node0})
        assert found.answers()[0] != "late-store-host", (name, found.answers())


# -- _ranks_per_node ---------------------------------------------------------------------------------------------

def test_the_last_ranks_missing_file_is_not_a_node_that_ran_fewer_ranks(tmp_path):
    """2 nodes x 2 ranks, WORLD_SIZE=4 said by every rank; rank 3's file was never collected. The ranks left
    are 'whole' (0..2, local 0..1 and 0), so the node reads as having run one rank."""
    files = {f"ranks/node{n}-local{l}-rank{r}.stdout": "WORLD_SIZE=4\n" + WATCHDOG.format(r=r)
             for n, l, r in ((0, 0, 0), (0, 1, 1), (1, 0, 2))}
    assert "world-size-mismatch" not in _run(tmp_path, "run", files).answers()[:1]


# -- _more_ranks_than_devices ------------------------------------------------------------------------------------

def test_ranks_announced_on_two_nodes_are_not_one_nodes_ranks(tmp_path):
    """A run directory of two nodes, two GPUs and two Lightning ranks each: announced ranks are counted across
    the nodes' files (4) against one node's devices (2)."""
    def node_log(node):
        return ("".join(f"LOCAL_RANK: {local} - CUDA_VISIBLE_DEVICES: [0,1]\n" for local in range(2))
                + "".join(f"initializing ddp: GLOBAL_RANK: {2 * node + local}, MEMBER: {2 * node + local + 1}/4\n"
                          for local in range(2))
                + "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, invalid usage\n")
    one_node = _paste(tmp_path, node_log(0)).answers()
    two_nodes = _run(tmp_path, "run", {"node0.log": node_log(0), "node1.log": node_log(1)}).answers()
    assert two_nodes[0] == one_node[0], (one_node, two_nodes)


# -- _physical_ids_may_be_the_index ------------------------------------------------------------------------------

def test_more_ranks_than_the_one_visible_device_is_too_few_gpus_whatever_its_physical_id(tmp_path):
    log = ("+ CUDA_VISIBLE_DEVICES=1 torchrun --nproc_per_node=2 train.py\n"
           "[rank1]: torch.cuda.set_device(cuda:1)\n"
           "[rank1]: RuntimeError: CUDA error: invalid device ordinal\n")
    assert _paste(tmp_path, log.replace("=1 ", "=0 ")).answers()[0] == "too-few-gpus"
    assert _paste(tmp_path, log).answers()[0] == "too-few-gpus"


# -- parsing that raises ------------------------------------------------------------------------------------------

def test_a_visible_device_list_without_commas_does_not_raise(tmp_path):
    for line in ("INFO:lightning:VISIBLE GPUS: 6 7\n", "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0 1]\n",
                 " But your machine only has: [0 1]\n"):
        _paste(tmp_path, line + "RuntimeError: CUDA error: invalid device ordinal\n")  # ValueError on HEAD


# -- wordings ----------------------------------------------------------------------------------------------------

def test_torch_elastics_retry_of_a_random_free_port_is_not_a_port_in_use(tmp_path):
    """create_c10d_store warns 'port: N already in use, attempt: [i/n]' only for a port it picked itself
    (server_port -1), then picks another and goes on: here a straggler's timeout follows."""
    retry = ("WARNING:torch.distributed.elastic.utils.distributed:port: 41423 already in use, attempt: [1/3]\n"
             "INFO:torch.distributed.elastic.utils.distributed:Successfully created c10d store\n")
    answers = _paste(tmp_path, retry + WATCHDOG.format(r=1)).answers()
    assert answers[0] == "straggler-rank", answers


def test_transformers_debug_line_of_every_waiting_replica_is_no_straggler(tmp_path):
    """main_process_first logs this (logger.debug) on every rank but the main one, in every run of more than one
    process: here a run that finished."""
    healthy = ("".join(f"{rank}: waiting for the main local process to perform dataset map pre-processing\n"
                       for rank in (1, 2, 3))
               + "{'loss': 1.92, 'learning_rate': 2e-05, 'epoch': 0.5}\n{'train_runtime': 100.0, 'epoch': 1.0}\n")
    assert _paste(tmp_path, healthy).answers()[0] == diagnose.NOT_IN_CATALOG


def test_accelerates_state_of_a_single_process_run_is_no_missing_launcher(tmp_path):
    """accelerate prints this state for every single-process run, one GPU meant or not."""
    state = "Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda\n"
    assert _paste(tmp_path, state + "epoch 1 loss 0.3\n").answers()[0] == diagnose.NOT_IN_CATALOG
