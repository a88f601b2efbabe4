"""Network namespaces: the owner of every change faultlab makes to the network.

A run's launchers and workers live in a private network namespace holding only a loopback
interface (or, for a scenario with `hosts: true`, each node in a namespace of its own, its
eth0 on a private bridge: see SimulatedHosts), where faultlab has the permission to make one (root, CAP_SYS_ADMIN). There:
- nothing can leave the machine: torch's TCPStore does reverse DNS look-ups of every peer
  (`getnameinfo` on `::ffff:127.0.0.1`), which on the host network go to the configured
  nameserver; in the namespace they fail at once, unanswered by anyone;
- two runs never compete for ports, and nothing a run listens on is visible outside it.
Without the permission, runs use the host's loopback, as torchrun itself would.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import socket
import struct
import subprocess

from ..errors import EnvironmentProblem

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

PRIVATE = "private network namespace (loopback only)"
HOST = "host loopback (no permission for a private network namespace)"


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _bring_up(interface: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        request = struct.pack("16sH", interface.encode(), 0)
        flags = struct.unpack("16sH", fcntl.ioctl(control, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sH", interface.encode(), flags | IFF_UP))


@contextlib.contextmanager
def private_loopback():
    """Move this thread into a new network namespace with loopback up for the duration;
    processes started meanwhile stay in it. Yields PRIVATE, or HOST where not permitted."""
    libc = _libc()
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            yield HOST
            return
        try:
            _bring_up("lo")
            yield PRIVATE
        finally:
            if libc.setns(original, CLONE_NEWNET) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"cannot return to the original network namespace: {os.strerror(error)}")
    finally:
        os.close(original)


# ---------------------------------------------------------------------------------------
# Simulated hosts: one namespace per node, each with eth0 on a private bridge.

HOSTS_SUBNET = "172.31.213"  # used only inside the namespaces faultlab makes
SIMULATED_HOSTS = f"simulated hosts: node N at {HOSTS_SUBNET}.N+1 on a private bridge"
UNANSWERED_ADDRESS = f"{HOSTS_SUBNET}.250"  # an address on the hosts' link where no host is
NAMESPACE_PREFIX = "fl-"  # fl-<owner pid>-<run id>-<h0|h1|...|sw>
NAMESPACE_DIR = "/var/run/netns"
# Settings a simulated host may change, each private to its network namespace.
NAMESPACED_SYSCTLS = {"net.core.somaxconn": "/proc/sys/net/core/somaxconn",
                      "net.ipv4.tcp_abort_on_overflow": "/proc/sys/net/ipv4/tcp_abort_on_overflow"}


def host_address(index: int) -> str:
    return f"{HOSTS_SUBNET}.{index + 1}"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphaned_namespaces() -> list[str]:
    """Namespaces of runs whose faultlab died without cleaning up (SIGKILL)."""
    removed = []
    listing = _ip("netns", "list", check=False).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.strip() else ""
        parts = name.split("-")
        if name.startswith(NAMESPACE_PREFIX) and len(parts) >= 4 and parts[1].isdigit():
            if not _owner_alive(int(parts[1])):
                _ip("netns", "del", name, check=False)
                removed.append(name)
    return removed


def hosts_supported() -> str | None:
    """None if simulated hosts can be made here, else why not."""
    if os.geteuid() != 0:
        return "simulated hosts need root (CAP_NET_ADMIN) to create network namespaces and veth links"
    if shutil.which("ip") is None:
        return "simulated hosts need iproute2's `ip` command"
    return None


class SimulatedHosts:
    """`count` hosts joined by a bridge, created on enter and removed on exit (whatever happens)."""

    def __init__(self, run_id: str, count: int) -> None:
        self.prefix = f"{NAMESPACE_PREFIX}{os.getpid()}-{run_id}"
        self.count = count
        self.created: list[str] = []

    def name(self, index: int) -> str:
        return f"{self.prefix}-h{index}"

    def path(self, index: int) -> str:
        return f"{NAMESPACE_DIR}/{self.name(index)}"

    def __enter__(self) -> "SimulatedHosts":
        problem = hosts_supported()
        if problem:
            raise EnvironmentProblem(problem)
        remove_orphaned_namespaces()
        try:
            switch = f"{self.prefix}-sw"
            self._add_namespace(switch)
            _ip("-n", switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", switch, "link", "set", "br0", "up")
            short = self.prefix.rsplit("-", 1)[1][:6]
            for index in range(self.count):
                host = self.name(index)
                self._add_namespace(host)
                port = f"fl{short}h{index}"
                _ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", host)
                _ip("link", "set", port, "netns", switch)
                _ip("-n", switch, "link", "set", port, "master", "br0")
                _ip("-n", switch, "link", "set", port, "up")
                _ip("-n", host, "addr", "add", f"{host_address(index)}/24", "dev", "eth0")
                _ip("-n", host, "link", "set", "eth0", "up")
                _ip("-n", host, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self.created.append(name)

    def __exit__(self, *exc) -> None:
        for name in reversed(self.created):
            _ip("netns", "del", name, check=False)
        self.created.clear()

    def run(self, index: int, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name(index), *command],
                              capture_output=True, text=True, timeout=30)

    def set_link(self, index: int, up: bool) -> None:
        _ip("-n", self.name(index), "link", "set", "eth0", "up" if up else "down")

    def apply_sysctls(self, sysctls) -> None:
        """The plan's (node, name, value) settings, each inside that host's namespace only:
        per-namespace settings such as the listen backlog, never the machine's own."""
        for node, name, value in sysctls:
            if name not in NAMESPACED_SYSCTLS:
                raise EnvironmentProblem(f"{name} is not a per-namespace setting faultlab changes")
            done = self.run(node, "sh", "-c", f"echo {int(value)} > {NAMESPACED_SYSCTLS[name]}")
            if done.returncode:
                raise EnvironmentProblem(f"cannot set {name}={value} on host {node}: {done.stderr.strip()}")

    def apply_firewalls(self, firewalls, master_port: int) -> None:
        """The plan's firewalls, as (node, "master" | "data", "drop" | "reject") tuples."""
        for node, ports, action in firewalls:
            verdict = "drop" if action == "drop" else "reject with tcp reset"
            if ports == "master":  # on the master's host, as a firewall in front of the store
                self.add_firewall(0, [f'iifname "eth0" tcp dport {master_port} {verdict}'])
            else:  # new connections to anything but the store's port
                self.add_firewall(node, [
                    f'iifname "eth0" tcp flags & (syn | ack) == syn tcp dport != {master_port} {verdict}'])

    def add_firewall(self, index: int, rules: list[str]) -> None:
        """nftables rules on the host's incoming traffic (its own namespace only)."""
        if shutil.which("nft") is None:
            raise EnvironmentProblem("firewall faults need nftables' `nft` command (apt-get install nftables)")
        script = "table inet faultlab {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
        script += "".join(f"  {rule}\n" for rule in rules) + " }\n}\n"
        done = subprocess.run(["ip", "netns", "exec", self.name(index), "nft", "-f", "-"], input=script,
                              capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise EnvironmentProblem(f"nft refused the firewall rules for host {index}: {done.stderr.strip()}")

    def evidence_of_all(self) -> dict[int, str]:
        return {index: self.evidence(index) for index in range(self.count)}

    def evidence(self, index: int) -> str:
        """What `ip addr`, `ip route`, `ss -ltn` and `nft list ruleset` show on the host now."""
        parts = []
        for command in (("ip", "-br", "addr"), ("ip", "route"), ("ss", "-ltn"), ("nft", "list", "ruleset"),
                        ("sysctl", "net.core.somaxconn", "net.ipv4.tcp_abort_on_overflow")):
            if shutil.which(command[0]) is None:
                continue
            done = self.run(index, *command)
            parts.append(f"$ {' '.join(command)}\n{(done.stdout + done.stderr).rstrip()}")
        return "\n".join(parts)


def enter(path: str) -> None:
    """Move this process into the network namespace at `path` (before it opens any socket)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc().setns(fd, CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"cannot enter {path}: {os.strerror(error)}")
    finally:
        os.close(fd)
