"""One error family with exit codes: the CLI turns any of these into one line."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit codes of every faultlab command (documented in docs/cli.md)."""

    OK = 0  # the run reproduced what the scenario expects (healthy, for the healthy one)
    NOT_REPRODUCED = 1  # the run finished, but not the way the scenario expects
    BAD_INPUT = 2  # malformed scenario, unknown id, bad option, missing file, unreadable store
    ENVIRONMENT = 3  # this machine cannot run it (no torch, no GPUs, no free port ...)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): the run was stopped and cleaned up
    TERMINATED = 143  # SIGTERM (128 + SIGTERM): the run was stopped and cleaned up


class FaultlabError(Exception):
    """Base of every error faultlab reports to a user."""

    exit_code = ExitCode.BAD_INPUT


class BadInput(FaultlabError):
    """The user gave something faultlab cannot use; the message names what and where."""


class EnvironmentProblem(FaultlabError):
    """This machine lacks something the request needs."""

    exit_code = ExitCode.ENVIRONMENT


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where faultlab must clean up as it does for Ctrl-C."""


class Interrupted(FaultlabError):
    """A run stopped by Ctrl-C or SIGTERM, after its processes were stopped."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str, by_sigterm: bool = False) -> None:
        super().__init__(message)
        if by_sigterm:
            self.exit_code = ExitCode.TERMINATED


def exit_code_of(interrupt: KeyboardInterrupt) -> ExitCode:
    return ExitCode.TERMINATED if isinstance(interrupt, Terminated) else ExitCode.INTERRUPTED


def sigterm_raises_terminated():
    """From now on SIGTERM raises Terminated, so a command stops and cleans up as on Ctrl-C
    and exits 143. Returns the function that puts the previous handler back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigterm(signum, frame):
        raise Terminated

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    return lambda: signal.signal(signal.SIGTERM, previous)
