"""Which real error lines diagnose reads as a catalog cause: each line alone, as a one-line log.

    python scripts/wording_sweep.py tests/diagnose_devset/lines/*.yaml [--all]

Prints the lines that name no catalog cause (with --all, every line and its first three answers),
then the count. The lines are unlabelled: a line that names nothing may be a side effect or a cause
outside the catalog, which is right; the list is where to look for wordings diagnose does not know.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

from faultlab import diagnose

JOINED = " ⏎ "  # how a collected entry joins a failure's two lines


def main(args: list[str]) -> None:
    show_all = "--all" in args
    files = [Path(arg) for arg in args if arg != "--all"]
    entries = [entry for path in files for entry in yaml.safe_load(path.read_text())]
    unread = 0
    with tempfile.TemporaryDirectory(prefix="faultlab-sweep-") as work:
        log = Path(work) / "line.log"
        for entry in entries:
            log.write_text(entry["line"].replace(JOINED, "\n") + "\n")
            answers = diagnose.diagnose([log]).answers()
            named = [answer for answer in answers if answer != diagnose.NOT_IN_CATALOG]
            unread += not named
            if show_all or not named:
                print(f"{', '.join(answers[:3]) or '-':58.58}  {entry['line'][:200]}  ({entry['source']})")
    print(f"{unread} of {len(entries)} lines name no catalog cause")


if __name__ == "__main__":
    main(sys.argv[1:])
