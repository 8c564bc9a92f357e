"""The shape of ``wincni``, held: one command registry that README, deploy/ and ARCHITECTURE
agree with; a dispatch that stays simple; every command ``run(options, ctx)`` over typed options;
JSON reaching stdout from one module; and the size and budget of the ``tools/wincni`` tree."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from tools.wincni.cli import registry

REPO = Path(__file__).resolve().parents[2]
WINCNI = REPO / "tools" / "wincni"
#: Two more command packages land this wave (netpol/, selftest/) within the issue's 12.
TOP_LEVEL_BUDGET = 12
MAX_LINES = 400


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def test_readme_lists_the_registrys_commands() -> None:
    section = _section((REPO / "README.md").read_text(), "### `wincni`'s commands")
    listed = re.findall(r"^\| `wincni ([a-z]+)`", section, re.M)
    assert listed == [c.name for c in registry.COMMANDS]


def test_architectures_tool_map_is_the_registry() -> None:
    section = _section((REPO / "docs" / "ARCHITECTURE.md").read_text(), "## Operator tools")
    mapped = dict(re.findall(r"^\| `wincni ([a-z]+)` \| `([\w/]+)\.py` \|", section, re.M))
    assert mapped == {c.name: c.module.replace(".", "/") for c in registry.COMMANDS}


def _strings(doc: object) -> list:
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in _strings(v)] + [doc]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return []


def test_deploys_command_lines_run_the_registrys_commands() -> None:
    """Each wincni.exe command line of deploy/ (a container's command and args, or a cmd /c line)
    names a command the registry holds, and together they run every command a node runs."""
    import yaml

    used = set()
    for path in (REPO / "deploy").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            for node in _strings(doc):
                line = (
                    [*node.get("command", []), *node.get("args", [])] if isinstance(node.get("command"), list) else []
                )
                if line and str(line[0]).endswith("wincni.exe"):
                    used.add(line[1])
                used |= {m for s in line if isinstance(s, str) for m in re.findall(r"wincni\.exe ([a-z]+)", s)}
    assert used == set(registry.BY_NAME) - {"version", "bundle", "selftest"}  # an operator runs these by hand


def test_every_command_runs_its_typed_options_with_the_context() -> None:
    for command in registry.COMMANDS:
        module = importlib.import_module(command.module)
        for name in ("add_arguments", "options", "run"):
            assert callable(getattr(module, name, None)), f"{command.module} has no {name}"
        assert list(inspect.signature(module.run).parameters)[:2] == ["options", "ctx"], command.module
        assert list(inspect.signature(module.options).parameters) == ["args", "ctx"], command.module


def _modules() -> list[Path]:
    return sorted(p for p in WINCNI.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_nothing_below_a_commands_options_reads_argparse() -> None:
    """argparse is the command line's: cli/, a command's module, and the modules that turn its
    parse into the typed options (``options``)."""
    allowed = {c.module for c in registry.COMMANDS}
    readers = set()
    for path in _modules():
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        if "argparse" in names and not _dotted(path).startswith("tools.wincni.cli"):
            readers.add(_dotted(path))
    assert {r for r in readers if not r.endswith(".options")} <= allowed, readers - allowed


def test_json_reaches_stdout_from_one_module() -> None:
    writers = {_dotted(p) for p in _modules() if "json.dump(" in p.read_text()}
    assert writers == {"tools.wincni.cli.output"}


def _complexity(fn: ast.FunctionDef) -> int:
    """McCabe's number: 1 + each branch (if, loop, except, boolean operator, conditional expression,
    comprehension condition, match case)."""
    branches = (ast.If, ast.For, ast.While, ast.ExceptHandler, ast.IfExp, ast.With, ast.Assert, ast.match_case)
    count = 1
    for node in ast.walk(fn):
        if isinstance(node, branches):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
    return count


def test_the_dispatch_stays_simple() -> None:
    tree = ast.parse((WINCNI / "cli" / "main.py").read_text())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert _complexity(main) <= 8


def test_the_top_level_keeps_room_for_this_waves_commands() -> None:
    entries = [p.name for p in WINCNI.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= TOP_LEVEL_BUDGET, sorted(entries)


def test_no_module_is_over_the_line_budget() -> None:
    big = {
        str(p.relative_to(REPO)): n
        for root in ("tools", "basics")
        for p in (REPO / root).rglob("*.py")
        if "__pycache__" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, big
