"""``make image``'s builder (winbuild/image.py): deploy/Dockerfile's files, as its COPY lines lay them
out, in one Windows-format layer of an OCI image archive for windows/amd64, written by crane (built
from the Go module proxy) through a registry of its own on loopback. The package zip and flanneld.exe
are stand-ins here (``make image`` stages the real ones)."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from gotool import go_tool
from winbuild import image

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def crane() -> Path:
    return go_tool("crane", "build the image archive")


def blob(archive: tarfile.TarFile, digest: str) -> bytes:
    return archive.extractfile("blobs/" + digest.replace(":", "/")).read()


def test_the_archive_holds_the_dockerfile_s_files_for_windows(tmp_path: Path) -> None:
    context = tmp_path / "deploy"
    context.mkdir()
    for name in ("Dockerfile", "start-flanneld.ps1", "start-kube-proxy.ps1", "kubeconfig.ps1"):
        shutil.copy(DEPLOY / name, context / name)
    (context / "image" / "wincni" / "_wincni-0.1.0-abc-1").mkdir(parents=True)
    (context / "image" / "wincni" / "wincni.exe").write_bytes(b"MZ wincni")
    (context / "image" / "wincni" / "_wincni-0.1.0-abc-1" / "base_library.zip").write_bytes(b"PK")
    (context / "image" / "flanneld.exe").write_bytes(b"MZ flanneld")

    out = image.build(context, tmp_path / "wincni-flannel.oci.tar", "test", crane())

    with tarfile.open(out) as archive:
        assert json.loads(archive.extractfile("oci-layout").read())["imageLayoutVersion"] == "1.0.0"
        [entry] = json.loads(archive.extractfile("index.json").read())["manifests"]
        manifest = json.loads(blob(archive, entry["digest"]))
        config = json.loads(blob(archive, manifest["config"]["digest"]))
        assert (config["os"], config["architecture"]) == ("windows", "amd64")
        [layer] = manifest["layers"]
        files = tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob(archive, layer["digest"]))))
        names = set(files.getnames())
    assert {
        "Files",
        "Hives",
        "Files/wincni/wincni.exe",
        "Files/wincni/_wincni-0.1.0-abc-1/base_library.zip",
        "Files/flannel/flanneld.exe",
        "Files/flannel/start-flanneld.ps1",
        "Files/flannel/start-kube-proxy.ps1",
        "Files/flannel/kubeconfig.ps1",
    } <= names
    assert all(n in ("Files", "Hives") or n.startswith("Files/") for n in names), names


def test_the_archive_pushes_as_the_readme_says(tmp_path: Path) -> None:
    """docs/INSTALL.md, "The image": unpacked, then ``crane push <folder>`` (the archive file itself is read
    as a docker tarball and refused)."""
    import subprocess

    context = tmp_path / "deploy"
    (context / "image").mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM x\nCOPY image/flanneld.exe /flannel/flanneld.exe\n")
    (context / "image" / "flanneld.exe").write_bytes(b"MZ flanneld")
    out = image.build(context, tmp_path / "wincni-flannel.oci.tar", "test", crane())
    layout = tmp_path / "oci"
    layout.mkdir()
    with tarfile.open(out) as archive:
        archive.extractall(layout)
    with image._Registry(crane()) as registry:
        pushed = subprocess.run(
            [str(crane()), "push", str(layout), f"{registry}/wincni-flannel:test", "--insecure"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert pushed.returncode == 0, pushed.stderr
        as_file = subprocess.run(
            [str(crane()), "push", str(out), f"{registry}/wincni-flannel:file", "--insecure"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert as_file.returncode != 0 and "manifest.json" in as_file.stderr


def test_a_missing_staged_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM x\nCOPY image/flanneld.exe /flannel/flanneld.exe\n")
    with pytest.raises(FileNotFoundError, match="image/flanneld.exe .*stage it first"):
        image.layer_files(tmp_path, image.copies(tmp_path / "Dockerfile"))


def test_the_printed_push_commands_run_as_printed(tmp_path: Path) -> None:
    """make image's push lines name crane by its full path: run through a shell, they push."""
    import subprocess

    context = tmp_path / "deploy"
    (context / "image").mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM x\nCOPY image/flanneld.exe /flannel/flanneld.exe\n")
    (context / "image" / "flanneld.exe").write_bytes(b"MZ flanneld")
    out = image.build(context, tmp_path / "wincni-flannel.oci.tar", "test", crane())
    with image._Registry(crane()) as registry:
        lines = image.push_commands(out, crane(), f"{registry}/wincni-flannel:test")
        assert lines[-1].startswith(f"{crane()} push ") and crane().is_absolute()
        for line in lines:
            ran = subprocess.run(
                ["bash", "-c", line + " --insecure" * line.startswith(str(crane()))],
                capture_output=True,
                text=True,
                timeout=120,
                env={"PATH": "/usr/bin:/bin"},
            )
            assert ran.returncode == 0, (line, ran.stderr)
