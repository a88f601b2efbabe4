"""YAML files from users (scenarios, packs, drill answers, case lists): the only YAML reader.

safe_load only (no object ever built from a tag), the file read through userfiles (a
regular file of bounded size), and aliases bounded: a 1 KB "billion laughs" document would
otherwise expand to gigabytes when a value is walked or quoted.
"""

from __future__ import annotations

from pathlib import Path

from . import userfiles
from .errors import BadInput
from .textsafe import inert_line

# YAML aliases may repeat a part of a document, not blow it up: the document, with every
# alias expanded, has at most this many nodes (a scenario has a few hundred).
YAML_MAX_NODES = 10_000


def read_yaml(path: Path):
    """The data of a YAML file (safe_load, bounded); BadInput names the file and the line at fault."""
    return parse_yaml(userfiles.read_text(path, userfiles.SCENARIO_LIMIT), path)


def parse_yaml(text: str, source):
    """YAML text as data. Aliases that expand past YAML_MAX_NODES (an alias bomb), recursive
    aliases and nesting too deep are refused before any value is built."""
    import yaml

    loader = None
    try:
        loader = yaml.SafeLoader(text)  # checks every character before parsing
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, source)
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise BadInput(f"{source}: not valid YAML{where}: {inert_line(problem)[:120]}") from None
    except RecursionError:
        raise BadInput(f"{source}: not a scenario: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_expanded_size(root, source) -> None:
    """Count the nodes of the document as if every alias were copied out, without copying:
    each distinct node is sized once. A node met again on its own path is a recursive alias."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, finished = stack.pop()
        children = _children(node)
        if finished:
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > YAML_MAX_NODES:
                raise BadInput(f"{source}: YAML aliases expand to more than {YAML_MAX_NODES} values: refused")
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise BadInput(f"{source}: a YAML alias refers to itself: refused")
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _children(node) -> list:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
