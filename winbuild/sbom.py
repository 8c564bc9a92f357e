"""What the Windows package zip carries, and under which licences: the SBOM and the zip's list.

The modules a bundle holds are read from the bundle itself (file names, and the index of
``wincni.pack``, where PyInstaller's pure modules go: specs/bootstrap/pack.py), never from what
was meant to go in, so a package that slips in is listed and one that is left out is not. Each
top-level module is owned by the Python runtime (the standard library), by wincni, or by one
distribution installed in the Windows site folder the build used; a module none of them owns
stops the release, since its licence would be unknown.

The SBOM is CycloneDX JSON written by cyclonedx-python-lib (its schema version and serialisation
are the library's, not ours to keep up to date).
"""

from __future__ import annotations

import marshal
import re
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

PACK = "wincni.pack"
OURS = frozenset({"basics", "libhns", "plugins", "tools", "wincni_build"})
# The files of the embeddable CPython that sit in the contents folder beside its standard library.
# libffi's and OpenSSL's versions are the ones CPython's Windows build of that release pins (its
# externals; OpenSSL's two DLLs come with _ssl, which wincni.exe takes for the API server).
RUNTIME_LIBRARIES = {
    "libffi-8.dll": ("libffi", "3.4.4", "MIT"),
    "libcrypto-3.dll": ("OpenSSL", "3.0.15", "Apache-2.0"),
    "libssl-3.dll": ("OpenSSL", "3.0.15", "Apache-2.0"),
    "vcruntime140.dll": ("Microsoft Visual C++ Redistributable", "", "LicenseRef-Microsoft-Visual-CPP-Redistributable"),
}
# Every .exe starts in PyInstaller's bootloader, which its licence's exception lets us ship;
# its METADATA names the licence in prose, so the SPDX form is given here.
BOOTLOADER = ("pyinstaller", "GPL-2.0-or-later WITH Bootloader-exception")
_CLASSIFIER_LICENCES = {
    "MIT License": "MIT",
    "Apache Software License": "Apache-2.0",
    "BSD License": "BSD-3-Clause",
    "Python Software Foundation License": "PSF-2.0",
}


class SbomError(RuntimeError):
    """The bundle holds something whose owner (and so licence) is unknown."""


@dataclass(frozen=True)
class Package:
    """One thing the zip carries: ``kind`` is ``runtime`` (CPython and its DLLs), ``python`` (a
    distribution from PyPI) or ``application`` (wincni itself)."""

    name: str
    version: str
    licence: str
    kind: str


def pack_modules(pack: bytes) -> set[str]:
    """The modules named in a ``wincni.pack`` index (pure modules and extension modules)."""
    size = int.from_bytes(pack[:4], "little")
    modules, extensions = marshal.loads(pack[4 : 4 + size])
    return set(modules) | set(extensions)


def top_level(names: Iterable[str], pack: bytes) -> set[str]:
    """The top-level modules in a bundle whose files (relative, ``/``-separated) are ``names``:
    the pack's, plus the packages and extension modules lying in the contents folder."""
    found = {m.split(".")[0] for m in pack_modules(pack)}
    for name in names:
        parts = PurePosixPath(name).parts
        if len(parts) > 2 and parts[0].startswith("_wincni-"):  # a package folder: its data files
            found.add(parts[1])
        elif len(parts) == 2 and parts[1].endswith(".pyd"):
            found.add(parts[1].split(".")[0])
    return found


def licence_of(meta: metadata.PackageMetadata) -> str:
    """A distribution's licence as SPDX where its metadata allows: License-Expression, else a
    short License field, else its licence classifier; "NOASSERTION" when it says none."""
    if meta.get("License-Expression"):
        return meta["License-Expression"]
    short = (meta.get("License") or "").strip()
    if short and len(short) <= 40 and "\n" not in short:
        return short
    for classifier in meta.get_all("Classifier") or []:
        if classifier.startswith("License :: "):
            return _CLASSIFIER_LICENCES.get(classifier.split(" :: ")[-1], classifier.split(" :: ")[-1])
    return "NOASSERTION"


def owners(site: Path) -> dict[str, metadata.Distribution]:
    """Top-level module name -> the distribution in ``site`` whose files hold it."""
    out: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions(path=[str(site)]):
        for file in dist.files or ():
            top = file.parts[0]
            if top.endswith((".dist-info", ".data")) or top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            out.setdefault(re.sub(r"\.(py|pyd)$|\.cp\d+.*$", "", top), dist)
    return out


def embedded_runtime(site: Path, python: Path, version: str) -> Runtime:
    """The embeddable CPython in folder ``python`` (make dist-windows's, under Wine): its
    standard library is its zip's modules and its extension modules."""
    zips = list(python.glob("python3*.zip"))
    if len(zips) != 1:
        raise SbomError(f"{python} holds no embeddable CPython (one python3*.zip): run `make dist-windows` first")
    (stdlib_zip,) = zips
    with zipfile.ZipFile(stdlib_zip) as zf:
        found = {PurePosixPath(n).parts[0].split(".")[0] for n in zf.namelist()}
    return Runtime(site, frozenset(found | {p.name.split(".")[0] for p in python.glob("*.pyd")}), version)


@dataclass(frozen=True)
class Runtime:
    """The Python a bundle was frozen with: where its packages were installed, its standard
    library's top-level modules, its version."""

    site: Path
    stdlib: frozenset[str]
    version: str


def this_runtime() -> Runtime:
    """The running Python (build.ps1's: the bundle carries the Python that froze it)."""
    import platform
    import sysconfig

    stdlib = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
    return Runtime(Path(sysconfig.get_path("purelib")), stdlib, platform.python_version())


def packages(modules: set[str], names: Iterable[str], runtime: Runtime, version: str) -> list[Package]:
    """Everything the bundle carries, named once each, sorted: the runtime, each distribution
    owning a module, the bootloader, and wincni."""
    site = runtime.site
    owned = owners(site)
    found: dict[str, Package] = {
        "cpython": Package("cpython", runtime.version, "PSF-2.0", "runtime"),
        "wincni": Package("wincni", version, "Apache-2.0", "application"),
    }
    unknown = []
    for module in sorted(modules - OURS):
        if module in owned:
            dist = owned[module]
            name = dist.metadata["Name"]
            found[name.lower()] = Package(name, dist.version, licence_of(dist.metadata), "python")
        elif module not in runtime.stdlib:
            unknown.append(module)
    if unknown:
        raise SbomError(f"the bundle holds modules no distribution in {site} owns: {', '.join(unknown)}")
    for name in names:
        library = RUNTIME_LIBRARIES.get(PurePosixPath(name).name.lower())
        if library:
            found[library[0].lower()] = Package(*library, "runtime")
    bootloader = next(
        d for d in metadata.distributions(path=[str(site)]) if d.metadata["Name"].lower() == BOOTLOADER[0]
    )
    found[BOOTLOADER[0]] = Package(bootloader.metadata["Name"], bootloader.version, BOOTLOADER[1], "python")
    return sorted(found.values(), key=lambda p: p.name.lower())


def listing(carried: list[Package]) -> str:
    """The zip's own ``THIRD-PARTY.txt``: what it carries and under which licence, one a line."""
    width = max(len(p.name) for p in carried)
    lines = [f"{p.name:<{width}}  {p.version or '-':<12}  {p.licence}" for p in carried]
    return (
        "What this package carries, and under which licence (the SBOM beside the zip says the same).\n\n"
        + "\n".join(lines)
        + "\n"
    )


def cyclonedx_json(carried: list[Package], zip_name: str) -> str:
    """The CycloneDX JSON SBOM of the zip ``zip_name``: wincni as the described component, every
    other package as one of its components."""
    from cyclonedx.contrib.license.factories import LicenseFactory
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from packageurl import PackageURL

    licences = LicenseFactory()

    def component(p: Package) -> Component:
        ref = re.sub(r"[^a-z0-9.]+", "-", p.name.lower())
        purl = PackageURL("pypi", ref, p.version) if p.kind == "python" else None
        kind = ComponentType.APPLICATION if p.kind == "application" else ComponentType.LIBRARY
        return Component(
            name=p.name,
            version=p.version or None,
            type=kind,
            purl=purl,
            bom_ref=f"{ref}@{p.version}" if p.version else ref,
            licenses=[licences.make_from_string(p.licence)] if p.licence != "NOASSERTION" else [],
        )

    root = next(p for p in carried if p.kind == "application")
    bom = Bom()
    bom.metadata.component = component(root)
    bom.metadata.component.description = zip_name
    parts = [component(p) for p in carried if p is not root]
    for part in parts:
        bom.components.add(part)
    bom.register_dependency(bom.metadata.component, parts)
    return JsonV1Dot6(bom).output_as_string(indent=2)
