"""The shape of the code: data flows one way, no module or function grows past reading size,
and the command line stays a thin layer over the application."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "faultlab"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450
# Each module's layer: a module imports only from its own layer or lower ones. Unlisted
# modules are core (layer 2).
LAYERS = {
    "errors": 0, "serial": 0, "records": 0, "flight_recorder.records": 0, "causes": 0, "textsafe": 0,
    "userfiles": 0,
    "lab.program": 1, "lab.draft": 1, "lab.rundir": 1, "lab.netns": 1,
    "launchers": 3, "runner": 3, "slurm": 3, "drill": 4, "app": 5,
    "reports": 6, "drill_prompt": 7, "slurm.cli": 7, "cli": 8,
}
CLI_MODULES = ("cli", "drill_prompt", "slurm.cli")
MAX_CORE_IMPORTS_OF_CLI = 8


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def layer(name: str) -> int:
    while name:
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    return 2


def imports(name: str, path: Path) -> set[str]:
    """The faultlab modules `name` imports, at module level or inside functions."""
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1] if node.level > 1 else package
            prefix = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{prefix}.{alias.name}".lstrip(".")
                found.add(candidate if candidate in modules() else prefix)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("faultlab"):
            found.add(node.module.removeprefix("faultlab").lstrip("."))
    return {item for item in found if item in modules() and item != name and item}


def test_no_import_against_the_data_flow():
    wrong = [f"{name} imports {other}" for name, path in modules().items()
             for other in imports(name, path) if layer(other) > layer(name)]
    assert not wrong, wrong


def test_no_import_cycle():
    graph = {name: imports(name, path) for name, path in modules().items()}

    def visit(name, trail):
        if name in trail:
            return trail[trail.index(name):] + [name]
        for other in graph.get(name, ()):
            cycle = visit(other, trail + [name])
            if cycle:
                return cycle
        return None

    for name in graph:
        cycle = visit(name, [])
        assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_and_functions_stay_readable(name):
    path = modules()[name]
    source = path.read_text()
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{path.name}: {len(source.splitlines())} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{name}.{node.name}: {length} lines"


def test_the_command_line_is_thin():
    core = set()
    for name in CLI_MODULES:
        core |= {other for other in imports(name, modules()[name]) if layer(other) < LAYERS["reports"]}
    assert len(core) <= MAX_CORE_IMPORTS_OF_CLI, sorted(core)
