"""``flannel`` / ``python -m plugins.flannel``: the meta plugin that turns flanneld's lease into a delegate config."""
from __future__ import annotations

from typing import Any, Mapping, TextIO

from plugins.cni import skel

SPEC = skel.PluginSpec(
    name="flannel",
    handlers="plugins.flannel.commands",
    description="reads flanneld's subnet.env and delegates to win-bridge or win-overlay",
)


def main(env: Mapping[str, str], stdin: Any, stdout: TextIO) -> int:
    return skel.run(SPEC, env, stdin, stdout)


def entry() -> None:
    skel.console_entry(SPEC)


if __name__ == "__main__":
    entry()
