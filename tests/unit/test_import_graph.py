"""No import circle inside ``plugins/`` or ``libhns/``: a module's imports, at its top or inside
its functions, never lead back to it (a circle is two modules that are really one idea)."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    out = {}
    for path in [*REPO.glob("plugins/**/*.py"), *REPO.glob("libhns/**/*.py")]:
        parts = path.relative_to(REPO).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Our modules ``name`` imports anywhere in its body (packages' __init__ left out: they hold nothing)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name and known[target].name != "__init__.py":
                found.add(target)
    return found


def test_no_import_circles():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    circles = []
    for start in graph:  # a path from start back to start, depth-first
        stack, seen = [(start, (start,))], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join(trail + (start,)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + (nxt,)))
    assert not circles, "\n".join(sorted(set(circles)))
