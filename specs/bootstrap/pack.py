"""Build-time half of ``wincni.pack`` (the run-time half, and why, is pyi_rth_wincni_pack.py).

PyInstaller in noarchive mode lists each pure module as a ``.pyc`` data file of the Analysis;
``take`` moves those into the pack, ``write`` writes it. A module Python or PyInstaller's bootstrap
imports before the run-time hook runs must stay a loose file: ``BOOT``.
"""
import marshal
import os

NAME = "wincni.pack"
RUNTIME_HOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyi_rth_wincni_pack.py")
# Imported before the hook: the codecs of the interpreter's start (encodings) and the archive
# reader of PyInstaller's bootstrap (struct). The rest of what starts Python is frozen or built in.
BOOT = ("encodings", "struct")
_HEADER = 16  # a .pyc's magic, flags and source stamp (PEP 552), before the marshalled code


def module_name(dest: str) -> tuple[str, bool]:
    """``('a.b', is_package)`` of a collected ``a/b.pyc`` or ``a/b/__init__.pyc``."""
    parts = dest[:-len(".pyc")].replace("\\", "/").split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def take(datas: list, packed: dict) -> list:
    """``datas`` without the packable ``.pyc`` entries, which go into ``packed`` (name -> entry)."""
    kept = []
    for entry in datas:
        dest, source, _kind = entry
        if dest.endswith(".pyc"):
            name, is_package = module_name(dest)
            if name.split(".")[0] not in BOOT:
                packed[name] = (is_package, source)
                continue
        kept.append(entry)
    return kept


def write(packed: dict, directory: str) -> str:
    """Write the pack of ``packed`` into ``directory`` (layout: pyi_rth_wincni_pack.py); returns its path."""
    index, blobs, offset = {}, [], 0
    for name, (is_package, source) in sorted(packed.items()):
        with open(source, "rb") as f:
            code = f.read()[_HEADER:]
        index[name] = (is_package, offset, len(code))
        blobs.append(code)
        offset += len(code)
    head = marshal.dumps(index)
    path = os.path.join(directory, NAME)
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(4, "little") + head + b"".join(blobs))
    return path
