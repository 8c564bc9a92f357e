"""winbuild.goref: the Go reference plugins are built for windows/amd64 from their modules, once
per cache, with the Go found on the machine; without Go the lane says how to get it."""

from __future__ import annotations

import json

import pytest

from winbuild import goref, toolchain

# A stand-in for `go`: logs each run with the target platform, answers `version`, `mod download
# -json` (the module's folder) and `build -o OUT` (writes OUT).
FAKE_GO = """#!/bin/sh
echo "$GOOS/$GOARCH $GOFLAGS | $*" >> "{log}"
case "$1" in
  version) echo "go version go0.0 fake" ;;
  mod) mkdir -p "{modules}"; printf '{{"Path":"m","Dir":"%s"}}\\n' "{modules}" ;;
  build) echo exe > "$3" ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path, monkeypatch):
    log = tmp_path / "go.log"
    go = tmp_path / "go"
    go.write_text(FAKE_GO.format(log=log, modules=tmp_path / "modules"))
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    return log


def test_built_once_per_cache_for_windows(tmp_path, fake_go):
    cache = tmp_path / "cache"
    target = goref.ensure_go_plugins(cache)
    assert sorted(p.name for p in target.glob("*.exe")) == [
        "flannel.exe",
        "host-local.exe",
        "win-bridge.exe",
        "win-overlay.exe",
    ]
    runs = fake_go.read_text().splitlines()
    builds = [r for r in runs if "| build" in r]
    assert len(builds) == 4 and all(r.startswith("windows/amd64 -mod=readonly") for r in builds), runs
    assert "| mod download -json github.com/containernetworking/plugins@v1.9.1" in runs[1]
    assert goref.ensure_go_plugins(cache) == target
    assert fake_go.read_text().splitlines()[len(runs) :] == [
        "windows/amd64 -mod=readonly -trimpath -buildvcs=false -modcacherw | version"
    ]  # the stamp holds: nothing rebuilt


def test_without_go_the_lane_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(goref, "GO_FALLBACK", tmp_path / "no-go")
    with pytest.raises(toolchain.ToolchainError, match="GO=/path/to/go"):
        goref.find_go({"PATH": str(tmp_path)})


def test_a_module_the_proxy_refuses_is_named(tmp_path, monkeypatch):
    go = tmp_path / "go"
    go.write_text(
        '#!/bin/sh\n[ "$1" = version ] && exit 0\n'
        f"echo '{json.dumps({'Error': 'github.com/x@v1: 403 Forbidden'})}'; exit 1\n"
    )
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    with pytest.raises(toolchain.ToolchainError, match="403 Forbidden"):
        goref.ensure_go_plugins(tmp_path / "cache")
