"""Run-time hook of every wincni executable: the bundle's Python modules come from one file.

A pod command imports about a hundred modules. As loose ``.pyc`` files each costs a directory stat
and an open (under Wine 4-5 ms a module, ~0.15 ms on Linux; on a Windows node the open is also what
antivirus hooks); PyInstaller's own archive would be one file, but it embeds a copy of it in each of
our six executables. ``wincni.pack`` (written by specs/bootstrap/pack.py) is one file in the shared
contents folder: a 4-byte length, a marshalled index ``({module name: (is package, offset, size)},
{extension module name: its path in the contents folder})``, then each module's marshalled code. The index is read here and the file kept open; a module's code is
read (seek, read) and unmarshalled only when it is imported, so a start pays for what it imports and
not for the 6 MB of the rest. Modules keep the ``__file__`` their loose ``.pyc`` would have had, so
data files beside them (our JSON Schemas, jsonschema's metaschemas) are found as before. Runs before
the command's first import, from the executable itself: it may import nothing that is not built in
or already loaded.
"""

import _thread
import marshal
import os
import sys


class PackFinder:
    """A meta path finder and loader over the modules of ``wincni.pack``, and a finder of the
    bundle's extension modules: the pack's index names where each lies, so importing ``_ctypes``
    costs no listing of the contents folder (the path finder's) nor probes of the other
    ``sys.path`` entries first (base_library.zip, a ``lib-dynload`` that is not there on Windows)."""

    def __init__(self, root, file):
        self.root = root
        self.file = file
        size = int.from_bytes(file.read(4), "little")
        self.modules, self.extensions = marshal.loads(file.read(size))
        self.base = 4 + size
        self.lock = _thread.allocate_lock()  # one file position; imports in two threads take turns

    def find_spec(self, name, path=None, target=None):
        entry = self.modules.get(name)
        if entry is None:
            return self._extension_spec(name)
        is_package = entry[0]
        where = os.path.join(self.root, *name.split("."))
        origin = os.path.join(where, "__init__.pyc") if is_package else where + ".pyc"
        spec = sys.modules["_frozen_importlib"].ModuleSpec(name, self, origin=origin, is_package=is_package)
        spec.has_location = True  # __file__ = origin
        if is_package:
            spec.submodule_search_locations = [where]
        return spec

    def _extension_spec(self, name):
        where = self.extensions.get(name)
        if where is None:
            return None
        origin = os.path.join(self.root, where)
        loader = sys.modules["_frozen_importlib_external"].ExtensionFileLoader(name, origin)
        spec = sys.modules["_frozen_importlib"].ModuleSpec(name, loader, origin=origin)
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        _, offset, size = self.modules[module.__spec__.name]
        with self.lock:
            self.file.seek(self.base + offset)
            code = self.file.read(size)
        exec(marshal.loads(code), module.__dict__)

    def get_resource_reader(self, name):
        """importlib.resources on a packed package reads the files beside it."""
        from importlib.readers import FileReader

        return FileReader(_Located(sys.modules[name].__spec__.origin))

    def invalidate_caches(self):
        """Nothing cached: the pack does not change under a running command."""


class _Located:
    """What FileReader needs of a loader: the module's path."""

    __slots__ = ("path",)

    def __init__(self, path):
        self.path = path


def install(root, pack):
    """Put a finder for ``pack`` ahead of the path finder (built-in and frozen modules stay first)."""
    finder = PackFinder(root, open(pack, "rb", buffering=0))  # open for the life of the command
    names = [getattr(entry, "__name__", "") for entry in sys.meta_path]
    sys.meta_path.insert(names.index("PathFinder") if "PathFinder" in names else len(names), finder)
    return finder


if __name__ == "__main__":
    install(sys._MEIPASS, os.path.join(sys._MEIPASS, "wincni.pack"))
