"""win-overlay: pod endpoints on an HNS Overlay (VXLAN) network (flannel vxlan)."""
import sys

from plugins.cni.skel import PluginSpec, console_entry, run

SPEC = PluginSpec("win-overlay", "plugins.win_overlay.commands",
                  "HNS Overlay (VXLAN) pod networking for Windows nodes (HCN V2 and HNS V1)")


def main(env, stdin, stdout) -> int:
    return run(SPEC, env, stdin, stdout, sys.stderr)


def entry() -> None:
    console_entry(SPEC)


if __name__ == "__main__":
    entry()
