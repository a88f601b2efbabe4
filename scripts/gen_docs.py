"""Regenerate the documentation pages made from the catalogs:

    python scripts/gen_docs.py [DOCS_DIR]      (default: docs/)

docs/causes/<id>.md, one page per cause (what it is, how to confirm, fix, prevent, the
scenarios that teach it and the signatures they show), docs/causes/README.md (the index),
docs/fault-kinds.md (every fault kind and its parameters), and the options of every
command in docs/cli.md (the blocks between `<!-- options: NAME -->` and `<!-- /options -->`;
the prose around them is written by hand). A test checks that the committed pages are
what this script writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from faultlab import scenario as scenarios
from faultlab.causes import CAUSES
from faultlab.faults import FAULT_KINDS
from faultlab.symptoms import SIGNATURES_BY_ID


def cause_page(cause, teaching) -> str:
    lines = [f"# {cause.title}", "", f"Cause id: `{cause.id}`", "", "## What it is", "", cause.what, "",
             "## How to confirm it", "", cause.confirm, "", "## Fix", "", cause.fix, "", "## Prevent it", "",
             cause.prevent, ""]
    if teaching:
        lines += ["## Scenarios", "", "| scenario | difficulty | live on | verdict | signatures it shows |",
                  "|---|---|---|---|---|"]
        for item in teaching:
            where = f"GPU ({item.requires_gpus}+)" if item.requires_gpus else "CPU"
            signatures = sorted(set(item.expect.signatures + item.expect.gloo_signatures + item.expect.nccl_signatures))
            shown = ", ".join(f"`{s}`" for s in signatures) or "-"
            lines.append(f"| `{item.id}`: {item.title} | {item.difficulty} | {where} | {item.expect.verdict} | {shown} |")
        lines += ["", "Run one with `faultlab run <scenario>`; `faultlab show <scenario> --code` shows the program.", ""]
        used = sorted({s for item in teaching for s in item.expect.signatures + item.expect.gloo_signatures
                       + item.expect.nccl_signatures})
        if used:
            lines += ["## The signatures", ""]
            for signature_id in used:
                signature = SIGNATURES_BY_ID[signature_id]
                lines.append(f"- `{signature.id}` ({signature.role}): {signature.meaning}")
            lines.append("")
    return "\n".join(lines)


def fault_kinds_page() -> str:
    lines = ["# Fault kinds", "", "Every `kind` a scenario's `faults:` may name (see scenario-format.md).", "",
             "| kind | layer | targets | parameters | cause | what it does |", "|---|---|---|---|---|---|"]
    for kind in FAULT_KINDS:
        params = "<br>".join(
            f"`{p.name}` ({p.type.__name__}, default `{p.default!r}`"
            + (f", one of {', '.join(repr(c) for c in p.choices if c)}" if p.choices else "")
            + (f", {p.low:g}..{p.high:g}" if p.low is not None else "")
            + (f", {p.shape[1]}" if p.shape else "") + f"): {p.help}"
            for p in kind.params
        ) or "-"
        layer = kind.layer + (" (GPU only)" if kind.gpu_only else "")
        lines.append(f"| `{kind.id}` | {layer} | {', '.join(kind.targets)} | {params} | `{kind.cause}` | {kind.summary} |")
    return "\n".join(lines) + "\n"


def _option_row(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return f"| `{param.human_readable_name}` | argument{'' if param.required else ', optional'} |"
    names = ", ".join(f"`{name}`" for name in param.opts + param.secondary_opts)
    value = "" if param.is_flag else f" {param.metavar or param.type.name.upper()}"
    extra = [f"default `{param.default}`"] if param.show_default and param.default is not None else []
    if isinstance(param.type, click.Choice):
        extra.append("one of " + ", ".join(f"`{choice}`" for choice in param.type.choices))
    if param.multiple:
        extra.append("repeatable")
    help_text = (param.help or "") + (f" ({'; '.join(extra)})" if extra else "")
    cell = help_text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return f"| {names}{value} | {cell} |"


def options_block(command: click.Command) -> str:
    rows = [_option_row(param) for param in command.params if param.name != "help"]
    return "\n".join(["| argument or option | what it does |", "|---|---|", *rows])


def update_cli_doc(text: str) -> str:
    """docs/cli.md with every command's options block written from the command itself."""
    from faultlab.cli import main

    def block(match: re.Match) -> str:
        name = match.group(1)
        if name not in main.commands:
            raise SystemExit(f"docs/cli.md documents a command faultlab lacks: {name}")
        return f"<!-- options: {name} -->\n{options_block(main.commands[name])}\n<!-- /options -->"

    updated = re.sub(r"<!-- options: (\S+) -->.*?<!-- /options -->", block, text, flags=re.DOTALL)
    missing = [name for name in main.commands if f"<!-- options: {name} -->" not in updated]
    if missing:
        raise SystemExit(f"docs/cli.md lacks a section with an options block for: {', '.join(missing)}")
    return updated


def scenario_fields_block() -> str:
    from faultlab.scenario_fields import SCENARIO_FIELDS

    rows = [f"| `{field.path}` | {field.kind} | {'yes' if field.required else 'no'} | {field.meaning} |"
            for field in SCENARIO_FIELDS]
    return "\n".join(["| key | type | required | meaning |", "|---|---|---|---|", *rows])


def update_scenario_doc(text: str) -> str:
    """docs/scenario-format.md with its table of keys written from faultlab/scenario_fields.py."""
    return re.sub(r"<!-- fields -->.*?<!-- /fields -->",
                  lambda _: f"<!-- fields -->\n{scenario_fields_block()}\n<!-- /fields -->", text, flags=re.DOTALL)


def pages(docs: Path = Path(__file__).resolve().parent.parent / "docs") -> dict[str, str]:
    catalog = scenarios.load_all()
    out = {"fault-kinds.md": fault_kinds_page()}
    index = ["# The cause catalog", "", "Shared by scenarios' answer keys, drills, scoring, runbooks and diagnose "
             "(`faultlab causes`).", "", "| cause | title | scenarios |", "|---|---|---|"]
    for cause in CAUSES:
        teaching = [item for item in catalog if item.answer.cause == cause.id]
        out[f"causes/{cause.id}.md"] = cause_page(cause, teaching)
        index.append(f"| [`{cause.id}`]({cause.id}.md) | {cause.title} | {len(teaching)} |")
    out["causes/README.md"] = "\n".join(index) + "\n"
    out["cli.md"] = update_cli_doc((docs / "cli.md").read_text(encoding="utf-8"))
    out["scenario-format.md"] = update_scenario_doc((docs / "scenario-format.md").read_text(encoding="utf-8"))
    return out


def main() -> None:
    docs = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs"
    written = pages(docs)
    for name, text in written.items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(written)} pages under {docs}")


if __name__ == "__main__":
    main()
