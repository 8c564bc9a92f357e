"""winbuild.gobuild: every Go program from one table, built once per cache for its platform (ours
from our own main package, the rest in their module's folder), reused without running Go; a `go`
that fails, hangs or is missing is a GoBuildError saying why and what to install."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from winbuild import gobuild, toolchain

# A stand-in for `go`: logs each run (platform, flags, folder, arguments), answers `version`,
# `mod download -json` (the module's folder) and `build -o OUT` (writes OUT).
FAKE_GO = """#!/bin/sh
echo "$GOOS/$GOARCH $GOFLAGS | $(pwd) | $*" >> "{log}"
case "$1" in
  version) echo "go version go0.0 fake" ;;
  mod) mkdir -p "{modules}"; printf '{{"Path":"m","Dir":"%s"}}\\n' "{modules}" ;;
  build) echo exe > "$3" ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "go.log"
    go = tmp_path / "go"
    go.write_text(FAKE_GO.format(log=log, modules=tmp_path / "modules"))
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    return log


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_module_s_program_is_built_in_its_module_folder_once_per_cache(tmp_path: Path, fake_go: Path) -> None:
    cache = tmp_path / "cache"
    exe = gobuild.build("win-overlay.exe", cache)
    assert exe.read_text() == "exe\n" and exe.name == "win-overlay.exe"
    first = runs(fake_go)
    assert [r.split(" | ")[2] for r in first] == [
        "mod download -json github.com/containernetworking/plugins@v1.9.1",
        f"build -o {exe.parent}/win-overlay.exe.{os.getpid()}.tmp ./plugins/main/windows/win-overlay",
        "version",
    ]
    assert first[1] == (
        f"windows/amd64 -mod=readonly -trimpath -buildvcs=false -modcacherw | {tmp_path / 'modules'} | {first[1].split(' | ')[2]}"
    )
    stamp = (exe.parent / "BUILT").read_text()
    assert stamp.startswith(
        "win-overlay.exe: github.com/containernetworking/plugins@v1.9.1 ./plugins/main/windows/win-overlay"
    )
    assert stamp.endswith("go version go0.0 fake\n")
    assert gobuild.build("win-overlay.exe", cache) == exe
    assert runs(fake_go) == first  # reused: Go not even run


def test_our_own_main_is_built_from_its_folder_for_linux(tmp_path: Path, fake_go: Path) -> None:
    exe = gobuild.build("etcd", tmp_path / "cache")
    (build,) = [r for r in runs(fake_go) if "| build" in r]
    platform, folder, _ = build.split(" | ")
    assert platform.startswith("linux/amd64 ") and folder == str(gobuild.GOMAIN / "etcd")
    assert "main.go " in (exe.parent / "BUILT").read_text()  # the digest of what was compiled


def test_a_changed_main_or_version_is_a_new_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "gomain" / "x"
    folder.mkdir(parents=True)
    (folder / "main.go").write_text("package main\n")
    monkeypatch.setattr(gobuild, "GOMAIN", tmp_path / "gomain")
    program = gobuild.Program("example.com/m", "v1.0.0", main="x")
    before = gobuild.target("x", program, tmp_path)
    assert gobuild.target("x", gobuild.Program("example.com/m", "v1.0.1", main="x"), tmp_path) != before
    (folder / "main.go").write_text("package main // changed\n")
    assert gobuild.target("x", program, tmp_path) != before
    assert before.parent.parent == tmp_path and before.name == "x"


def test_our_mains_require_the_version_the_table_names() -> None:
    mains = {p.main: p for p in gobuild.PROGRAMS.values() if p.main}
    assert sorted(mains) == sorted(p.name for p in gobuild.GOMAIN.iterdir())
    for folder, program in mains.items():
        go_mod = (gobuild.GOMAIN / folder / "go.mod").read_text()
        required = rf"^(?:require |\t){re.escape(program.module)} {re.escape(program.version)}$"  # alone or in a block
        assert re.search(required, go_mod, re.M), folder
        assert (gobuild.GOMAIN / folder / "go.sum").is_file()


def test_the_reference_plugins_are_windows_programs() -> None:
    assert {gobuild.PROGRAMS[n].goos for n in gobuild.REFERENCE_PLUGINS} == {"windows"}


def test_a_hung_go_is_ended_with_its_children_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    child = tmp_path / "child.pid"
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\nsleep 30 &\necho $! > {child}\nwait\n")
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    monkeypatch.setattr(gobuild, "GO_TIMEOUT_S", 0.5)
    with pytest.raises(
        gobuild.GoBuildError,
        match=r"`go mod download -json sigs.k8s.io/kustomize/kustomize/v5@v\S+` did not finish in 0.5 s: "
        r"is the Go module proxy reachable",
    ):
        gobuild.build("kustomize", tmp_path / "cache")
    pid = int(child.read_text())
    for _ in range(50):  # the kill is delivered; the zombie is reaped by init
        if not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text():
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"go's child {pid} outlived the timeout")


def test_without_go_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuild, "GO_FALLBACK", tmp_path / "no-go")
    with pytest.raises(gobuild.GoBuildError, match=r"install Go 1\.26 or later .* GO=/path/to/go") as caught:
        gobuild.find_go({"PATH": str(tmp_path)})
    assert isinstance(caught.value, toolchain.ToolchainError)  # one hierarchy: the lane's callers catch it


def test_a_module_the_proxy_refuses_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\necho '{json.dumps({'Error': 'github.com/x@v1: 403 Forbidden'})}'; exit 1\n")
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    with pytest.raises(gobuild.GoBuildError, match=r"failed \(exit 1\):\n.*403 Forbidden"):
        gobuild.build("crane", tmp_path / "cache")


def test_the_cli_prints_paths_and_refuses_unknown_names(
    tmp_path: Path, fake_go: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WINCNI_GO_CACHE", str(tmp_path / "cache"))
    assert gobuild.main(["crane", "kubectl"]) == 2
    assert capsys.readouterr().err.startswith("winbuild.gobuild: no program 'kubectl': choose from kustomize, crane,")
    assert not fake_go.exists()  # nothing built before the names are checked
    assert gobuild.main(["crane"]) == 0
    assert capsys.readouterr().out == f"{gobuild.target('crane', gobuild.PROGRAMS['crane'], tmp_path / 'cache')}\n"
