"""``make release``: the files of a release in ``dist-release/``, each checkable on its own.

The package zip (``make dist-windows``) and the HostProcess image archive (``make image``) are
copied in beside three files made here: the zip's CycloneDX SBOM (read from the zip itself), the
release notes (the version's section of CHANGELOG.md) and ``SHA256SUMS`` over all four, in
``sha256sum``'s own format, so ``sha256sum -c SHA256SUMS`` (or ``Get-FileHash`` on Windows) checks
them where they were downloaded.

``build.ps1 -Release`` passes ``--bundle dist/wincni --no-image``: the zip is packed here from the
bundle the running Python froze (Windows has no crane to build the image with; the release
workflow's Linux job makes it).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

from winbuild import changelog, dist, sbom, toolchain

OUT = toolchain.ROOT / "dist-release"
NOTES = "RELEASE-NOTES.md"
SUMS = "SHA256SUMS"


def sha256sums(files: list[Path]) -> str:
    """``sha256sum``'s output for ``files``, named as they lie beside the sums file."""
    lines = []
    for path in sorted(files):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        lines.append(f"{digest.hexdigest()}  {path.name}\n")
    return "".join(lines)


def write(out: Path, package_zip: Path, image: Path | None, runtime: sbom.Runtime, changes: str) -> list[Path]:
    """The release in ``out`` (emptied first, unless it holds ``package_zip``); returns its files,
    SHA256SUMS last."""
    if package_zip.parent.resolve() != out.resolve():
        shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    version = dist.version()
    files = [
        Path(shutil.copyfile(p, out / p.name)) if p.parent.resolve() != out.resolve() else p
        for p in (package_zip, image)
        if p
    ]
    bom = out / (package_zip.name.removesuffix(".zip") + ".cdx.json")
    bom.write_text(sbom.cyclonedx_json(dist.zip_packages(package_zip, runtime), package_zip.name))
    notes = out / NOTES
    notes.write_text(changelog.notes(changes, version))
    files += [bom, notes]
    sums = out / SUMS
    sums.write_text(sha256sums(files))
    return files + [sums]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="make release", description=__doc__.split("\n\n")[0])
    p.add_argument("--zip", help="the Windows package zip (default: the newest in dist-windows/)")
    p.add_argument("--image", help="the image archive (default: the newest in dist-image/)")
    p.add_argument("--bundle", help="pack the zip from this bundle, frozen by the running Python (build.ps1)")
    p.add_argument("--no-image", action="store_true", help="a release without the image archive (build.ps1)")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    images = sorted((toolchain.ROOT / "dist-image").glob("*.oci.tar"), key=lambda f: f.stat().st_mtime)
    image = None if args.no_image else Path(args.image) if args.image else (images[-1] if images else None)
    try:
        if args.bundle:
            shutil.rmtree(out, ignore_errors=True)
            runtime = sbom.this_runtime()
            package_zip = dist.pack(Path(args.bundle), out / dist.zip_name().name, runtime)
        else:
            package_zip = Path(args.zip) if args.zip else dist.newest_zip()
        if not (package_zip and package_zip.is_file() and (args.no_image or (image and image.is_file()))):
            print(
                "make release: no package zip or image archive: run `make image` first (it builds both)",
                file=sys.stderr,
            )
            return 1
        if not args.bundle:
            runtime = dist.wine_runtime(toolchain.cache_dir())
        files = write(out, package_zip, image, runtime, (toolchain.ROOT / "CHANGELOG.md").read_text())
    except (sbom.SbomError, changelog.ChangelogError, OSError) as e:
        print(f"make release: {e}", file=sys.stderr)
        return 1
    for path in files:
        print(f"{path}: {path.stat().st_size / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
