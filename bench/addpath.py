"""One pod ADD followed module by module: how many of our modules it passes, and how often control
comes back into a module it had left. A benchmark of the code's shape, not a test (the ratchet on its
figures is tests/unit/test_addpath.py).

    python bench/addpath.py [-v] [--repo TREE] [SCENARIO ...]

What is counted, exactly:
- One ADD runs in a fresh interpreter (as the kubelet starts a plugin) on the HNS simulator, the
  plugin's ``main(env, stdin, stdout)`` called in-process; this script's own process sets the node
  up first (``hnsctl``: the network, flanneld's ``cbr0_ep``, the namespace or pause container).
- ``sys.setprofile`` follows the interpreter's main thread from the call of ``Lifecycle.add`` to its
  return. At every Python call and return event, control is "in" the module of the innermost frame
  of ours (``basics``, ``libhns``, ``plugins``, ``tools``) on the stack; events in the same module as
  the step before collapse into one step: that is the **sequence**. Not followed: the simulator
  (``libhns.sim``, which stands in for HNS: imported before the ADD, its frames skipped, and its
  raw calls run on the deadline's worker thread, as do the real DLL's), and the inside of an
  import: a module the ADD imports is passed, as one step, and whatever its import runs (its top
  level, the modules it imports in turn) counts as that module (import cost is what
  test_import_diet and ``make bench`` judge).
- **modules**: the distinct modules of the sequence.
- **returns**: the distinct ways back, i.e. pairs (B, A) where a return event brought control from
  module B back into module A, which it had left to go there; each pair counts once however often
  it is taken (a loop over the config's policies does not change it). **all returns**: every such
  return event of the sequence, repeats included.
Before the pod path's modules were regrouped, the ``v2`` scenario gave 25 modules and 43 returns
where a count by hand had found 38 (no definition tried gave 38 with 25: counting every return,
or only calls back into a module still on the stack, gives 156 and 14).

Scenarios: ``v2`` win-bridge, containerd (a namespace GUID: HCN), host-local IPAM executed as a
process (``WINCNI_NO_INPROCESS=1``: only the plugin's own process is followed); ``v1`` the same
through dockershim (``CNI_NETNS=none``: HNSCall); ``chain`` flannel -> win-bridge -> host-local, all
in one process as on a node (HCN).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = ("basics", "libhns", "plugins", "tools")
SCENARIOS = ("v2", "v1", "chain")
POLICY = {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.96.0.0/12"]}}}


def node(root: Path, scenario: str) -> tuple[dict, dict]:
    """A simulated node under ``root`` and the (env, config) of the pod ADD of ``scenario``."""
    sys.path.insert(0, str(REPO))
    from tools import hnsctl

    hns = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(root / "hns")}

    def ctl(*args: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        if hnsctl.main(list(args), out, err, hns) != 0:
            raise SystemExit(f"hnsctl {' '.join(args)}: {err.getvalue()}")
        return out.getvalue()

    ctl("network", "create", "cbr0", "--type", "L2Bridge", "--subnet", "10.244.4.0/24")
    ctl("endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", "10.244.4.2", "--host")
    if scenario == "v1":
        ctl("container", "create", "pod1")
        netns = "none"
    else:
        netns = json.loads(ctl("namespace", "create", "-o", "json"))["ID"]
    env = {
        **hns,
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "pod1",
        "CNI_NETNS": netns,
        "CNI_IFNAME": "eth0",
        "CNI_PATH": str(Path(sys.executable).parent),
        "WINCNI_LOCK_DIR": str(root / "locks"),
    }
    ipam = {"type": "host-local", "subnet": "10.244.4.0/24", "dataDir": str(root / "ipam")}
    if scenario == "chain":
        (root / "subnet.env").write_text(
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.4.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
        )
        conf = {
            "cniVersion": "1.0.0",
            "name": "cbr0",
            "type": "flannel",
            "subnetFile": str(root / "subnet.env"),
            "dataDir": str(root / "flannel"),
            "ipam": {"dataDir": ipam["dataDir"]},
            "delegate": {"type": "win-bridge", "policies": [POLICY]},
        }
    else:
        env["WINCNI_NO_INPROCESS"] = "1"
        conf = {"cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge", "policies": [POLICY], "ipam": ipam}
    return env, conf


def follow(tree: str, scenario: str, env: dict, conf: dict) -> list[list[str]]:
    """The sequence of one ADD, as [module, event, function] steps (run in a fresh interpreter)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", tree, scenario],
        input=json.dumps([env, conf]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the traced {scenario} ADD failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout)


def child(tree: str, scenario: str) -> None:
    """In the fresh interpreter: import the plugin's entry and the simulator, then follow ``main``."""
    env, conf = json.loads(sys.stdin.read())
    sys.path.insert(0, tree)
    import libhns.sim.simulator  # noqa: F401 - stands in for HNS: not on a node's path
    from plugins.winnet.lifecycle import Lifecycle

    if scenario == "chain":
        from plugins.flannel.__main__ import main
    else:
        from plugins.win_bridge.__main__ import main
    add = Lifecycle.add.__code__
    steps: list[list[str]] = []
    top: list = []  # the Lifecycle.add frame while it runs

    def where(frame) -> str | None:
        """The module of the innermost frame of ours; during an import the ADD made, the module
        it imports (the outermost top level of ours on the stack)."""
        found = imported = None
        while frame is not None and frame is not top[0]:
            name = frame.f_globals.get("__name__", "")
            if name.split(".")[0] in OURS and not name.startswith("libhns.sim"):
                found = found or name
                if frame.f_code.co_name == "<module>":
                    imported = name
            frame = frame.f_back
        return imported or found or top[0].f_globals["__name__"]

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code is add and not top:
            top.append(frame)
        if not top or event not in ("call", "return"):
            return
        if event == "return" and frame is top[0]:
            sys.setprofile(None)
            return
        module = where(frame if event == "call" else frame.f_back)
        if module is not None and (not steps or steps[-1][0] != module):
            steps.append([module, event, frame.f_code.co_name])

    out = io.StringIO()
    sys.setprofile(profile)
    try:
        rc = main(env, io.BytesIO(json.dumps(conf).encode()), out)
    finally:
        sys.setprofile(None)
    if rc != 0:
        raise SystemExit(out.getvalue())
    print(json.dumps(steps))


def figures(steps: list[list[str]]) -> dict:
    """modules, returns (distinct ways back) and all returns of a followed sequence."""
    back = [(steps[i - 1][0], steps[i][0]) for i in range(1, len(steps)) if steps[i][1] == "return"]
    return {
        "modules": len({s[0] for s in steps}),
        "returns": len(set(back)),
        "all_returns": len(back),
        "steps": len(steps),
    }


def measure(scenario: str, tree: str = str(REPO)) -> tuple[dict, list[list[str]]]:
    with tempfile.TemporaryDirectory(prefix="addpath-") as tmp:
        env, conf = node(Path(tmp), scenario)
        steps = follow(tree, scenario, env, conf)
    return figures(steps), steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="*", help=f"any of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--repo", default=str(REPO), help="the tree to follow (default: this one)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the module sequence too")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenario if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}: choose from {', '.join(SCENARIOS)}")
    for scenario in args.scenario or SCENARIOS:
        fig, steps = measure(scenario, args.repo)
        print(
            f"{scenario:<6} {fig['modules']:3} modules  {fig['returns']:3} returns "
            f"({fig['all_returns']} in all, {fig['steps']} steps)"
        )
        if args.verbose:
            print("  modules: " + " ".join(sorted({s[0] for s in steps})))
            print("  sequence: " + " ".join(("<" if kind == "return" else "") + module for module, kind, _ in steps))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:4])
        sys.exit(0)
    sys.exit(main())
