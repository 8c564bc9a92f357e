"""Every plugin and command, in-process through its entry point, on hypothesis-made mutations of
the node fixtures: wrong types, missing keys, odd key casing, huge numbers, non-ASCII, truncated
JSON, broken environments. Whatever the input, the outcome is a result or a CNI error object with
a CNI error code; nothing escapes as an exception or a traceback; a failed ADD leaves no endpoint and
no IP. host-local and the delegates run in-process too (our own plugins on CNI_PATH), so thousands
of examples fit in about a minute: WINCNI_FUZZ_EXAMPLES sets how many (default 5,000).
"""

from __future__ import annotations

import io
import itertools
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hnsnode import SUBNET, Node
from plugins.cni.skel import run
from testdata import FIXTURES

EXAMPLES = int(os.environ.get("WINCNI_FUZZ_EXAMPLES", "5000"))
SPEC_CODES = {1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 100, 101, 999}
COMMANDS = ("ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION")


def _plugins() -> dict:
    from plugins.flannel.__main__ import PLUGIN as flannel
    from plugins.ipam_host_local.__main__ import PLUGIN as host_local
    from plugins.win_bridge.__main__ import PLUGIN as win_bridge
    from plugins.win_overlay.__main__ import PLUGIN as win_overlay

    return {"flannel": flannel, "win-bridge": win_bridge, "win-overlay": win_overlay, "host-local": host_local}


def seeds_of(node: Node) -> list[dict]:
    """The four node fixtures (flannel), direct win-bridge / win-overlay / host-local configs, and
    standalone win-bridge / win-overlay configs that create their own networks."""
    ipam = {"type": "host-local", "subnet": SUBNET, "dataDir": str(node.ipam_dir)}
    out = []
    for name in sorted(p.name for p in FIXTURES.glob("cni.conf.*.json")):
        doc = node.flannel_conf(name)
        out.append(doc)
        delegate = dict(doc["delegate"], cniVersion="1.1.0", name="vxlan0" if "overlay" in name else "cbr0", ipam=ipam)
        delegate.setdefault("type", "win-overlay" if "overlay" in name else "win-bridge")
        out.append(delegate)
    out.append({"cniVersion": "1.1.0", "name": "cbr0", "type": "host-local", "ipam": ipam})
    for plugin, name, subnet in (("win-bridge", "solo0", "10.250.1.0/24"), ("win-overlay", "solo1", "10.250.2.0/24")):
        out.append(
            {
                "cniVersion": "1.1.0",
                "name": name,
                "type": plugin,  # standalone: creates its network
                "network": {"subnet": subnet, "adapter": "Ethernet"},
                "ipam": dict(ipam, subnet=subnet),
            }
        )
    return out


def leftovers(node: Node, cid: str) -> list[str]:
    """Endpoints and host-local reservations of ``cid`` in any network."""
    found = [name for name in node.endpoints() if name.startswith(cid + "_")]
    for path in node.ipam_dir.rglob("*") if node.ipam_dir.exists() else ():
        if path.is_file() and path.read_bytes().split(b"\r\n")[0] == cid.encode():
            found.append(str(path))
    return found


NODE: Node | None = None
IDS = itertools.count()  # container IDs, unique over the run

# Values a mutation may write: every JSON type, edge numbers, non-ASCII; no path separators, so a
# mutated dataDir or subnetFile stays inside the working directory (a temp dir).
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(blacklist_characters="/\\\x00"), max_size=12),
    st.sampled_from(
        [
            "",
            "0.0.0.0/0",
            "10.244.4.300",
            "::1/129",
            "fe80::1",
            "EndpointPolicy",
            "OutBoundNAT",
            "host-local",
            "1.1.0",
            "0.2.0",
            "9.9.9",
            "ñetwork",
            "{}",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw, seeds):
    doc = json.loads(json.dumps(draw(st.sampled_from(seeds))))
    for _ in range(draw(st.integers(0, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        how = draw(st.sampled_from(["set", "delete", "case"]))
        if how == "set":
            parent[path[-1]] = draw(values)
        elif isinstance(parent, dict) and how == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict) and isinstance(path[-1], str):
            parent[path[-1].swapcase()] = parent.pop(path[-1])
    data = json.dumps(doc, ensure_ascii=draw(st.booleans())).encode(
        "utf-8", "surrogatepass"
    )  # lone surrogates: bytes that are not UTF-8
    if draw(st.integers(0, 9)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return data


envs = st.fixed_dictionaries(
    {},
    optional={
        "CNI_NETNS": st.sampled_from(
            ["none", "container:abc", "{not-a-guid}", "", "c0ffee00-0000-4000-8000-000000000001"]
        ),
        "CNI_IFNAME": st.sampled_from(["", "eth0", "é" * 20]),
        "CNI_ARGS": st.sampled_from(["", "IP=10.244.4.9", "K8S_POD_NAME=x;IgnoreUnknown=1", "junk", "IP=300.1.1.1"]),
        "CNI_PATH": st.sampled_from(["", "/nonexistent"]),
    },
)


def _node() -> Node:
    """One node for the whole run with both flanneld networks, cbr0 (L2Bridge) and vxlan0 (Overlay),
    on one HNS; the plugins run in-process with our own host-local and delegates on CNI_PATH, and no
    journal (thousands of runs)."""
    global NODE
    if NODE is None:
        NODE = Node(Path(tempfile.mkdtemp(prefix="wincni-fuzz-"))).bridge().overlay().lease().venv_plugins()
    return NODE


def test_fuzz_every_plugin_and_command_in_process(monkeypatch):
    node = _node()
    monkeypatch.chdir(node.root)
    plugins = _plugins()
    seeds = seeds_of(node)
    outcomes: Counter = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        plugin=st.sampled_from(sorted(plugins)),
        command=st.sampled_from(COMMANDS),
        data=mutated(seeds),
        extra=envs,
        namespace=st.booleans(),
    )
    def one(plugin, command, data, extra, namespace):
        cid = f"fz{next(IDS)}"
        env = {**node.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "none"}
        if namespace and command == "ADD":
            env["CNI_NETNS"] = node.sandbox("v2", cid)
        env.update(extra)
        out, err = io.StringIO(), io.StringIO()
        rc = run(plugins[plugin], env, io.BytesIO(data), out, err)
        assert "Traceback" not in err.getvalue(), err.getvalue()
        text = out.getvalue()
        outcomes[f"{command} " + ("ok" if rc == 0 else f"error {json.loads(text)['code']}")] += 1
        if rc == 0:
            assert text == "" or isinstance(json.loads(text), dict), text
            if command == "ADD":  # the runtime's DEL of the same input takes it all away again
                out = io.StringIO()
                assert run(plugins[plugin], {**env, "CNI_COMMAND": "DEL"}, io.BytesIO(data), out, err) == 0, (
                    out.getvalue()
                )
                assert leftovers(node, cid) == [], (plugin, data)
        else:
            assert rc == 1
            doc = json.loads(text)
            assert doc["code"] in SPEC_CODES and isinstance(doc["msg"], str) and doc["msg"], doc
            assert not (doc["code"] == 999 and "failed to find plugin" not in doc["msg"]), doc
            if command == "ADD":
                assert leftovers(node, cid) == [], (plugin, data, doc)

    one()
    print("fuzz outcomes:", dict(sorted(outcomes.items())), file=sys.stderr)
    # The mutations must also reach the deep end: real ADDs through IPAM and HNS, and both ways out.
    if EXAMPLES >= 1000:
        assert outcomes["ADD ok"] >= EXAMPLES // 250 and outcomes["DEL ok"] >= EXAMPLES // 250, outcomes
