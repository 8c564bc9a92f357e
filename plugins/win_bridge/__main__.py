"""win-bridge: pod endpoints on an HNS L2Bridge network (flannel host-gw)."""
import sys

from plugins.cni.skel import PluginSpec, console_entry, run

SPEC = PluginSpec("win-bridge", "plugins.win_bridge.commands",
                  "HNS L2Bridge pod networking for Windows nodes (HCN V2 and HNS V1)")


def main(env, stdin, stdout) -> int:
    return run(SPEC, env, stdin, stdout, sys.stderr)


def entry() -> None:
    console_entry(SPEC)


if __name__ == "__main__":
    entry()
