"""The shapes of the names faultlab makes and reads back: one check for scenarios, fault
parameters, drills and bundles.

A bundle or a scenario from someone else is trusted with data, never with markup, paths or
terminal control: every identity it carries must have the shape faultlab itself produces,
and every free-text name the shape of a name. `check` names the field that does not.
"""

from __future__ import annotations

import math
import re

from .errors import BadInput
from .textsafe import excerpt

SCENARIO_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
# <scenario>.<run|replay|baseline>.<UTC stamp>.<6 hex>, as runner._new_id makes them
RECORDING_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\.(?:run|replay|baseline)\.\d{8}T\d{6}\.[0-9a-f]{6}")
# <6 hex of the recording>.<milliseconds>.<6 hex>, as a drill's result is named
DRILL_ID = re.compile(r"[0-9a-f]{6}\.\d{1,16}\.[0-9a-f]{6}")
# A login name or a person's name: letters (any script), digits, space, . _ @ + -
TRAINEE = re.compile(r"[^\W_][\w .@+-]{0,63}")
PACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A network interface name as Linux accepts it (IFNAMSIZ 16, with the terminating NUL).
INTERFACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}")
# A short phrase written into a code comment: no newline, no quote, no backslash.
PHRASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ,.()/_-]{0,79}")
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
# Platform and GPU model names: 'Linux x86_64', 'NVIDIA A100-SXM4-80GB'
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+()/:,-]{0,127}")
# How an earlier live run of a race ended, as runner.run_scenario words it: a verdict, and
# the expected signatures it lacked ('healthy, without store-connect-reset-retry').
EARLIER_ATTEMPT = re.compile(r"[a-z-]{1,16}(?:, without [a-z0-9-]{1,64}(?:, [a-z0-9-]{1,64}){0,15})?")
SYMPTOM_SOURCE = re.compile(r"rank \d{1,7}|node \d{1,3} launcher")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
# An environment value a scenario sets: printable, short, no control characters.
ENV_VALUE = re.compile(r"[\x20-\x7e]{0,256}")


def matches(pattern: re.Pattern, value) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def check(pattern: re.Pattern, value, field: str, what: str) -> None:
    """BadInput naming `field` unless `value` has the shape of `what`."""
    if not matches(pattern, value):
        raise BadInput(f"{field}: {excerpt(value)} is not {what}")


def in_range(value, low: float, high: float) -> bool:
    """A finite number within low..high (NaN and infinities are never in range)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and low <= value <= high


def check_recording(recording, field: str) -> None:
    """Every identity and environment string of a Recording from outside this store."""
    check(RECORDING_ID, recording.id, f"{field}.id", "a recording id")
    check(SCENARIO_ID, recording.scenario_id, f"{field}.scenario_id", "a scenario id")
    if recording.baseline_id is not None:
        check(RECORDING_ID, recording.baseline_id, f"{field}.baseline_id", "a recording id")
    check(TIMESTAMP, recording.recorded_at, f"{field}.recorded_at", "an ISO 8601 time")
    check(VERSION, recording.backend, f"{field}.backend", "a backend name")
    environment = recording.environment
    check(HOST, environment.host, f"{field}.environment.host", "a host name")
    check(LABEL, environment.platform, f"{field}.environment.platform", "a platform name")
    check(VERSION, environment.python, f"{field}.environment.python", "a version")
    check(VERSION, environment.torch, f"{field}.environment.torch", "a version")
    for key in ("cuda", "nccl", "driver"):
        value = getattr(environment, key)
        if value is not None:
            check(VERSION, value, f"{field}.environment.{key}", "a version")
    for index, gpu in enumerate(environment.gpus):
        check(LABEL, gpu, f"{field}.environment.gpus[{index}]", "a GPU model name")
    for index, outcome in enumerate(recording.earlier_attempts):
        check(EARLIER_ATTEMPT, outcome, f"{field}.earlier_attempts[{index}]", "how a live run ended")
    check_symptoms(recording, field)


def check_symptoms(recording, field: str) -> None:
    """Symptoms name signatures of this faultlab's catalog, at sources faultlab names."""
    from .symptoms import SIGNATURES_BY_ID

    for index, symptom in enumerate(recording.symptoms):
        if symptom.id not in SIGNATURES_BY_ID:
            raise BadInput(f"{field}.symptoms[{index}].id: {excerpt(symptom.id)} is not a signature of this faultlab")
        check(SYMPTOM_SOURCE, symptom.source, f"{field}.symptoms[{index}].source", "a rank or a node's launcher")
    for key in ("expected_signatures", "missing_signatures"):
        for index, signature in enumerate(getattr(recording, key)):
            check(SCENARIO_ID, signature, f"{field}.{key}[{index}]", "a signature id")


def check_drill(drill, field: str) -> None:
    """Every identity of a drill result from outside this store."""
    check(DRILL_ID, drill.id, f"{field}.id", "a drill id")
    check(TRAINEE, drill.trainee, f"{field}.trainee", "a trainee name")
    if drill.pack is not None:
        check(PACK, drill.pack, f"{field}.pack", "a pack name")
    check(SCENARIO_ID, drill.scenario_id, f"{field}.scenario_id", "a scenario id")
    check(SCENARIO_ID, drill.cause, f"{field}.cause", "a cause id")
    check(RECORDING_ID, drill.recording_id, f"{field}.recording_id", "a recording id")
    check(TIMESTAMP, drill.started_at, f"{field}.started_at", "an ISO 8601 time")
