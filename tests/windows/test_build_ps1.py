"""build.ps1 cannot run here (no PowerShell in the registries), so it is at least parsed.

tree-sitter-powershell's grammar is not PowerShell's own parser. Where the grammar lacks valid
syntax, build.ps1 is written in a form both accept, and the gap is listed here: grammar 0.26 does
not know numeric multiplier suffixes (``1MB``), so build.ps1 writes ``1048576``. Anything else the
grammar rejects fails this test with its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_powershell

from winbuild.dist import COMMANDS, ROOT

BUILD_PS1 = ROOT / "build.ps1"


def _nodes(node: tree_sitter.Node):
    yield node
    for child in node.children:
        yield from _nodes(child)


def _parse(path: Path) -> tuple[bytes, tree_sitter.Node]:
    source = path.read_bytes()
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    return source, parser.parse(source).root_node


def test_build_ps1_parses_without_errors() -> None:
    source, root = _parse(BUILD_PS1)
    bad = [
        f"line {n.start_point[0] + 1}: {'missing' if n.is_missing else 'cannot parse'} "
        f"{source[n.start_byte : n.end_byte][:60].decode(errors='replace')!r}"
        for n in _nodes(root)
        if n.type == "ERROR" or n.is_missing
    ]
    assert not bad and not root.has_error, "build.ps1 syntax errors:\n" + "\n".join(bad)


def test_build_ps1_builds_what_make_dist_windows_builds() -> None:
    """The same spec and the same executables as winbuild/dist.py, so one checks the other."""
    source, root = _parse(BUILD_PS1)
    literals = {
        source[n.start_byte : n.end_byte].decode().strip("'\"")
        for n in _nodes(root)
        if n.type in ("string_literal", "expandable_string_literal")
    }
    assert {*COMMANDS, "specs\\wincni.spec"} <= literals, sorted(literals)


def test_the_parse_check_fails_on_a_syntax_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ps1"
    broken.write_text("function Broken {\n    if ($x -eq 1) {\n        Write-Host 'x'\n")
    assert _parse(broken)[1].has_error


def test_install_gives_the_plugin_folder_an_admin_only_acl() -> None:
    """-Install: SYSTEM and Administrators full control, Users read/execute, inheritance from
    above removed, owner Administrators, and everything inside reset to inherit exactly that
    (well-known SIDs, so any Windows language works); before and after copying."""
    source, root = _parse(BUILD_PS1)
    literals = {
        source[n.start_byte : n.end_byte].decode().strip("'\"")
        for n in _nodes(root)
        if n.type in ("string_literal", "expandable_string_literal")
    }
    assert {
        "/inheritance:r",
        "/grant:r",
        "*S-1-5-18:(OI)(CI)F",
        "*S-1-5-32-544:(OI)(CI)F",
        "*S-1-5-32-545:(OI)(CI)RX",
        "/setowner",
        "*S-1-5-32-544",
        "/reset",
        "/T",
    } <= literals, sorted(literals)
    text = source.decode()
    install = text[text.index("function Install-Bundle") :]
    assert install.index("Protect-CniBinDir") < install.index("Copy-Item") < install.index("Reset-CniBinDirContents")


@pytest.mark.parametrize("name", ["start-flanneld.ps1", "start-kube-proxy.ps1", "kubeconfig.ps1"])
def test_the_deploy_scripts_parse_without_errors(name: str) -> None:
    """deploy/'s HostProcess start scripts run only on a cluster: here they are at least parsed."""
    path = ROOT / "deploy" / name
    source, root = _parse(path)
    bad = [
        f"line {n.start_point[0] + 1}: {source[n.start_byte : n.end_byte][:60].decode(errors='replace')!r}"
        for n in _nodes(root)
        if n.type == "ERROR" or n.is_missing
    ]
    assert not bad and not root.has_error, f"{name} syntax errors:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", ["parity.yml", "release.yml"])
def test_the_workflows_powershell_parses_without_errors(tmp_path: Path, name: str) -> None:
    """Each pwsh `run:` of the workflows that run build.ps1, parsed as build.ps1 is."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"] if s.get("shell") == "pwsh"]
    assert steps and any("build.ps1" in s["run"] for s in steps)
    for i, step in enumerate(steps):
        script = tmp_path / f"step{i}.ps1"
        script.write_text(step["run"])
        source, root = _parse(script)
        bad = [f"line {n.start_point[0] + 1}" for n in _nodes(root) if n.type == "ERROR" or n.is_missing]
        assert not bad and not root.has_error, f"{step['name']}: " + ", ".join(bad)


def test_test_real_hns_runs_the_parity_suite_elevated_on_hcn() -> None:
    """-TestRealHns: refused without elevation before the build, then tests\\parity on the hcn
    backend with the adapter options (tests/parity/conftest.py reads them)."""
    source, root = _parse(BUILD_PS1)
    literals = {
        source[n.start_byte : n.end_byte].decode().strip("'\"")
        for n in _nodes(root)
        if n.type in ("string_literal", "expandable_string_literal")
    }
    assert {"hcn", "tests\\parity", "WINCNI_PARITY_ADAPTER", "WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER"} <= literals
    text = source.decode()
    assert text.index("$TestRealHns -and -not (Test-Elevated)") < text.index("Push-Location $Root")
