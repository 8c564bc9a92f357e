"""Where the tests' fixtures and goldens live: inside the repository, so a bare clone passes.

``data/fixtures`` holds configs as real nodes have them; ``data/goldens`` holds recorded runs of
the Go reference plugins (see the README in each).
"""

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = DATA / "fixtures"
GOLDENS = DATA / "goldens"
REALHNS = DATA / "realhns"  # HNS documents captured on real nodes (its README)
SERVICES = DATA / "services"  # kube-proxy's HNS objects for Services, as HNS lists them (its README)
KUBEPROXY = DATA / "kubeproxy"  # what the real kube-proxy left on HNS in the Windows lane (its README)
PARITY = DATA / "parity"  # the parity suite's transcripts the simulator is held to (its README)


def require_frozen(dist: Path, *names: str) -> None:
    """Fail, never skip, when ``dist`` holds none of the executables ``names``: a frozen test that
    cannot run says how to build what it needs (``-m "not frozen"`` leaves them out on purpose)."""
    if not any((dist / name).is_file() for name in names):
        pytest.fail(
            f"no frozen executables in {dist}: run `make dist` (`make test` builds them when missing or "
            "older than the code; build.ps1 on Windows), or leave these tests out with -m 'not frozen'",
            pytrace=False,
        )
