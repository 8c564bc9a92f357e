"""deploy/: every manifest valid against the Kubernetes API schema (kubernetes-validate's bundled
schemas, offline, strict: unknown fields fail), HostProcess as Windows needs it, every ``wincni``
command line accepted by our own argument parser, and the image carrying what the manifests run."""
from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from plugins.wincni.__main__ import build_parser
from plugins.wincni.facts import default_paths

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MANIFESTS = sorted(DEPLOY.glob("*.yaml"))
SANDBOX = "%CONTAINER_SANDBOX_MOUNT_POINT%"


def documents() -> list[tuple[str, dict]]:
    return [(p.name, doc) for p in MANIFESTS for doc in yaml.safe_load_all(p.read_text()) if doc]


def containers(doc: dict) -> list[dict]:
    spec = doc["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def test_there_are_manifests() -> None:
    assert {p.name for p in MANIFESTS} == {"wincni-flannel.yaml", "kube-proxy-windows.yaml"}


@pytest.mark.parametrize("name, doc", documents(), ids=lambda x: x if isinstance(x, str) else "")
def test_valid_against_the_kubernetes_api_schema(name: str, doc: dict) -> None:
    version = kubernetes_validate.latest_version()
    assert tuple(map(int, version.split(".")[:2])) >= (1, 33), version  # a current minor, bundled
    kubernetes_validate.validate(doc, version, strict=True)


def test_a_wrong_field_is_caught() -> None:
    """The validation above can fail: a typo'd field in an otherwise valid DaemonSet."""
    _, doc = documents()[0]
    doc["spec"]["template"]["spec"]["hostNetwrk"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


@pytest.mark.parametrize("name, doc", documents(), ids=lambda x: x if isinstance(x, str) else "")
def test_hostprocess_daemonsets_on_windows_nodes(name: str, doc: dict) -> None:
    assert (doc["kind"], doc["metadata"]["namespace"]) == ("DaemonSet", "kube-system")
    spec = doc["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/os": "windows"} and spec["hostNetwork"] is True
    assert spec["securityContext"]["windowsOptions"] == {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}


def wincni_command_lines() -> list[tuple[str, list[str]]]:
    return [(c["name"], c["args"]) for _, doc in documents() for c in containers(doc)
            if c["command"][0].endswith("\\wincni.exe")]


def test_every_wincni_command_line_parses() -> None:
    found = wincni_command_lines()
    assert {args[0] for _, args in found} == {"install", "sourcevip"}
    parser = build_parser(default_paths("win32"), "win32")
    for _, args in found:
        parsed = parser.parse_args(args)  # UsageError (not SystemExit) on anything it does not take
        assert parsed.command == args[0]


def test_install_reads_the_mounted_net_conf_and_sourcevip_what_install_wrote() -> None:
    parser = build_parser(default_paths("win32"), "win32")
    parsed = {a[0]: parser.parse_args(a) for _, a in wincni_command_lines()}
    _, flannel = next(d for d in documents() if d[0] == "wincni-flannel.yaml")
    [init] = flannel["spec"]["template"]["spec"]["initContainers"]
    [mount] = [m["mountPath"] for m in init["volumeMounts"]]
    assert parsed["install"].net_conf == SANDBOX + mount.replace("/", "\\") + "net-conf.json"
    assert parsed["install"].source == SANDBOX + "\\wincni"
    assert parsed["sourcevip"].cni_conf == "C:\\etc\\cni\\net.d\\" + parsed["install"].conf_name


def test_the_image_carries_what_the_manifests_run() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copies = dict(re.findall(r"^COPY (\S+) (\S+)$", dockerfile, re.M))
    assert copies["image/wincni/"] == "/wincni/" and copies["start-flanneld.ps1"] == "/flannel/start-flanneld.ps1"
    assert (DEPLOY / "start-flanneld.ps1").is_file()
    run_paths = {arg for _, doc in documents() for c in containers(doc) for arg in c["command"] + c.get("args", [])
                 if arg.startswith(SANDBOX + "\\")}
    for path in run_paths:
        top = path[len(SANDBOX) + 1:].split("\\")[0]
        assert any(dst.strip("/").split("/")[0] == top for dst in copies.values()) or top == "etc", path
