"""Where the tests' fixtures and goldens live: inside the repository, so a bare clone passes.

``data/fixtures`` holds configs as real nodes have them; ``data/goldens`` holds recorded runs of
the Go reference plugins (see the README in each).
"""
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = DATA / "fixtures"
GOLDENS = DATA / "goldens"
