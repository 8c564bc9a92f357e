"""make release's files, from a bundle laid out as PyInstaller and specs/bootstrap/pack.py lay it:
the SBOM and the zip's THIRD-PARTY.txt list what the zip holds (read from the zip, so a package
that slips in is listed), SHA256SUMS verifies with sha256sum, the notes are the changelog's section."""

from __future__ import annotations

import importlib.util
import json
import py_compile
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from winbuild import changelog, dist, release, sbom

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "specs" / "bootstrap"


def _load(name: str):
    found = importlib.util.spec_from_file_location(f"_release_{name}", BOOTSTRAP / f"{name}.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


sys.modules.setdefault("linetable", _load("linetable"))  # pack imports it from its own folder
pack = _load("pack")


def _dist_info(site: Path, name: str, version: str, licence: str, files: list[str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n{licence}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


@pytest.fixture
def toolchain(tmp_path: Path) -> Path:
    """A Windows site folder and the embeddable CPython beside it, as winbuild/toolchain.py lays them."""
    site = tmp_path / "cache" / "site"
    _dist_info(site, "attrs", "26.1.0", "License-Expression: MIT", ["attr/__init__.py", "attrs/__init__.py"])
    _dist_info(
        site, "rpds_py", "2026.9.1", "License-Expression: MIT", ["rpds/__init__.py", "rpds/rpds.cp313-win_amd64.pyd"]
    )
    _dist_info(
        site, "pyinstaller", "6.22.3", "License: GPLv2-or-later with a special exception", ["PyInstaller/__init__.py"]
    )
    _dist_info(site, "unbundled", "1.0", "License-Expression: MIT", ["unbundled.py"])
    python = site.parent / "python"
    python.mkdir()
    with zipfile.ZipFile(python / "python313.zip", "w") as zf:
        zf.writestr("os.pyc", b"")
        zf.writestr("encodings/__init__.pyc", b"")
    (python / "_socket.pyd").write_bytes(b"")
    return site


def _bundle(tmp_path: Path, modules: list[str]) -> Path:
    """A one-folder bundle whose pack holds ``modules`` (a name ending in ``/`` is a package)."""
    bundle = tmp_path / "bundle"
    contents = bundle / "_wincni-0.1.0-abc-20260101T000000Z"
    (contents / "rpds").mkdir(parents=True)
    source = tmp_path / "m.py"
    source.write_text("X = 1\n")
    compiled = py_compile.compile(str(source), cfile=str(tmp_path / "m.pyc"))
    packed = {m.rstrip("/"): (m.endswith("/"), compiled) for m in modules}
    pack.write(packed, {"rpds.rpds": "rpds/rpds.cp313-win_amd64.pyd"}, str(contents))
    for name in (
        "rpds/rpds.cp313-win_amd64.pyd",
        "_socket.pyd",
        "libffi-8.dll",
        "libssl-3.dll",
        "libcrypto-3.dll",
        "python313.dll",
    ):
        (contents / name).write_bytes(b"MZ")
    (bundle / "win-bridge.exe").write_bytes(b"MZ")
    return bundle


def _release(tmp_path: Path, site: Path, modules: list[str]) -> tuple[Path, Path]:
    runtime = dist.wine_runtime(site.parent)
    package_zip = dist.pack(
        _bundle(tmp_path, modules), tmp_path / "dist-windows" / "wincni-0.1.0-windows-amd64.zip", runtime
    )
    image = tmp_path / "wincni-flannel-0.1.0.oci.tar"
    image.write_bytes(b"an image archive")
    out = tmp_path / "dist-release"
    release.write(out, package_zip, image, runtime, (ROOT / "CHANGELOG.md").read_text())
    return out, package_zip


def _sbom_names(out: Path) -> set[str]:
    (bom,) = out.glob("*.cdx.json")
    return {c["name"] for c in json.loads(bom.read_text())["components"]}


MODULES = ["attr/", "attr.validators", "attrs/", "rpds/", "os", "encodings/", "plugins/", "plugins.cni/"]


def test_the_sbom_lists_every_package_the_zip_holds_and_nothing_else(tmp_path: Path, toolchain: Path) -> None:
    out, package_zip = _release(tmp_path, toolchain, MODULES)
    # every third-party module of the zip's pack, and the runtime's DLLs, found by their owners
    assert _sbom_names(out) == {"attrs", "rpds_py", "pyinstaller", "cpython", "libffi", "OpenSSL"}
    bom = json.loads(next(out.glob("*.cdx.json")).read_text())
    assert bom["bomFormat"] == "CycloneDX" and bom["metadata"]["component"]["name"] == "wincni"
    licences = {c["name"]: c["licenses"][0] for c in bom["components"]}
    assert licences["attrs"] == {"license": {"id": "MIT"}}
    assert licences["pyinstaller"] == {"expression": "GPL-2.0-or-later WITH Bootloader-exception"}
    with zipfile.ZipFile(package_zip) as zf:
        third_party = zf.read(dist.THIRD_PARTY).decode()
    assert all(name in third_party for name in ("attrs", "rpds_py", "pyinstaller", "cpython", "libffi", "OpenSSL"))
    assert "unbundled" not in third_party


def test_a_package_left_out_of_the_zip_is_left_out_of_the_sbom(tmp_path: Path, toolchain: Path) -> None:
    out, _ = _release(tmp_path, toolchain, [m for m in MODULES if not m.startswith("attr")])
    assert "attrs" not in _sbom_names(out)


def test_a_module_nobody_owns_stops_the_release(tmp_path: Path, toolchain: Path) -> None:
    with pytest.raises(sbom.SbomError, match="mystery"):
        _release(tmp_path, toolchain, [*MODULES, "mystery/"])


def test_sha256sums_verifies_with_sha256sum_and_catches_a_changed_file(tmp_path: Path, toolchain: Path) -> None:
    out, _ = _release(tmp_path, toolchain, MODULES)
    listed = [line.split("  ")[1] for line in (out / release.SUMS).read_text().splitlines()]
    assert sorted(listed) == sorted(p.name for p in out.iterdir() if p.name != release.SUMS)
    check = subprocess.run([shutil.which("sha256sum"), "-c", release.SUMS], cwd=out, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    (out / release.NOTES).write_text("tampered\n")
    assert subprocess.run([shutil.which("sha256sum"), "-c", release.SUMS], cwd=out, capture_output=True).returncode == 1


def test_the_notes_are_the_changelogs_section(tmp_path: Path, toolchain: Path) -> None:
    out, _ = _release(tmp_path, toolchain, MODULES)
    text = (ROOT / "CHANGELOG.md").read_text()
    assert (
        out / release.NOTES
    ).read_text() == f"# wincni {dist.version()}\n\n{changelog.section(text, dist.version())}"
    assert "### Added" in (out / release.NOTES).read_text()


CHANGES = """# Changelog

## [Unreleased]

### Fixed
- a later fix

## [0.2.0] - 2027-01-01

### Added
- the thing
"""


def test_a_released_version_takes_its_own_section_else_unreleased() -> None:
    assert changelog.section(CHANGES, "0.2.0") == "### Added\n- the thing\n"
    assert changelog.section(CHANGES, "0.3.0") == "### Fixed\n- a later fix\n"
    with pytest.raises(changelog.ChangelogError):
        changelog.section("# Changelog\n\n## [Unreleased]\n\n", "0.3.0")


def test_build_ps1s_release_packs_the_bundle_and_writes_all_but_the_image(
    tmp_path: Path, toolchain: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``build.ps1 -Release``: ``--bundle dist\\wincni --no-image``, with the running Python's
    packages (here the stand-in site folder)."""
    monkeypatch.setattr(sbom, "this_runtime", lambda: dist.wine_runtime(toolchain.parent))
    out = tmp_path / "dist-release"
    (out / "stale.txt").parent.mkdir()
    (out / "stale.txt").write_text("from an earlier release")
    bundle = _bundle(tmp_path, MODULES)
    assert release.main(["--bundle", str(bundle), "--no-image", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [dist.zip_name().name, dist.zip_name().name.removesuffix(".zip") + ".cdx.json", release.NOTES, release.SUMS]
    )
    assert _sbom_names(out) == {"attrs", "rpds_py", "pyinstaller", "cpython", "libffi", "OpenSSL"}
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_without_a_zip_or_image_release_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(dist, "newest_zip", lambda: None)
    assert release.main(["--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == (
        "make release: no package zip or image archive: run `make image` first (it builds both)"
    )
