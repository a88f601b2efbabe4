"""One error family with exit codes: the CLI turns any of these into one line."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit codes of every faultlab command (documented in docs/cli.md)."""

    OK = 0  # the run reproduced what the scenario expects (healthy, for the healthy one)
    NOT_REPRODUCED = 1  # the run finished, but not the way the scenario expects
    BAD_INPUT = 2  # malformed scenario, unknown id, bad option, missing file
    ENVIRONMENT = 3  # this machine cannot run it (no torch, no GPUs, no free port ...)
    INTERRUPTED = 130  # Ctrl-C: the run was stopped and cleaned up


class FaultlabError(Exception):
    """Base of every error faultlab reports to a user."""

    exit_code = ExitCode.BAD_INPUT


class BadInput(FaultlabError):
    """The user gave something faultlab cannot use; the message names what and where."""


class EnvironmentProblem(FaultlabError):
    """This machine lacks something the request needs."""

    exit_code = ExitCode.ENVIRONMENT


class Interrupted(FaultlabError):
    exit_code = ExitCode.INTERRUPTED
