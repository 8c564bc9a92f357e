"""The import graph of our packages, at module top and inside functions: the layers of
docs/ARCHITECTURE.md ("Layers") hold, and no import circle (a circle is two modules that are really
one idea)."""

from __future__ import annotations

import ast
from pathlib import Path

from plugins import registry

REPO = Path(__file__).resolve().parents[2]
#: Bottom to top; each layer may import itself and what its entry names, nothing else of ours.
LAYERS = {
    "basics": (),  # general helpers
    "libhns": ("basics",),  # HNS only
    "plugins.cni": ("basics",),  # the CNI core: no libhns
    "plugins": ("basics", "libhns"),  # the plugins and what only they share; no tools
    "tools": ("basics", "libhns", "plugins"),  # wincni, hnsctl
}
#: The plugins proper: none imports another (flannel reaches a delegate only through exec_plugin).
PLUGINS = tuple(registry.PLUGINS.values())
#: libhns's vocabulary: what HNS's documents, policies, errors and IDs are, no call made.
HNS_WORDS = ("libhns.objects", "libhns.policies", "libhns.networks", "libhns.errors", "libhns.guid")
#: Which of libhns each part of plugins/ may import (the most specific entry holds): the plugins
#: reach HNS only through winnet's adapters, so the clients and the stack below them (client,
#: backend, deadline, raw, the backends, the journal) are hnsapi's alone; the rest of winnet speaks
#: HNS's vocabulary; nothing else of plugins/ imports libhns at all.
LIBHNS_FOR = {
    "plugins": (),
    "plugins.winnet": HNS_WORDS,
    "plugins.winnet.hnsapi": ("libhns",),
    "plugins.winnet.lifecycle": (*HNS_WORDS, "libhns.deadline"),  # STATUS's bound on its wait: a number
}


def modules() -> dict[str, Path]:
    out = {}
    for path in [p for pkg in LAYERS for p in REPO.glob(f"{pkg}/**/*.py")]:
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
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
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


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer(name: str) -> str:
    """The most specific layer holding module ``name``."""
    return max((pkg for pkg in LAYERS if _within(name, pkg)), key=len)


def test_every_module_is_in_a_layer():
    assert {name.split(".")[0] for name in modules()} == {pkg.split(".")[0] for pkg in LAYERS}


def test_layers_import_only_downwards():
    known = modules()
    wrong = []
    for name, path in known.items():
        allowed = (layer(name), *LAYERS[layer(name)])
        own = next((p for p in PLUGINS if _within(name, p)), None)
        for target in sorted(imports(name, path, known)):
            if not any(_within(target, pkg) for pkg in allowed):
                wrong.append(f"{name} ({layer(name)}) imports {target} ({layer(target)})")
            elif own and any(_within(target, p) for p in PLUGINS if p != own):
                wrong.append(f"{name} imports another plugin's {target}")
    assert not wrong, "\n".join(wrong)


def test_plugins_reach_hns_only_through_winnets_adapters():
    known = modules()
    wrong = []
    for name, path in known.items():
        if not _within(name, "plugins") or _within(name, "plugins.cni"):
            continue
        allowed = LIBHNS_FOR[max((p for p in LIBHNS_FOR if _within(name, p)), key=len)]
        for target in sorted(imports(name, path, known)):
            if _within(target, "libhns") and not any(_within(target, a) for a in allowed):
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_acl_walk_shares_no_code_with_what_writes_acls():
    """The simulator's ACL walk judges the rules ``plugins.netpol`` and ``plugins.winnet.acls``
    write (through ``libhns.policies``' encoders): it may reach only ``basics`` and libhns's
    errors, at any depth."""
    known = modules()
    reached, todo = set(), ["libhns.sim.aclwalk"]
    while todo:
        for target in imports(todo[-1], known[todo.pop()], known):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert {name for name in reached if not _within(name, "basics")} == {"libhns.errors"}


#: Inside ``tools/wincni``, bottom to top: what any command reads of the node (``node``, the CRI
#: client in ``node/cri``), what both the doctor and install judge (``judge``), the command line
#: (``cli``: the registry names the commands by module, never imports them), then each command's
#: package, which imports no other command's.
WINCNI_SHARED = {
    "tools.wincni.node": ("tools.wincni.node",),
    "tools.wincni.judge": ("tools.wincni.node", "tools.wincni.judge"),
    "tools.wincni.cli": ("tools.wincni.node", "tools.wincni.judge", "tools.wincni.cli"),
}


def wincni_room(name: str) -> str:
    """The room of ``tools/wincni`` holding ``name``: a shared one, or a command's package."""
    return ".".join(name.split(".")[:3])


def test_wincni_commands_never_import_each_other():
    from tools.wincni.cli.registry import COMMANDS

    rooms = {wincni_room(c.module) for c in COMMANDS if not c.module.startswith("tools.wincni.cli")}
    known = modules()
    wrong = []
    for name, path in known.items():
        if not _within(name, "tools.wincni") or name in ("tools.wincni", "tools.wincni.__main__"):
            continue
        room = wincni_room(name)
        allowed = WINCNI_SHARED.get(room) or ((room, *WINCNI_SHARED["tools.wincni.cli"]) if room in rooms else ())
        assert allowed, f"{name} is in no room of tools/wincni"
        for target in sorted(imports(name, path, known)):
            if _within(target, "tools.wincni") and not any(_within(target, r) for r in allowed):
                wrong.append(f"{name} ({room}) imports {target}")
    assert not wrong, "\n".join(wrong)


#: The nouns two layers may each define, kept apart by their layer: the rest is one word, one meaning.
SHARED_NOUNS = {"Store", "Config", "Options", "Network", "Route", "PortMapping", "Interface", "Address"}


def test_every_class_name_has_one_meaning():
    where: dict[str, list[str]] = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    twice = {cls: found for cls, found in where.items() if len(found) > 1 and cls not in SHARED_NOUNS}
    assert not twice, twice
