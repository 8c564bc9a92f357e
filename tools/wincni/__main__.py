"""``python -m tools.wincni``: the ``wincni`` command (``cli.main``)."""

from tools.wincni.cli.main import entry

if __name__ == "__main__":
    entry()
