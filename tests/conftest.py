"""The ``node`` fixture: one simulated node (tests/hnsnode.py) under the test's ``tmp_path``.

A module or test says which node with the ``node`` mark, ``pytest.mark.node(*kinds, build=...)``:
the node is ``build(tmp_path, kind)``. ``build`` defaults to ``hnsnode.flanneld_node``, whose kinds
are the plugins ("win-bridge", "win-overlay", "flannel"); a module with a node of its own passes
its builder (``build=install_node``). With several kinds every test that takes ``node`` runs once
per kind; with none it is ``build(tmp_path)``; without the mark, flanneld's win-bridge node.
"""

import pytest

collect_ignore = ["windows"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    mark = metafunc.definition.get_closest_marker("node")
    if mark is not None and len(mark.args) > 1 and "node" in metafunc.fixturenames:
        metafunc.parametrize("node", mark.args, indirect=True)


@pytest.fixture
def node(request: pytest.FixtureRequest, tmp_path):
    from hnsnode import flanneld_node

    mark = request.node.get_closest_marker("node")
    build = mark.kwargs.get("build", flanneld_node) if mark else flanneld_node
    if hasattr(request, "param"):
        return build(tmp_path, request.param)
    return build(tmp_path, *mark.args) if mark else build(tmp_path)
