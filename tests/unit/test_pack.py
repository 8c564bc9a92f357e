"""wincni.pack: the bundle's pure modules in one file (specs/bootstrap/pack.py builds it, the
run-time hook pyi_rth_wincni_pack.py serves it). Built here from .pyc files laid out as PyInstaller's
noarchive mode collects them, then imported through the hook's finder."""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import marshal
import py_compile
import sys
import threading
import types
import zipfile
import zipimport
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

BOOTSTRAP = Path(__file__).resolve().parents[2] / "specs" / "bootstrap"


def load(name: str):
    found = importlib.util.spec_from_file_location(f"_test_{name}", BOOTSTRAP / f"{name}.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


linetable = sys.modules["linetable"] = load("linetable")  # pack imports it as the spec does, from its folder
pack = load("pack")
hook = load("pyi_rth_wincni_pack")

SOURCES = {
    "packdemo/__init__.py": "GREETING = 'from the pack'\n",
    "packdemo/reader.py": "import os\nwith open(os.path.join(os.path.dirname(__file__), 'data.json')) as f:\n"
    "    DATA = f.read()\n",
    "packdemo/broken.py": "VALUE = 1\nraise RuntimeError('module body failed')\n",
    "packdemo/sub/__init__.py": "",
    "packdemo/sub/deep.py": "from .. import GREETING\nVALUE = GREETING + ' (deep)'\n",
    **{f"packdemo/many/m{i}.py": f"VALUE = {i}\n" for i in range(40)},
    "packdemo/many/__init__.py": "",
    "struct.py": "raise AssertionError('a boot module is never packed')\n",
    "encodings/utf_8.py": "raise AssertionError('a boot module is never packed')\n",
    "encodings/big5.py": "raise AssertionError('a codec no command asks for is not shipped')\n",
    "importlib/_bootstrap.py": "raise AssertionError('the interpreter has its own')\n",
    "os.py": "raise AssertionError('the interpreter has it frozen')\n",
}


# An extension module of this interpreter that nothing here imports: the bundle's index names it
# under the folder PyInstaller gives the standard library's on Linux.
_EXT = next(
    m
    for m in ("_lsprof", "mmap", "_bisect", "_heapq", "array")
    if m not in sys.modules and getattr(importlib.util.find_spec(m), "origin", "").endswith((".so", ".pyd"))
)
EXTENSION = (
    f"python3.X/lib-dynload/{Path(importlib.util.find_spec(_EXT).origin).name}",
    importlib.util.find_spec(_EXT).origin,
)


@pytest.fixture
def bundle(tmp_path):
    """A contents folder as the spec makes it: wincni.pack, base_library.zip and the data files."""
    work, root = tmp_path / "work", tmp_path / "contents"
    datas = []
    for rel, text in SOURCES.items():
        source = work / "src" / rel
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(text)
        compiled = work / "pyc" / (rel[:-3] + ".pyc")
        py_compile.compile(str(source), str(compiled), doraise=True)
        datas.append((rel[:-3] + ".pyc", str(compiled), "DATA"))
    (work / "data.json").write_text('{"kept": "beside the module"}')
    datas.append(("packdemo/data.json", str(work / "data.json"), "DATA"))
    packed: dict = {}
    boot: dict = {}
    kept = pack.take(datas, packed, boot)
    root.mkdir()
    pack.write(
        packed, pack.extensions([(EXTENSION[0], "", "EXTENSION"), ("VCRUNTIME140.dll", "", "BINARY")]), str(root)
    )
    pack.write_boot(boot, str(root))
    for dest, source, _ in [*kept, (*EXTENSION, "EXTENSION")]:  # what COLLECT copies
        (root / dest).parent.mkdir(parents=True, exist_ok=True)
        (root / dest).write_bytes(Path(source).read_bytes())
    saved = list(sys.meta_path)
    finder = hook.install(str(root), str(root / pack.NAME))
    yield root, finder, kept
    sys.meta_path[:] = saved
    finder.file.close()
    for name in [m for m in sys.modules if m in ("packdemo", _EXT) or m.startswith("packdemo.")]:
        del sys.modules[name]


def test_modules_come_from_the_pack_and_only_data_stay_loose(bundle):
    root, finder, kept = bundle
    assert [dest for dest, _, _ in kept] == ["packdemo/data.json"]
    assert not list(root.glob("**/*.pyc"))
    packdemo = importlib.import_module("packdemo")
    assert packdemo.GREETING == "from the pack"
    assert packdemo.__spec__.loader is finder
    assert packdemo.__file__ == str(root / "packdemo" / "__init__.pyc")
    assert packdemo.__path__ == [str(root / "packdemo")]


def test_boot_modules_are_stored_in_base_library_zip_for_zipimport(bundle):
    """What starts the interpreter before the hook: one archive PyInstaller's bootloader puts first on
    sys.path, read by zipimport (no folder of 120 codecs to list, no loose file per module)."""
    root, _, _ = bundle
    archive = root / pack.BOOT_ZIP
    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == ["encodings/utf_8.pyc", "struct.pyc"]
        assert {info.compress_type for info in zf.infolist()} == {zipfile.ZIP_STORED}
    importer = zipimport.zipimporter(str(archive))
    assert importer.find_spec("struct").origin == str(archive / "struct.pyc")
    demo = zipimport.zipimporter(str(archive / "encodings"))
    assert demo.get_code("utf_8").co_filename.endswith("utf_8.py")
    with pytest.raises(AssertionError, match="never packed"):
        exec(demo.get_code("utf_8"), {})


def test_an_extension_module_is_found_through_the_index_without_the_path_finder(bundle, monkeypatch):
    """The index says where each extension module lies: no sys.path entry is searched (under Wine
    the path finder listed the contents folder and probed base_library.zip and lib-dynload)."""
    root, finder, _ = bundle
    monkeypatch.setattr(sys, "path", [])
    sys.path_importer_cache.clear()
    module = importlib.import_module(_EXT)
    assert module.__spec__.loader.__class__.__name__ == "ExtensionFileLoader"
    assert module.__file__ == str(root / EXTENSION[0])
    assert finder.find_spec("VCRUNTIME140") is None and finder.find_spec("absent") is None


@pytest.mark.parametrize(
    "dest, expected",
    [
        ("_ctypes.pyd", "_ctypes"),
        ("rpds\\rpds.cp313-win_amd64.pyd", "rpds.rpds"),
        ("python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so", "_json"),
        ("rpds/rpds.cpython-311-x86_64-linux-gnu.so", "rpds.rpds"),
    ],
)
def test_module_names_of_collected_extensions(dest, expected):
    assert pack.extension_name(dest) == expected


def test_a_packed_module_finds_the_data_files_beside_it(bundle):
    root, _, _ = bundle
    assert importlib.import_module("packdemo.reader").DATA == '{"kept": "beside the module"}'
    files = importlib.resources.files("packdemo")
    assert files.joinpath("data.json").read_text() == '{"kept": "beside the module"}'


def test_relative_imports_and_subpackages_resolve_in_the_pack(bundle):
    deep = importlib.import_module("packdemo.sub.deep")
    assert deep.VALUE == "from the pack (deep)"
    assert deep.__file__.endswith(str(Path("packdemo", "sub", "deep.pyc")))


def test_a_module_that_is_not_packed_is_found_as_a_loose_file_in_its_package(bundle):
    root, _, _ = bundle
    (root / "packdemo" / "loose.py").write_text("VALUE = 'loose'\n")
    importlib.invalidate_caches()
    assert importlib.import_module("packdemo.loose").VALUE == "loose"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("packdemo.absent")


def test_an_error_in_a_packed_module_body_is_raised_with_its_traceback(bundle):
    with pytest.raises(RuntimeError, match="module body failed") as caught:
        importlib.import_module("packdemo.broken")
    assert any(entry.name == "<module>" and str(entry.path).endswith("broken.py") for entry in caught.traceback)
    assert "packdemo.broken" not in sys.modules


def test_imports_from_several_threads_at_once_each_get_their_own_module(bundle):
    got, barrier = {}, threading.Barrier(8)

    def worker(k: int) -> None:
        barrier.wait()
        for i in range(k, 40, 8):
            got[i] = importlib.import_module(f"packdemo.many.m{i}").VALUE

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {i: i for i in range(40)}


@pytest.mark.parametrize(
    "dest, expected",
    [
        ("plugins/cni/skel.pyc", ("plugins.cni.skel", False)),
        ("plugins\\cni\\__init__.pyc", ("plugins.cni", True)),
        ("__future__.pyc", ("__future__", False)),
    ],
)
def test_module_names_of_collected_pyc_paths(dest, expected):
    assert pack.module_name(dest) == expected


def test_our_bundled_code_neither_reads_docstrings_nor_relies_on_asserts():
    """The spec builds with optimize=2, which drops both: a ``__doc__`` would read None, an assert
    would never run."""
    import ast

    root = BOOTSTRAP.parents[1]
    found = []
    for path in sorted(p for pkg in ("basics", "libhns", "plugins", "tools") for p in root.glob(f"{pkg}/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assert) or (isinstance(node, ast.Attribute) and node.attr == "__doc__"):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, found


def test_what_no_command_can_load_is_in_neither_archive(bundle):
    """A module the interpreter has frozen is found before the pack; a codec outside CODECS is never
    asked for."""
    root, finder, _ = bundle
    assert "packdemo.many.m0" in finder.modules
    assert not {"os", "importlib._bootstrap", "encodings.big5"} & set(finder.modules)
    with zipfile.ZipFile(root / pack.BOOT_ZIP) as zf:
        assert "encodings/big5.pyc" not in zf.namelist()


def test_packed_code_keeps_its_line_numbers_and_drops_its_columns(bundle):
    root, finder, _ = bundle
    with pytest.raises(RuntimeError) as caught:
        importlib.import_module("packdemo.broken")
    assert caught.traceback[-1].lineno == 1  # 0-based: the raise on line 2
    _, offset, size = finder.modules["packdemo.broken"]
    finder.file.seek(finder.base + offset)
    assert {p[2:] for p in marshal.loads(finder.file.read(size)).co_positions()} == {(None, None)}


SAMPLE = """
def outer(items):
    total = 0
    for item in items:
        try:
            total += item["value"] if item else 0
        except (KeyError, TypeError) as exc:
            raise ValueError(f"bad {item!r}") from exc
    return [lambda: total, {k: v for k, v in enumerate(items)}]


class Kind:
    x: int = 1

    def method(self):
        while True:
            with open(__file__) as f:
                return f.read()
"""


def _codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


@pytest.mark.parametrize("source", [SAMPLE, Path(pack.__file__).read_text(), Path(hook.__file__).read_text()])
def test_lines_only_keeps_every_instruction_s_line_and_no_column(source):
    code = compile(source, "sample.py", "exec")
    stripped = linetable.lines_only(code)
    linetable.check(code, stripped)
    for original, new in zip(_codes(code), _codes(stripped)):
        assert [p[0] for p in new.co_positions()] == [p[0] for p in original.co_positions()]
        assert {p[2:] for p in new.co_positions()} == {(None, None)}
    assert len(marshal.dumps(stripped)) < len(marshal.dumps(code))


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 3)), min_size=1, max_size=40))
def test_lines_only_over_any_spacing_of_statements_and_loops(layout):
    """Line deltas of any size and sign (loops jump back; blank runs make large steps)."""
    lines = []
    for gap, kind in layout:
        lines += [""] * gap
        lines.append(["x = 1", "for i in range(2):\n    x += i", "while x > 5:\n    x -= 1", "y = [x\n, 2]"][kind])
    code = compile("\n".join(lines) + "\n", "gen.py", "exec")
    linetable.check(code, linetable.lines_only(code))


def test_check_refuses_a_table_that_reads_differently():
    """The same instructions on other lines: what a misread table would give."""
    code = compile("a = 1\nb = 2\n", "two.py", "exec")
    spaced = compile("a = 1\n\nb = 2\n", "two.py", "exec")
    assert code.co_code == spaced.co_code
    with pytest.raises(ValueError, match="line table differs"):
        linetable.check(code, linetable.lines_only(spaced))
