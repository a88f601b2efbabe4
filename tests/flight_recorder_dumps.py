"""Hand-built Flight Recorder dumps in the shape torch 2.13's gloo process group writes them
(measured: pg_config keyed by '', entries naming group '0', every state 'scheduled',
completion only in pg_status)."""

import pickle


def gloo_entry(seq: int, op: str = "all_reduce", size: int = 1, retired: bool = True) -> dict:
    return {
        "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": f"gloo:{op}", "time_created_ns": 1796284666842243693 + seq,
        "input_sizes": [[size]], "input_dtypes": ["Float"], "output_sizes": [[size]], "output_dtypes": ["Float"],
        "state": "scheduled", "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
        "retired": retired, "timeout_ms": 5000, "is_p2p": False, "thread_id": "1", "thread_name": "python3",
        "frames": [{"name": "<module>", "filename": "train.py", "line": 10 + seq}],
    }


def gloo_dump(world: int, ops: list[str], completed: int, sizes: list[int] | None = None) -> dict:
    """A rank's dump: `ops` are its collectives in order (seq 1, 2, ...), `completed` the last done."""
    sizes = sizes or [1] * len(ops)
    entries = [gloo_entry(seq, op, size, seq <= completed) for seq, (op, size) in enumerate(zip(ops, sizes), 1)]
    return {
        "version": "2.10", "comm_lib_version": "",
        "pg_config": {"": {"name": "", "desc": "", "ranks": str(list(range(world)))}},
        "pg_status": {"0": {"last_enqueued_collective": len(ops), "last_started_collective": -1,
                            "last_completed_collective": completed}},
        "entries": entries,
    }


def write_dumps(directory, dumps: dict[int, dict], prefix: str = "nccl_trace_rank_") -> None:
    """Write each rank's dump as torch names it: <prefix><rank>."""
    directory.mkdir(parents=True, exist_ok=True)
    for rank, dump in dumps.items():
        (directory / f"{prefix}{rank}").write_bytes(pickle.dumps(dump))
