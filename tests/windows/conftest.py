"""The Windows lane (``make test-windows``): the package zip run as Windows processes under Wine.

Not part of ``make test`` (tests/conftest.py leaves this directory out); run with
``pytest tests/windows`` after ``make dist-windows``. A missing Wine or zip is a failure, not a
skip: this lane must never pass without having run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from winenode import WineNode, toolchain


@pytest.fixture(scope="session")
def package_zip() -> Path:
    from winbuild.dist import newest_zip

    found = newest_zip()
    if found is None:
        pytest.fail("no dist-windows/wincni-*-windows-amd64.zip: run `make dist-windows` first")
    return found


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory, package_zip: Path) -> WineNode:
    try:
        toolchain.ensure_system()
    except toolchain.ToolchainError as e:
        pytest.fail(str(e))
    wine_node = WineNode(tmp_path_factory.mktemp("wine-node"), package_zip)
    yield wine_node
    wine_node.close()


_TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="session")
def timings() -> dict[str, float]:
    """Figures a test measured, printed at the end of the run."""
    return _TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if "hung_add_s" in _TIMINGS:
        terminalreporter.write_line(
            f"Wine: win-bridge.exe answered a hung HcnCreateEndpoint (per-call timeout 3 s) "
            f"in {_TIMINGS['hung_add_s']:.1f} s"
        )
    if "version_s" in _TIMINGS:
        terminalreporter.write_line(
            f"Wine: median win-bridge.exe VERSION {_TIMINGS['version_s']:.2f} s, "
            f"trivial Windows program {_TIMINGS['floor_s']:.2f} s (the Wine floor)"
        )
    if "netpol_cases" in _TIMINGS:  # test_windows_netpol_agent
        cases = _TIMINGS["netpol_cases"]
        terminalreporter.write_line(
            f"Wine: wincni netpol held {len(cases)} cyclonus cases on the node, {sum(c[1] for c in cases)} probes "
            f"walked, in {sum(c[2] for c in cases):.0f} s"
        )
    if "netpol_first_packet" in _TIMINGS:
        terminalreporter.write_line(
            f"Wine: a pod started under a policy: {_TIMINGS['netpol_first_packet']} probes found its endpoint "
            "while its ADD ran, every one blocked"
        )
    for line in toolchain.RETRIED:
        terminalreporter.write_line(f"Wine: ran again after a failed process start: {line}")
    for line in _TIMINGS.get("budget_lines", ()):  # bench/windows.py
        terminalreporter.write_line(line)
