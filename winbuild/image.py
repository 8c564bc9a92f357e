"""``make image``: the wincni HostProcess image (deploy/Dockerfile) as an OCI image archive, on Linux,
with go-containerregistry's ``crane`` (built from the Go module proxy: winbuild/gobuild.py).

The image is files only (a HostProcess container runs on the host; nothing is RUN), so it is one
layer laid out as the Dockerfile's COPY lines say, from deploy/ as the build context, where this
stages what the Dockerfile's comment says to put there: the Windows package (``make dist-windows``'s
zip, unpacked to deploy/image/wincni/) and flanneld.exe (deploy/image/flanneld.exe, cross-built from
flannel's Go module). crane pushes it to a registry of its own on loopback (``crane registry
serve``), sets the platform windows/amd64, and pulls it back as an OCI layout, which is tarred.

With ``BASE`` (``make image BASE=mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0``,
or a tarball of it) the layer is appended to that base, and crane writes it in the Windows layer
format itself; that is the image a node runs. Without one (no registry but the package registries is
reachable here) the layer is written in that format by this module (``Files/`` + ``Hives/``) on an
empty base: the same files, for inspection and for ``crane append -b <base>`` where the base is
reachable. ``docker buildx build --platform windows/amd64 -f deploy/Dockerfile deploy`` builds the
same image where Docker is.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from . import gobuild, progress

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
NAME = "wincni-flannel"


def copies(dockerfile: Path) -> list[tuple[str, str]]:
    """The Dockerfile's ``COPY src dst`` lines: what goes where in the image."""
    return re.findall(r"^COPY (\S+) (\S+)$", dockerfile.read_text(), re.M)


def layer_files(context: Path, lines: list[tuple[str, str]]) -> dict[str, Path]:
    """Image path (no leading slash, forward slashes) -> file in ``context``, for every COPY."""
    out: dict[str, Path] = {}
    for src, dst in lines:
        source = context / src
        if not source.exists():
            raise FileNotFoundError(f"{source} (COPY {src} {dst}) is missing: stage it first (see deploy/Dockerfile)")
        if source.is_dir():
            for path in sorted(p for p in source.rglob("*") if p.is_file()):
                out[dst.strip("/") + "/" + path.relative_to(source).as_posix()] = path
        else:
            out[dst.strip("/")] = source
    return out


def write_layer(files: dict[str, Path], out: Path, windows_format: bool) -> None:
    """A reproducible layer tarball (fixed times and owners); in the Windows layer format
    (everything under ``Files/``, beside an empty ``Hives/``) when ``windows_format``."""
    prefix = "Files/" if windows_format else ""
    dirs = sorted({prefix + "/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)})
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in (["Files", "Hives"] if windows_format else []) + dirs:
            info = tarfile.TarInfo(name.rstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, path in sorted(files.items()):
            data = path.read_bytes()
            info = tarfile.TarInfo(prefix + name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))


def stage(context: Path, package_zip: Path, flanneld: Path) -> None:
    """What deploy/Dockerfile's comment says to put in deploy/image/."""
    image = context / "image"
    shutil.rmtree(image / "wincni", ignore_errors=True)
    (image / "wincni").mkdir(parents=True)
    with zipfile.ZipFile(package_zip) as zf:
        zf.extractall(image / "wincni")
    shutil.copyfile(flanneld, image / "flanneld.exe")


class _Registry:
    """``crane registry serve`` on a free loopback port, for the length of a ``with``."""

    def __init__(self, crane: Path) -> None:
        self.crane = crane

    def __enter__(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [str(self.crane), "registry", "serve", "--address", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return f"127.0.0.1:{port}"
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("crane registry serve did not start listening")

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def build(context: Path, out: Path, tag: str, crane: Path, base: str = "") -> Path:
    """The OCI image archive ``out`` of deploy/Dockerfile's files in ``context``."""
    files = layer_files(context, copies(context / "Dockerfile"))
    with tempfile.TemporaryDirectory(prefix="wincni-image-") as tmp, _Registry(crane) as registry:
        layer = Path(tmp) / "layer.tar"
        write_layer(files, layer, windows_format=not base)
        ref = f"{registry}/{NAME}:{tag}"

        def run(*args: str) -> None:
            proc = subprocess.run([str(crane), *args, "--insecure"], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"crane {' '.join(args)}: {proc.stderr.strip()}")

        if base and Path(base).exists():  # a tarball or OCI layout of the base image
            run("push", base, f"{registry}/base:1")
            base = f"{registry}/base:1"
        run("append", *(["-b", base] if base else ["--oci-empty-base"]), "-f", str(layer), "-t", ref)
        if not base:
            run("mutate", "--set-platform", "windows/amd64", "-t", ref, ref)
        layout = Path(tmp) / "layout"
        run("pull", "--format", "oci", ref, str(layout))
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w") as tar:
            for path in sorted(layout.rglob("*")):
                tar.add(path, arcname=path.relative_to(layout).as_posix(), recursive=False)
    return out


BASE_IMAGE = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
NO_BASE = (
    "no base image: the layer sits on an empty base, which is for inspecting the files or for "
    f"`crane append -b <base>`; for the image a node runs, run `make image BASE={BASE_IMAGE}` "
    "where that registry is reachable (or BASE=<a tarball of it>)"
)


def push_commands(archive: Path, crane: Path, ref: str) -> list[str]:
    """The shell lines that push ``archive`` to ``ref`` with ``crane`` named by its full path, so
    they run as printed: crane reads an OCI layout from a folder, not from the archive file."""
    layout = archive.with_suffix("").with_suffix(".layout")
    return [
        f"rm -rf {layout} && mkdir -p {layout} && tar -xf {archive} -C {layout}",
        f"{crane} push {layout} {ref}",
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="make image", description=__doc__.split("\n\n")[0])
    p.add_argument("--zip", help="the Windows package zip (default: the newest in dist-windows/)")
    p.add_argument("--flanneld", help="flanneld.exe (default: built from flannel's Go module)")
    p.add_argument("--base", default=os.environ.get("BASE", ""), help="base image reference or tarball (default: none)")
    p.add_argument("--tag", default="0.1.0")
    p.add_argument("--out", default=str(REPO / "dist-image" / f"{NAME}-0.1.0.oci.tar"))
    args = p.parse_args(argv)
    from .dist import newest_zip

    package_zip = Path(args.zip) if args.zip else newest_zip()
    if package_zip is None or not package_zip.is_file():
        print("make image: no Windows package zip: run `make dist-windows` first (or pass --zip)", file=sys.stderr)
        return 1
    try:
        with progress.step("flanneld.exe and crane (winbuild/gobuild.py)"):
            flanneld = Path(args.flanneld) if args.flanneld else gobuild.build("flanneld.exe")
            crane = gobuild.build("crane")
        with progress.step(f"deploy/image/ staged from {package_zip.name}"):
            stage(DEPLOY, package_zip, flanneld)
        with progress.step(f"image archive (crane{', base ' + args.base if args.base else ''})"):
            out = build(DEPLOY, Path(args.out), args.tag, crane, args.base)
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"make image: {exc}", file=sys.stderr)
        return 1
    except zipfile.BadZipFile as exc:
        print(
            f"make image: {package_zip} is not the Windows package zip ({exc}): pass `make dist-windows`'s zip",
            file=sys.stderr,
        )
        return 1
    index = json.loads(tarfile.open(out).extractfile("index.json").read())
    print(f"{out}: OCI image archive, {index['manifests'][0]['digest']}")
    if not args.base:
        print(f"  {NO_BASE}")
    print("  push it (then set deploy/kustomization.yaml's images: wincni-flannel to that reference):")
    for line in push_commands(out, crane, f"<registry>/{NAME}:{args.tag}"):
        print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
