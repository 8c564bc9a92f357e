"""Build-time half of ``wincni.pack`` (the run-time half, and why, is pyi_rth_wincni_pack.py).

PyInstaller in noarchive mode lists each pure module as a ``.pyc`` data file of the Analysis;
``take`` moves those into the pack, ``write`` writes it. A module Python or PyInstaller's bootstrap
imports before the run-time hook runs cannot come from the pack: ``BOOT``. Those go into
``base_library.zip`` (``write_boot``), the archive PyInstaller's bootloader puts first on
``sys.path`` and fills only when not in noarchive mode: the interpreter's start imports
``encodings`` through zipimport, one open of one file, instead of listing a folder of 120 codecs
and opening each module it needs as a loose file (7-18 ms of every start under Wine).

Both keep only what a command can load (a module the interpreter has frozen is always taken from
the interpreter; a codec outside ``CODECS`` is never asked for) and store code with line numbers
but no column ranges (linetable.py).
"""

import _imp
import marshal
import os
import zipfile

import linetable

NAME = "wincni.pack"
BOOT_ZIP = "base_library.zip"
RUNTIME_HOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyi_rth_wincni_pack.py")
# Imported before the hook: the codecs of the interpreter's start (encodings) and the archive
# reader of PyInstaller's bootstrap (struct). The rest of what starts Python is frozen or built in.
BOOT = ("encodings", "struct")
# The codecs a command can meet: Unicode, ASCII and Latin-1, the Windows code pages through the
# system (mbcs, oem), cp437 (zipfile's names without the UTF-8 flag) and cp1252 (the default ANSI
# page), and idna: the socket module and ssl encode every host name with it (`wincni netpol` and its
# API server). Stdio and open() are UTF-8 (the executables run in UTF-8 mode); nothing decodes an
# East Asian page.
CODECS = frozenset(
    "aliases ascii latin_1 utf_8 utf_8_sig utf_16 utf_16_le utf_16_be utf_32 utf_32_le utf_32_be"
    " unicode_escape raw_unicode_escape mbcs oem cp437 cp1252 idna".split()
)
# importlib's own halves: importlib/__init__ takes them from the interpreter (_frozen_importlib).
_INTERPRETERS = {"importlib._bootstrap", "importlib._bootstrap_external"}
_HEADER = 16  # a .pyc's magic, flags and source stamp (PEP 552), before the marshalled code


def module_name(dest: str) -> tuple[str, bool]:
    """``('a.b', is_package)`` of a collected ``a/b.pyc`` or ``a/b/__init__.pyc``."""
    parts = dest[: -len(".pyc")].replace("\\", "/").split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def loadable(name: str) -> bool:
    """Whether a command could ever load ``name`` from the bundle: the interpreter's frozen modules
    are found before the bundle's (the frozen importer comes first), and an unlisted codec is never
    looked up."""
    if _imp.is_frozen(name) or name in _INTERPRETERS:
        return False
    package, _, last = name.partition(".")
    return package != "encodings" or last in CODECS or not last


def take(datas: list, packed: dict, boot: dict) -> list:
    """``datas`` without its ``.pyc`` entries: the packable ones go into ``packed`` (name -> entry),
    the ``BOOT`` ones into ``boot`` (path in the archive -> compiled file); those no command can
    load go nowhere."""
    kept = []
    for entry in datas:
        dest, source, _kind = entry
        if dest.endswith(".pyc"):
            name, is_package = module_name(dest)
            if not loadable(name):
                continue
            if name.split(".")[0] in BOOT:
                boot[dest.replace("\\", "/")] = source
            else:
                packed[name] = (is_package, source)
            continue
        kept.append(entry)
    return kept


def code_of(source: str) -> bytes:
    """The marshalled code of a compiled ``.pyc``, line numbers kept and column ranges dropped."""
    with open(source, "rb") as f:
        code = marshal.loads(f.read()[_HEADER:])
    stripped = linetable.lines_only(code)
    linetable.check(code, stripped)
    return marshal.dumps(stripped)


def write_boot(boot: dict, directory: str) -> str:
    """Write ``base_library.zip`` of ``boot`` into ``directory`` (stored, not deflated: nothing to
    inflate at start; a fixed date, so the same modules give the same bytes); returns its path."""
    path = os.path.join(directory, BOOT_ZIP)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for dest, source in sorted(boot.items()):
            with open(source, "rb") as f:
                header = f.read(_HEADER)
            zf.writestr(zipfile.ZipInfo(dest, (1980, 1, 1, 0, 0, 0)), header + code_of(source))
    return path


def extension_name(dest: str) -> str:
    """The module name of a collected extension module: ``select.pyd`` -> ``select``,
    ``rpds/rpds.cp313-win_amd64.pyd`` -> ``rpds.rpds``; PyInstaller puts the standard library's
    under ``python3.X/lib-dynload/`` on Linux, which is no package."""
    parts = dest.replace("\\", "/").split("/")
    if len(parts) > 2 and parts[-2] == "lib-dynload":
        parts = parts[-1:]
    return ".".join(parts[:-1] + [parts[-1].split(".")[0]])


def extensions(binaries: list) -> dict:
    """Module name -> path in the contents folder of each extension module in ``binaries``."""
    return {extension_name(dest): dest for dest, _source, kind in binaries if kind == "EXTENSION"}


def write(packed: dict, extension_paths: dict, directory: str) -> str:
    """Write the pack of ``packed`` into ``directory`` (layout: pyi_rth_wincni_pack.py), its index
    also naming where each extension module lies; returns its path."""
    index, blobs, offset = {}, [], 0
    for name, (is_package, source) in sorted(packed.items()):
        code = code_of(source)
        index[name] = (is_package, offset, len(code))
        blobs.append(code)
        offset += len(code)
    head = marshal.dumps((index, dict(sorted(extension_paths.items()))))
    path = os.path.join(directory, NAME)
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(4, "little") + head + b"".join(blobs))
    return path
