"""``host-local`` / ``python -m plugins.ipam_host_local``: the entry point, nothing else."""
from __future__ import annotations

from typing import Any, Mapping, TextIO

from plugins.cni import skel

SPEC = skel.PluginSpec(name="host-local", handlers="plugins.ipam_host_local.commands",
                       description="host-local IPAM: addresses from local ranges, stored on disk")


def main(env: Mapping[str, str], stdin: Any, stdout: TextIO) -> int:
    return skel.run(SPEC, env, stdin, stdout)


def entry() -> None:
    skel.console_entry(SPEC)


if __name__ == "__main__":
    entry()
