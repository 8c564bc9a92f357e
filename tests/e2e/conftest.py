"""What the attacker tests of test_security.py and test_install_security.py share."""

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def arena():
    """A world-writable sticky folder outside the root-only pytest tmp_path, like /tmp."""
    path = Path(tempfile.mkdtemp(prefix="wincni-arena-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim(tmp_path) -> Path:
    """A root-only file the attacker would like root to append to."""
    path = tmp_path / "victim"
    path.write_text("secret\n")
    path.chmod(0o600)
    return path
