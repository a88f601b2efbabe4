"""The interactive drill at a terminal: ask for evidence, then answer (or give up)."""

from __future__ import annotations

import click

from .causes import CAUSES
from .errors import FaultlabError
from .reports import drill_screens
from .score import Answer, check_cause, parse_culprit, parse_ranks

# command -> (takes a number, what it shows)
_EVIDENCE = {
    "log": (True, lambda session, n: drill_screens.rank_log(n, session.rank_log(n))),
    "launcher": (True, lambda session, n: drill_screens.launcher(session.launcher(n))),
    "network": (True, lambda session, n: drill_screens.network(session.network(n))),
    "symptoms": (False, lambda session, _: drill_screens.symptoms(session.symptoms())),
    "fr": (False, lambda session, _: drill_screens.flight_recorder(session.flight_recorder())),
    "hint": (False, lambda session, _: drill_screens.hint(session.hint())),
}


def _evidence(session, verb: str, argument: str) -> str:
    if verb == "debug":
        return drill_screens.debug(argument.strip(), session.debug(argument.strip()))
    if verb == "causes":
        return "\n".join(f"  {i:2}. {c.id}: {c.title}" for i, c in enumerate(CAUSES, 1))
    if verb not in _EVIDENCE:
        return drill_screens.menu(session)
    numbered, show = _EVIDENCE[verb]
    return show(session, int(argument) if numbered else None)


def interactive_answer(session) -> Answer | None:
    """The trainee's loop. Returns their answer, or None if they gave up."""
    click.echo(drill_screens.briefing(session))
    click.echo("\nAsk for evidence or answer:\n" + drill_screens.menu(session))
    while True:
        command = click.prompt("\ndrill", default="answer", show_default=False).strip()
        verb, _, argument = command.partition(" ")
        if verb == "answer":
            break
        if command == "give up":
            return None
        try:
            click.echo(_evidence(session, verb, argument))
        except ValueError:
            click.echo(f"{verb} needs a number, e.g. '{verb} 0'")
        except FaultlabError as error:
            click.echo(f"faultlab: {error}")
    return Answer(
        cause=_ask("Cause (id, or its number in `causes`)", _cause_of),
        culprit=_ask("Culprit (rank N, node N, or job)", parse_culprit),
        ranks=_ask("Ranks that deviate from a healthy run (e.g. 0,2,3; empty for none)", parse_ranks, default=""),
        fix=_ask("Fix", str),
    )


def _ask(prompt, convert, **kwargs):
    while True:
        try:
            return convert(click.prompt(prompt, **kwargs))
        except FaultlabError as error:
            click.echo(f"faultlab: {error}")


def _cause_of(text: str) -> str:
    text = text.strip()
    if text.isdigit() and 1 <= int(text) <= len(CAUSES):
        return CAUSES[int(text) - 1].id
    return check_cause(text)
