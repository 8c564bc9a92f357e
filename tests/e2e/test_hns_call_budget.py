"""Raw HNS calls per pod command stay within the budgets of `make bench` (not counting Close):
V2 ADD opens its network once, V2 DEL does not query the endpoint CNI_NETNS already locates."""

from __future__ import annotations

import pytest

from hnsnode import Node, call_names


@pytest.mark.parametrize("standalone", [False, True], ids=["flanneld-network", "standalone"])
@pytest.mark.parametrize("api, add_budget, del_budget", [("v2", 8, 5), ("v1", 5, 4)])
def test_pod_lifecycle_within_call_budget(tmp_path, api, add_budget, del_budget, standalone):
    """Standalone mode costs nothing once its network exists: the same calls as with flanneld's."""
    node = Node(tmp_path).bridge()
    extra = {"network": {"subnet": "10.244.4.0/24", "adapter": "Ethernet"}} if standalone else {}
    conf = node.conf(apiVersion=2 if api == "v2" else 1, **extra)
    add, dele = map(call_names, node.add_del_calls(conf, "pod1", api))
    assert len(add) <= add_budget and len(dele) <= del_budget, (add, dele)
    if api == "v2":
        assert add.count("HcnOpenNetwork") == 1, add
        assert "HcnQueryEndpointProperties" not in dele, dele
    node.assert_clean("pod1")
