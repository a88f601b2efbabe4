"""This machine: its facts, probed once, and the one answer to "live here, replay, or cannot".

`run`, `list`, `show`, `baseline`, drills and the tests all ask `Host.availability`; none
keeps a rule of its own. Tests build a Host by hand (a fake host) instead of probing.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import shutil
import socket
from pathlib import Path
from typing import Literal

from .faults import FAULT_KINDS_BY_ID
from .records import Environment
from .scenario import Scenario

Mode = Literal["live", "replay", "cannot"]


@dataclasses.dataclass(frozen=True)
class Availability:
    """How a scenario can run here: live on `backend`, a replay of `recording`, or not at all."""

    mode: Mode
    backend: str | None = None  # the backend of a live run
    reason: str = ""  # why it cannot run live here ('' when it can)
    recording: Path | None = None  # the shipped recording a replay uses

    @property
    def live(self) -> bool:
        return self.mode == "live"

    def describe(self) -> str:
        """How it runs here, in full."""
        if self.live:
            return f"live ({self.backend})"
        if self.mode == "replay":
            return f"replay of {self.recording.name}"
        return self.reason

    def short(self) -> str:
        """How it runs here, in a table cell: the recording's hardware, or the first thing it needs."""
        if self.mode == "replay":
            return f"replay ({self.recording.name.split('.')[-2]})"
        return self.describe() if self.live else self.reason.split(" (")[0]


@dataclasses.dataclass(frozen=True)
class Host:
    gpus: int  # CUDA devices torch can see
    root: bool  # may create network namespaces, veth links and firewall rules
    commands: frozenset[str]  # the system commands faultlab uses that are installed (ip, nft, ...)

    @classmethod
    def probe(cls) -> "Host":
        """The facts of this machine. Imports torch only where an NVIDIA driver is loaded."""
        return cls(gpus=_count_gpus(), root=os.geteuid() == 0,
                   commands=frozenset(name for name in ("ip", "nft") if shutil.which(name)))

    def missing_for(self, scenario: Scenario) -> str | None:
        """What this host lacks to run the scenario live (besides GPUs), in words; None if nothing."""
        if scenario.topology.hosts:
            if not self.root:
                return "needs root (simulated hosts: network namespaces and veth links)"
            if "ip" not in self.commands:
                return "needs iproute2's `ip` (simulated hosts)"
        for fault in scenario.faults:
            for command in FAULT_KINDS_BY_ID[fault.kind].needs_commands:
                if command not in self.commands:
                    return f"needs the `{command}` command ({fault.kind} fault)"
        return None

    def backend_for(self, scenario: Scenario) -> str | None:
        """The backend a live run uses here; None where the GPUs it needs are missing."""
        topology = scenario.topology
        if topology.backend == "gloo":
            return "gloo"
        if topology.backend == "nccl":
            return "nccl" if self.gpus >= scenario.requires_gpus else None
        wanted = topology.nodes * max(topology.gpus_per_node, topology.ranks_per_node)
        return "nccl" if self.gpus >= wanted else "gloo"

    def availability(self, scenario: Scenario) -> Availability:
        from .recording_files import shipped_for

        backend = self.backend_for(scenario)
        missing = self.missing_for(scenario)
        if backend is not None and missing is None:
            return Availability("live", backend=backend)
        reason = missing or f"needs {scenario.requires_gpus} GPU(s) for nccl; this host has {self.gpus}"
        shipped = shipped_for(scenario.id)
        if shipped:
            return Availability("replay", reason=reason, recording=shipped[0])
        return Availability("cannot", reason=reason)


def _count_gpus() -> int:
    """CUDA devices torch can see (it honours CUDA_VISIBLE_DEVICES). Without an NVIDIA
    driver there are none, and torch (a second to import) need not be asked."""
    if not Path("/proc/driver/nvidia").exists():
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def environment() -> Environment:
    """Versions and hardware of this host, as a recording states them. Imports torch."""
    import torch
    import torch.distributed as dist

    gpus: tuple[str, ...] = ()
    nccl = None
    if torch.cuda.is_available():
        gpus = tuple(torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count()))
        nccl = ".".join(str(part) for part in torch.cuda.nccl.version())
    return Environment(
        host=socket.gethostname(),
        platform=f"{platform.system()} {platform.machine()}",
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        nccl=nccl,
        gloo=dist.is_gloo_available(),
        gpus=gpus,
        driver=_nvidia_driver(),
    )


def _nvidia_driver() -> str | None:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as version:
            # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
            found = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", version.readline())
            return found.group(1) if found else None
    except OSError:
        return None
