"""The contributor docs name only what exists, and every ``# noqa`` says why.

A backticked span of docs/ARCHITECTURE.md, docs/DEVELOPING.md, CONTRIBUTING.md or README.md (fenced
blocks aside) is held to the first rule that fits it; a span no rule fits (a command line, a flag,
a JSON value, a placeholder like ``<name>``, a Windows path ``C:\\...`` or ``%VAR%``, an absolute
path of the node like ``/etc/cni/net.d``) is prose and not checked.

- **Repository path**: a span of path characters whose first ``/``-separated part is an entry at
  the repository's root (``plugins/cni/skel.py``, ``tests/e2e/``), or that ends in a source suffix
  (``.py .c .h .ps1 .spec``), must name a file or folder of the repository, at the root or (for a
  shortened one like ``winnet/stale.py`` or ``checks.py``) as the tail of one. Another folder
  (``hns/v2/`` in a diagnostics bundle) is not checked.
  A file name with another suffix (``cni.conf``, ``wincni.exe``) is a node's file, not checked;
  build outputs (what .gitignore names: ``dist/``, ``bench/results.json``) are not checked either.
  ``*`` and ``{a,b}`` expand.
- **Dotted name** (``libhns.client.Features``, ``ownership.freed``, ``os.environ``): when its
  first part is a module of the repository (by its full dotted name or a tail of it) the next part
  must be defined at that module's top level or be its submodule, and each part after that must be
  defined somewhere in the code; when its first part is a class of the repository, each following
  part must be defined somewhere in the code. Any other (the standard library's ``os.environ``, a
  domain like ``cluster.local``) is not checked.
- **Identifier** (``freed``, ``HcnClient``, ``cniVersion``): must be a name the code defines or uses
  (read from every ``.py`` file and the spec with ``ast``: names, attributes, definitions,
  arguments, keywords, imports, and the words of string constants other than docstrings) or a word
  of the repository's other code and data (C, Go, PowerShell, YAML, JSON, TOML, Makefile).

A word in capitals may be the code's lower-case name as the tools print it (``HELD``: ``"held"``).
Environment variables are identifiers the code reads, so they pass the last rule. Other programs'
names the docs quote (the CRI's ``RunPodSandbox``) are listed in ``FOREIGN`` with their owner; other
repositories' paths are written with their module (``github.com/Microsoft/hcsshim/hcn``). Nothing is
imported.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
DOCS = (*PAGES, "CONTRIBUTING.md")
#: The operator's README: what it is, get it, install, check, upgrade and remove; the rest is in docs/.
README_LINES = 300
SOURCE_SUFFIXES = (".py", ".c", ".h", ".ps1", ".spec")
# A span ending in one of these is a file name (of the repository when a source suffix, else of a node).
FILE_SUFFIXES = SOURCE_SUFFIXES + tuple(
    ".json .conf .conflist .exe .dll .toml .yaml .txt .zip .pack .lock .log .env .md .cfg .tar .tmp .pyc".split()
)
DATA_SUFFIXES = (".c", ".h", ".go", ".ps1", ".yaml", ".yml", ".json", ".toml", ".cfg", ".conflist", ".txt")
PATH = re.compile(r"[\w.*{},-]+(/[\w.*{},-]*)*")
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# Other programs' names the docs quote: none of our code says them.
FOREIGN = {
    "RunPodSandbox": "the CRI (the kubelet's call to the runtime)",
    "StopPodSandbox": "the CRI",
    "FILE_FLAG_OPEN_REPARSE_POINT": "Win32's CreateFileW (basics/win32sec.py holds its value)",
    "start.ps1": "sig-windows-tools' flannel start script",
}
# CONTRIBUTING.md's format of a lint exemption: the rules, comma-separated, then " - " and why.
NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)$")
NOQA_WITH_REASON = re.compile(r":\s*[A-Z]+\d+(\s*,\s*[A-Z]+\d+)*\s+-\s+\S")


@functools.cache
def repo_files() -> tuple[str, ...]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
    return tuple(line for line in out.splitlines() if (ROOT / line).exists())


@functools.cache
def repo_entries() -> frozenset[str]:
    """Every tracked file and every folder holding one, relative to the root."""
    entries = set()
    for name in repo_files():
        parts = name.split("/")
        entries.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(entries)


def ignored(span: str) -> bool:
    """A build output: .gitignore names it or its top folder."""
    patterns = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines() if line.strip()]
    return any(fnmatch.fnmatchcase(span.rstrip("/"), p) or fnmatch.fnmatchcase(span.split("/")[0], p) for p in patterns)


def python_files() -> list[Path]:
    return [ROOT / f for f in repo_files() if f.endswith((".py", ".spec"))]


def code_files() -> list[Path]:
    """What the docs' names are looked up in: the Python files, this one (whose examples name what
    does not exist) aside."""
    return [path for path in python_files() if path != Path(__file__).resolve()]


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@functools.cache
def code_words() -> frozenset[str]:
    """The names the code defines or uses and the words of its non-docstring strings and data."""
    words: set[str] = set()
    for path in code_files():
        module = tree(path)
        docstrings = _docstrings(module)
        for node in ast.walk(module):
            if isinstance(node, ast.Name):
                words.add(node.id)
            elif isinstance(node, ast.Attribute):
                words.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                words.add(node.name)
            elif isinstance(node, ast.arg):
                words.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                words.add(node.arg)
            elif isinstance(node, ast.alias):
                words.update((node.asname or node.name).split("."))
                words.update(node.name.split("."))
            elif isinstance(node, ast.ImportFrom) and node.module:
                words.update(node.module.split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                words.update(re.findall(r"\w+", node.value))
        words.update(path.relative_to(ROOT).with_suffix("").parts)  # a module's name
    for name in repo_files():
        if name.endswith(DATA_SUFFIXES) or name.endswith("Makefile"):
            words.update(re.findall(r"\w+", (ROOT / name).read_text(errors="replace")))
    return frozenset(words)


def _top_level(body: list) -> list:
    """The statements of a module's top level, those under an ``if``/``try``/``with`` there included."""
    out = []
    for node in body:
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and getattr(node, field, None):
                out += _top_level(getattr(node, field))
        if isinstance(node, ast.Try):
            out += [n for handler in node.handlers for n in _top_level(handler.body)]
    return out


@functools.cache
def module_tops() -> dict[str, frozenset[str]]:
    """Dotted name of each repository module -> the names its top level defines (and its submodules)."""
    modules: dict[str, set[str]] = {}
    for path in code_files():
        if path.suffix != ".py":
            continue
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names = modules.setdefault(".".join(parts), set())
        for node in _top_level(tree(path).body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        if len(parts) > 1:
            modules.setdefault(".".join(parts[:-1]), set()).add(parts[-1])
    return {name: frozenset(names) for name, names in modules.items()}


@functools.cache
def repo_classes() -> frozenset[str]:
    return frozenset(
        node.name for path in code_files() for node in ast.walk(tree(path)) if isinstance(node, ast.ClassDef)
    )


def spans(doc: str) -> list[tuple[int, str]]:
    """(line, text) of each backticked span outside fenced blocks."""
    found, fenced = [], False
    for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            found += [(number, span) for span in re.findall(r"`([^`]+)`", line)]
    return found


def _expand(pattern: str) -> list[str]:
    brace = re.search(r"\{([^{}]*)\}", pattern)
    if brace:
        return [
            x for alt in brace[1].split(",") for x in _expand(pattern[: brace.start()] + alt + pattern[brace.end() :])
        ]
    return [pattern]


def path_problem(span: str) -> str | None:
    """None when the path exists (or the span is no repository path); else what is wrong."""
    if not PATH.fullmatch(span) or span.startswith((".", "-")) or ignored(span):
        return None
    first = span.split("/")[0]
    if not (first in repo_entries() and "/" in span or span.endswith(SOURCE_SUFFIXES)):
        return None
    for pattern in _expand(span.rstrip("/")):
        if not any(
            fnmatch.fnmatchcase(entry, pattern) or fnmatch.fnmatchcase(entry, "*/" + pattern)
            for entry in repo_entries()
        ):
            return f"no {pattern} in the repository"
    return None


def dotted_problem(span: str) -> str | None:
    if not DOTTED.fullmatch(span) or span.endswith(FILE_SUFFIXES):
        return None
    parts = span.split(".")
    tops, words = module_tops(), code_words()
    for k in range(len(parts), 0, -1):
        head = ".".join(parts[:k])
        found = [m for m in tops if m == head or m.endswith("." + head)]
        if found:
            rest = parts[k:]
            if rest and not any(rest[0] in tops[m] for m in found):
                return f"{head} ({', '.join(found)}) defines no {rest[0]}"
            missing = [p for p in rest[1:] if p not in words]
            return f"no code defines {', '.join(missing)}" if missing else None
    if parts[0] in repo_classes():
        missing = [p for p in parts[1:] if p not in words]
        return f"no code defines {', '.join(missing)}" if missing else None
    return None  # an importable top-level module passes; anything else is not Python


def identifier_problem(span: str) -> str | None:
    if not IDENTIFIER.fullmatch(span) or span in code_words():
        return None
    if span.isupper() and span.lower() in code_words():
        return None  # a status or action the tools print in capitals
    return f"no code defines or uses {span}"


def problems(doc: str) -> list[str]:
    found = []
    for line, span in spans(doc):
        if span in FOREIGN:
            continue
        problem = path_problem(span) or dotted_problem(span) or identifier_problem(span)
        if problem:
            found.append(f"{doc}:{line}: `{span}`: {problem}")
    return found


@pytest.mark.slow  # reads every Python file of the repository with ast
@pytest.mark.parametrize("doc", DOCS)
def test_every_name_a_doc_gives_exists(doc):
    assert not problems(doc), "\n".join(problems(doc))


@pytest.mark.slow
@pytest.mark.parametrize(
    "span, wrong",
    [
        ("plugins/cni/skel.py", False),
        ("winnet/stale.py", False),
        ("plugins/{win_bridge,flannel}/", False),
        ("plugins/cni/nothere.py", True),
        ("plugins/{win_bridge,nothere}/", True),
        ("gone.py", True),
        ("libhns.client.open_clients", False),
        ("libhns.client.nothere", True),
        ("ownership.freed", False),
        ("os.environ", False),
        ("cluster.local", False),
        ("HcnClient", False),
        ("NoSuchNameAnywhere", True),
        ("/etc/cni/net.d", False),
        ("dist/wincni/", False),
        ("make dist", False),
    ],
)
def test_the_rules_on_spans_that_exist_and_spans_that_do_not(span, wrong):
    problem = path_problem(span) or dotted_problem(span) or identifier_problem(span)
    assert (problem is not None) == wrong, problem


def noqa_without_reason() -> list[str]:
    """The ``# noqa`` comments (comments only: tokenize, not a text search) that give no reason."""
    found = []
    for path in python_files():
        with path.open("rb") as f:
            for token in tokenize.tokenize(f.readline):
                match = NOQA.search(token.string) if token.type == tokenize.COMMENT else None
                if match and not NOQA_WITH_REASON.match(match["rest"]):
                    found.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string}")
    return found


@pytest.mark.slow  # tokenizes every Python file of the repository
def test_every_noqa_names_its_rules_and_says_why():
    """CONTRIBUTING.md's format: ``# noqa: E402 - why`` (rules comma-separated, then `` - `` and
    the reason)."""
    assert not noqa_without_reason(), "\n".join(noqa_without_reason())


@pytest.mark.parametrize(
    "comment, ok",
    [
        ("# noqa: E402 - the registry is on sys.path only now", True),
        ("# noqa: E731, F821 - both, one reason", True),
        ("# noqa: E402", False),
        ("# noqa", False),
        ("# noqa: E402 -", False),
        ("# noqa: e402 - lower case is no rule", False),
    ],
)
def test_the_noqa_format(comment, ok):
    assert bool(NOQA_WITH_REASON.match(NOQA.search(comment)["rest"])) == ok


# ---------------------------------------------------------------- links, the README's length, the doctor's checks

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """The anchors a forge makes of a page's headings: lower case, punctuation but ``-`` and ``_``
    dropped, each space a ``-``."""
    found, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def broken_links(doc: str) -> list[str]:
    found, fenced = [], False
    for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        for target in [] if fenced else LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # another site's
            path, _, anchor = target.partition("#")
            page = (ROOT / doc).parent / path if path else ROOT / doc
            if not page.exists():
                found.append(f"{doc}:{number}: {target}: no {path}")
            elif anchor and (page.suffix != ".md" or anchor not in anchors(page)):
                found.append(f"{doc}:{number}: {target}: no heading #{anchor} in {path or doc}")
    return found


@pytest.mark.parametrize("doc", DOCS)
def test_every_relative_link_resolves(doc):
    assert not broken_links(doc), "\n".join(broken_links(doc))


def test_a_link_to_a_missing_page_or_heading_is_found(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "A.md").write_text("# A page\n## `wincni doctor`: the guide\n")
    (tmp_path / "B.md").write_text(
        "[ok](docs/A.md#wincni-doctor-the-guide) [gone](docs/C.md) [bad](docs/A.md#nothere) [web](https://x.y/#z)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert [p.split(": ", 1)[1] for p in broken_links("B.md")] == [
        "docs/C.md: no docs/C.md",
        "docs/A.md#nothere: no heading #nothere in docs/A.md",
    ]


def test_the_readme_is_read_in_five_minutes():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_LINES


def test_troubleshooting_names_every_doctor_check_in_its_order():
    """A new check without its row in the table (what it verifies, the symptom) fails here."""
    from tools.wincni.doctor.checks.registry import CHECKS

    text = (ROOT / "docs" / "TROUBLESHOOTING.md").read_text()
    table = text[text.index("| check | what it verifies |") :]
    table = table[: table.index("\n\n")]
    assert re.findall(r"^\| `([a-z-]+)`", table, re.M) == [c.id for c in CHECKS]
