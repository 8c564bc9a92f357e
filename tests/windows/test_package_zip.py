"""The package zip: the bundle (launchers + this build's contents folder), the sample configs, INSTALL.txt,
THIRD-PARTY.txt (what it carries, under which licences)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tools.wincni.node.installed import CONTENTS_PREFIX
from winbuild.dist import COMMANDS


def test_zip_holds_the_bundle_the_samples_and_install_notes(package_zip: Path) -> None:
    with zipfile.ZipFile(package_zip) as zf:
        names = zf.namelist()
        top = {n.split("/")[0] for n in names}
        [contents] = [t for t in top if t.startswith(CONTENTS_PREFIX)]  # this build's own, for wincni install
        assert top == {*(f"{c}.exe" for c in COMMANDS), contents, "samples", "INSTALL.txt", "THIRD-PARTY.txt"}, sorted(
            top
        )
        samples = [n for n in names if n.startswith("samples/")]
        assert sorted(samples) == ["samples/cni.conf.l2bridge.json", "samples/cni.conf.overlay.json"]
        assert {json.loads(zf.read(n))["delegate"]["type"] for n in samples} == {"win-bridge", "win-overlay"}
        # The Windows CPython and the plugins' JSON Schemas travel inside the contents folder.
        assert f"{contents}/python313.dll" in names
        assert any(n.startswith(f"{contents}/plugins/") and n.endswith("schema.json") for n in names)
