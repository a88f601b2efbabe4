"""Regenerate the documentation pages made from the catalogs:

    python scripts/gen_docs.py [DOCS_DIR]      (default: docs/)

docs/causes/<id>.md, one page per cause (what it is, how to confirm, fix, prevent, the
scenarios that teach it and the signatures they show), docs/causes/README.md (the index),
and docs/fault-kinds.md (every fault kind and its parameters). A test checks that the
committed pages are what this script writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
            + (f", one of {', '.join(repr(c) for c in p.choices if c)}" if p.choices else "") + f"): {p.help}"
            for p in kind.params
        ) or "-"
        layer = kind.layer + (" (GPU only)" if kind.gpu_only else "")
        lines.append(f"| `{kind.id}` | {layer} | {', '.join(kind.targets)} | {params} | `{kind.cause}` | {kind.summary} |")
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    catalog = scenarios.load_all()
    out = {"fault-kinds.md": fault_kinds_page()}
    index = ["# The cause catalog", "", "Shared by scenarios' answer keys, drills, scoring, runbooks and diagnose "
             "(`faultlab causes`).", "", "| cause | title | scenarios |", "|---|---|---|"]
    for cause in CAUSES:
        teaching = [item for item in catalog if item.answer.cause == cause.id]
        out[f"causes/{cause.id}.md"] = cause_page(cause, teaching)
        index.append(f"| [`{cause.id}`]({cause.id}.md) | {cause.title} | {len(teaching)} |")
    out["causes/README.md"] = "\n".join(index) + "\n"
    return out


def main() -> None:
    docs = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs"
    for name, text in pages().items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(pages())} pages under {docs}")


if __name__ == "__main__":
    main()
