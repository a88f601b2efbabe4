"""How a user's cluster is used: partition, account, time, GPUs, extra arguments, environment.

Given on the command line, in a YAML file (`--slurm-config`), or both (the command line
wins). A malformed file is one BadInput naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import sys
from pathlib import Path

import yaml

from ..errors import BadInput

# Keys of a --slurm-config file, as the YAML spells them.
CONFIG_KEYS = ("partition", "account", "time", "gpus_per_node", "nodelist", "exclude", "sbatch_args",
               "srun_args", "env", "shared_dir", "python", "queue_timeout_s")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TIME_LIMIT = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")  # sbatch's forms: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]


def default_shared_dir() -> Path:
    """Where run directories go: a path every node must see (home is shared on most clusters)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "faultlab" / "slurm-runs"


@dataclasses.dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    time: str | None = None  # sbatch --time; None: the run's deadline, rounded up to minutes
    gpus_per_node: int = 0  # 0: a CPU job on gloo
    nodelist: str | None = None  # sbatch --nodelist (e.g. "n[1-2]")
    exclude: str | None = None  # sbatch --exclude
    sbatch_args: tuple[str, ...] = ()
    srun_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # every node's environment (e.g. GLOO_SOCKET_IFNAME)
    shared_dir: Path = dataclasses.field(default_factory=default_shared_dir)
    python: str = sys.executable  # the same path on every node, with torch and faultlab
    queue_timeout_s: float = 600.0  # give up (and cancel) if the job has not started by then
    jobid: str | None = None  # an allocation to run each launch in as a job step, instead of a job of its own

    def merged(self, **overrides) -> "SlurmOptions":
        """These options with every override that is not None (or empty) applied."""
        given = {key: value for key, value in overrides.items() if value not in (None, (), [], {})}
        return dataclasses.replace(self, **given)

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


def parse_env(pairs, where: str) -> tuple[tuple[str, str], ...]:
    """KEY=VALUE strings (or a mapping) -> sorted pairs; one BadInput naming the bad one."""
    if not isinstance(pairs, dict):
        bare = [str(pair) for pair in pairs if "=" not in str(pair)]
        if bare:
            raise BadInput(f"{where}: {bare[0]!r} has no value (write KEY=VALUE)")
    items = pairs.items() if isinstance(pairs, dict) else [str(pair).partition("=")[::2] for pair in pairs]
    parsed = {}
    for key, value in items:
        if not ENV_NAME.match(str(key)):
            raise BadInput(f"{where}: {key!r} is not an environment variable name (write KEY=VALUE)")
        parsed[str(key)] = str(value)
    return tuple(sorted(parsed.items()))


def _args(value, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise BadInput(f"{where}: expected a list of arguments or one string")


def check_jobid(value: str, where: str) -> str:
    if not value.isdigit():
        raise BadInput(f"{where}: {value!r} is not a SLURM job id (digits, as squeue shows it)")
    return value


def check_time(value: str, where: str) -> str:
    if not TIME_LIMIT.match(value):
        raise BadInput(f"{where}: {value!r} is not a SLURM time limit (MM, HH:MM:SS or D-HH:MM)")
    return value


def load_config(path: Path) -> SlurmOptions:
    """A --slurm-config YAML file as options; unknown keys and wrong types are BadInput."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise BadInput(f"{path}: not a readable YAML file ({str(error).splitlines()[0]})") from None
    data = data or {}
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected a mapping of settings")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(CONFIG_KEYS)})")
    fields = {}
    for key in ("partition", "account", "nodelist", "exclude", "python"):
        if key in data:
            if not isinstance(data[key], str) or not data[key]:
                raise BadInput(f"{path}: {key} must be a non-empty string")
            fields[key] = data[key]
    if "time" in data:
        fields["time"] = check_time(str(data["time"]), f"{path}: time")
    if "gpus_per_node" in data:
        if not isinstance(data["gpus_per_node"], int) or isinstance(data["gpus_per_node"], bool) or data["gpus_per_node"] < 0:
            raise BadInput(f"{path}: gpus_per_node must be a whole number >= 0")
        fields["gpus_per_node"] = data["gpus_per_node"]
    if "queue_timeout_s" in data:
        if not isinstance(data["queue_timeout_s"], (int, float)) or isinstance(data["queue_timeout_s"], bool) \
                or data["queue_timeout_s"] <= 0:
            raise BadInput(f"{path}: queue_timeout_s must be a number of seconds > 0")
        fields["queue_timeout_s"] = float(data["queue_timeout_s"])
    for key in ("sbatch_args", "srun_args"):
        if key in data:
            fields[key] = _args(data[key], f"{path}: {key}")
    if "env" in data:
        if not isinstance(data["env"], dict):
            raise BadInput(f"{path}: env must be a mapping of variable names to values")
        fields["env"] = parse_env(data["env"], f"{path}: env")
    if "shared_dir" in data:
        fields["shared_dir"] = Path(str(data["shared_dir"])).expanduser()
    return SlurmOptions(**fields)
