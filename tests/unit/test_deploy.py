"""deploy/: ``kubectl apply -k deploy/`` in every variant it offers (one per network mode, and with
each knob turned), rendered by kustomize itself (built from the Go module proxy by
``winbuild.gobuild``), every object valid against the Kubernetes API schema (kubernetes-validate's
bundled schemas, offline, strict: unknown fields fail), HostProcess as Windows needs it, every
``wincni`` command line accepted by wincni's own parser, each mode's CNI template rendered and
validated by ``wincni install`` itself, and the image carrying what the manifests run."""

from __future__ import annotations

import json
import ntpath
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from basics.inputfile import Input
from gotool import go_tool
from tools.wincni.cli.main import build_parser
from tools.wincni.node.flagfile import Reader

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SANDBOX = "%CONTAINER_SANDBOX_MOUNT_POINT%"
MODES = ("vxlan", "host-gw")
RESOURCES = (
    "rbac.yaml",
    "wincni-flannel.yaml",
    "kube-proxy-windows.yaml",
    "modes/vxlan/kube-proxy-source-vip.yaml",
    "netpol/netpol.yaml",
)


def kustomize() -> Path:
    return go_tool("kustomize", "render deploy/")


def render(tmp_path: Path, **knobs: str) -> list[dict]:
    """``kustomize build`` of a copy of deploy/ with knobs turned: mode, namespace, image, serviceCIDR,
    sweepSeconds, netpol (the NetworkPolicy agent's component: "" turns it on)."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns("image"))
    text = (copy / "kustomization.yaml").read_text()
    edits = {
        "mode": (r"  - modes/vxlan\n", "  - modes/{}\n"),
        "namespace": (r"\nnamespace: kube-flannel\n", "\nnamespace: {}\n"),
        "image": (r"newName: registry\.example/wincni-flannel\n", "newName: {}\n"),
        "service_cidr": (r"serviceCIDR=10\.96\.0\.0/12", "serviceCIDR={}"),
        "sweep_seconds": (r"sweepSeconds=60\n", "sweepSeconds={}\n"),
        "netpol": (r"  # - netpol\n", "  {}- netpol\n"),  # on: "", the component listed
    }
    for knob, value in knobs.items():
        pattern, replacement = edits[knob]
        text, n = re.subn(pattern, replacement.format(value).replace("\\n", "\n"), text)
        assert n == 1, (knob, text)
    (copy / "kustomization.yaml").write_text(text)
    proc = subprocess.run([str(kustomize()), "build", str(copy)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@pytest.fixture(scope="module", params=MODES)
def variant(request, tmp_path_factory) -> tuple[str, list[dict]]:
    return request.param, render(tmp_path_factory.mktemp(request.param), mode=request.param)


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def containers(doc: dict) -> list[dict]:
    spec = doc["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def validate(doc: dict) -> None:
    version = kubernetes_validate.latest_version()
    assert tuple(map(int, version.split(".")[:2])) >= (1, 33), version  # a current minor, bundled
    kubernetes_validate.validate(doc, version, strict=True)


# ------------------------------------------------------------------------------ schema


def test_every_rendered_object_is_valid(variant) -> None:
    mode, docs = variant
    assert sorted(
        f"{d['kind']}/{d['metadata']['name'].rsplit('-', 1)[0] if d['kind'] == 'ConfigMap' else d['metadata']['name']}"
        for d in docs
    ) == [
        "ClusterRole/wincni-flannel",
        "ClusterRoleBinding/wincni-flannel",
        "ClusterRoleBinding/wincni-kube-proxy",
        "ConfigMap/wincni-cni-template",
        "ConfigMap/wincni-settings",
        "DaemonSet/wincni-flannel-windows",
        "DaemonSet/wincni-kube-proxy-windows",
        "ServiceAccount/wincni-flannel",
        "ServiceAccount/wincni-kube-proxy",
    ], mode
    for doc in docs:
        validate(doc)


@pytest.mark.parametrize("name", RESOURCES)
def test_every_resource_file_is_valid_as_it_stands(name: str) -> None:
    for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
        if name.startswith("modes/"):  # a strategic-merge patch: valid once merged (above), a partial object here
            assert doc["kind"] == "DaemonSet"
            continue
        validate(doc)


def test_a_wrong_field_is_caught(variant) -> None:
    """The validation above can fail: a typo'd field in an otherwise valid DaemonSet."""
    _, docs = variant
    ds = json.loads(json.dumps(by_kind(docs, "DaemonSet")["wincni-flannel-windows"]))
    ds["spec"]["template"]["spec"]["hostNetwrk"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(ds)


# ------------------------------------------------------------------------------ knobs


def test_the_knobs_reach_every_object(tmp_path: Path) -> None:
    docs = render(tmp_path, namespace="kube-system", image="my.registry/wincni", service_cidr="10.112.0.0/12")
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"]["namespace"] == "kube-system", doc["metadata"]
    for binding in by_kind(docs, "ClusterRoleBinding").values():
        assert [s["namespace"] for s in binding["subjects"]] == ["kube-system"]
    images = {c["image"] for ds in by_kind(docs, "DaemonSet").values() for c in containers(ds)}
    assert images == {"my.registry/wincni:0.1.0", "sigwindowstools/kube-proxy:v1.34.0-flannel-hostprocess"}
    [settings] = [d for d in docs if d["metadata"]["name"].startswith("wincni-settings-")]
    assert settings["data"] == {"serviceCIDR": "10.112.0.0/12", "sweepSeconds": "60"}
    install = next(
        c for c in containers(by_kind(docs, "DaemonSet")["wincni-flannel-windows"]) if c["name"] == "install-cni"
    )
    [ref] = [e["valueFrom"]["configMapKeyRef"] for e in install["env"] if e["name"] == "SERVICE_CIDR"]
    assert ref == {"name": settings["metadata"]["name"], "key": "serviceCIDR"}  # kustomize's hashed name, followed


def test_the_service_accounts_the_daemonsets_use_are_bound(variant) -> None:
    _, docs = variant
    accounts = set(by_kind(docs, "ServiceAccount"))
    bound = {s["name"] for b in by_kind(docs, "ClusterRoleBinding").values() for s in b["subjects"]}
    used = {ds["spec"]["template"]["spec"]["serviceAccountName"] for ds in by_kind(docs, "DaemonSet").values()}
    assert used == accounts == bound == {"wincni-flannel", "wincni-kube-proxy"}
    rules = by_kind(docs, "ClusterRole")["wincni-flannel"]["rules"]
    assert {(r["resources"][0], v) for r in rules for v in r["verbs"]} >= {
        ("nodes", "list"),
        ("nodes", "watch"),
        ("nodes/status", "patch"),
    }


# ------------------------------------------------------------------------------ what runs


def test_hostprocess_daemonsets_on_windows_nodes(variant) -> None:
    _, docs = variant
    for ds in by_kind(docs, "DaemonSet").values():
        spec = ds["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"kubernetes.io/os": "windows"} and spec["hostNetwork"] is True
        assert spec["securityContext"]["windowsOptions"] == {
            "hostProcess": True,
            "runAsUserName": "NT AUTHORITY\\SYSTEM",
        }


def wincni_command_lines(docs: list[dict]) -> dict[str, list[str]]:
    """Container name -> the wincni arguments it runs (the readiness probe's and the cni-dirs init
    container's through cmd /c: one command, its stdout redirected to a file at most), with the
    $(VAR)s Kubernetes expands from the settings ConfigMap filled in."""
    settings = next(d["data"] for d in docs if d["metadata"]["name"].startswith("wincni-settings-"))
    out = {}
    for ds in by_kind(docs, "DaemonSet").values():
        for c in containers(ds):
            line = c["command"] + c.get("args", [])
            if line[0].endswith("\\wincni.exe"):
                out[c["name"]] = [
                    a.replace("$(SERVICE_CIDR)", settings["serviceCIDR"]).replace(
                        "$(SWEEP_SECONDS)", settings["sweepSeconds"]
                    )
                    for a in line[1:]
                ]
            probe = c.get("readinessProbe", {}).get("exec", {}).get("command")
            for name, cmd in ((c["name"] + " readiness", probe), (c["name"], line)):
                if cmd and cmd[0] == "cmd.exe":
                    assert cmd[1:2] == ["/c"] and len(cmd) == 3
                    exe, *args = shlex.split(cmd[2].replace("\\", "/"))
                    assert exe == f"{SANDBOX}/wincni/wincni.exe" and not {"&", "|", "&&", "||"} & set(args)
                    args = args[:-2] if args[-2:-1] == [">"] else args
                    out[name] = [a.replace("/", "\\") for a in args]
    return out


def test_every_wincni_command_line_parses(variant) -> None:
    mode, docs = variant
    found = wincni_command_lines(docs)
    want = {
        "install-cni": "install",
        "kube-flannel readiness": "doctor",
        "cni-dirs": "dirs",
        "metrics": "metrics",
        "sweep": "reclaim",
    } | ({"source-vip": "sourcevip"} if mode == "vxlan" else {})
    assert {name: args[0] for name, args in found.items()} == want
    parser = build_parser("win32")
    parsed = {name: parser.parse_args(args) for name, args in found.items()}  # UsageError on anything it does not take
    assert parsed["install-cni"].service_cidr == "10.96.0.0/12"
    assert parsed["kube-flannel readiness"].quick  # reads only, no host-local store
    assert parsed["cni-dirs"].output == "json"
    assert parsed["metrics"].textfile == "C:\\Program Files\\windows_exporter\\textfile_inputs"
    assert parsed["metrics"].every == 300
    assert parsed["sweep"].every == 60 and parsed["sweep"].runtime_endpoint == "npipe:////./pipe/containerd-containerd"


def test_the_operator_turns_the_netpol_agent_on_with_one_knob(tmp_path: Path) -> None:
    """Off by default (the variants above have none of it); on, its own DaemonSet and ServiceAccount,
    bound to a role that lists and watches NetworkPolicies, Pods and Namespaces and nothing more;
    every object valid, its command line one wincni parses."""
    docs = render(tmp_path, netpol="")
    names = {f"{d['kind']}/{d['metadata']['name']}" for d in docs}
    assert {
        "ServiceAccount/wincni-netpol",
        "ClusterRole/wincni-netpol",
        "ClusterRoleBinding/wincni-netpol",
        "DaemonSet/wincni-netpol-windows",
    } <= names
    for doc in docs:
        validate(doc)
    rules = by_kind(docs, "ClusterRole")["wincni-netpol"]["rules"]
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    kinds = {("", "pods"), ("", "namespaces"), ("networking.k8s.io", "networkpolicies")}
    assert granted == {(g, r, v) for g, r in kinds for v in ("list", "watch")}
    [binding] = [b for b in by_kind(docs, "ClusterRoleBinding").values() if b["roleRef"]["name"] == "wincni-netpol"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "wincni-netpol", "namespace": "kube-flannel"}]
    ds = by_kind(docs, "DaemonSet")["wincni-netpol-windows"]
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "wincni-netpol"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in containers(ds)[0]["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "NODE_IP": "status.hostIP"}
    args = wincni_command_lines(docs)["netpol"]
    parsed = build_parser("win32").parse_args(
        [a.replace("$(NODE_NAME)", "n1").replace("$(NODE_IP)", "10.0.0.4") for a in args]
    )
    assert args[0] == "netpol" and parsed.node_name == "n1" and parsed.node_address == ["10.0.0.4"]


def test_the_operator_turns_the_sweep_off_with_one_knob(tmp_path: Path) -> None:
    docs = render(tmp_path, sweep_seconds="0")
    sweep = wincni_command_lines(docs)["sweep"]
    assert build_parser("win32").parse_args(sweep).every == 0  # says so, frees nothing


# containerd's config.toml on the node: naming other folders (with a space, as containerd's own
# defaults have), leaving them out (containerd's defaults), absent (containerd's folder is there).
NODES = {
    "config names them": {
        r"C:\Program Files\containerd\config.toml": b'version = 3\n[plugins."io.containerd.cri.v1.runtime".cni]\n'
        b'  bin_dirs = ["D:\\\\k8s cni\\\\bin"]\n  conf_dir = "D:\\\\k8s cni\\\\conf"\n'
    },
    "config leaves them out": {r"C:\Program Files\containerd\config.toml": b"version = 2\n"},
    "no config": {},
}


class NodeFiles:
    """A Windows node's files as install's ``Disk`` and the doctor's reader see them."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read(self, path: str, cap: int) -> Input | None:
        return Input(path, self.files[path][:cap]) if path in self.files else None

    def reader(self) -> Reader:
        """--containerd-config's reader on these files."""
        return Reader("--containerd-config", self.read)

    @staticmethod
    def isdir(path: str) -> bool:
        return path == r"C:\Program Files\containerd"


@pytest.mark.parametrize("node", NODES)
def test_install_reads_what_is_mounted_and_the_others_read_what_install_wrote(variant, node: str) -> None:
    """Where install writes is what its own arguments make of this node's containerd config; the
    readiness probe, the source-VIP init container and kube-proxy's script then look exactly there
    (they once hard-coded C:\\etc\\cni\\net.d, and on a node whose config.toml names
    other folders the probe never passed and kube-proxy never started)."""
    from tools.wincni.install.command import Outcome, _dirs
    from tools.wincni.install.options import InstallOptions
    from tools.wincni.node.containerd import CONF_NAME
    from tools.wincni.node.dirs import where

    mode, docs = variant
    parser = build_parser("win32")
    parsed = {name: parser.parse_args(args) for name, args in wincni_command_lines(docs).items()}
    flannel = by_kind(docs, "DaemonSet")["wincni-flannel-windows"]
    install = next(c for c in containers(flannel) if c["name"] == "install-cni")
    mounts = {m["name"]: SANDBOX + m["mountPath"].replace("/", "\\") for m in install["volumeMounts"]}
    volumes = {v["name"]: v["configMap"]["name"] for v in flannel["spec"]["template"]["spec"]["volumes"]}
    assert (
        parsed["install-cni"].net_conf == mounts["flannel-cfg"] + "net-conf.json"
        and volumes["flannel-cfg"] == "kube-flannel-cfg"
    )
    assert parsed["install-cni"].template == mounts["cni-template"] + "10-flannel.conflist"
    [template] = [d for d in docs if d["metadata"]["name"] == volumes["cni-template"]]
    assert set(template["data"]) == {"10-flannel.conflist"}
    assert parsed["install-cni"].source == SANDBOX + "\\wincni"

    files, env = NodeFiles(NODES[node]), {"ProgramFiles": r"C:\Program Files"}
    options = InstallOptions.of(parsed["install-cni"])
    bin_dir, conf_dir = _dirs(options, "win32", env, Outcome(), files.isdir, files.reader())
    written = ntpath.join(conf_dir, parsed["install-cni"].conf_name)
    if node == "config names them":
        assert (bin_dir, conf_dir) == (r"D:\k8s cni\bin", r"D:\k8s cni\conf")
    else:
        assert (bin_dir, conf_dir) == (r"C:\Program Files\containerd\cni\bin", r"C:\Program Files\containerd\cni\conf")

    def seen_by(command: str) -> Any:
        return where(parsed[command].containerd_config, "win32", env, files.reader(), files.isdir)

    probe = parsed["kube-flannel readiness"]
    assert probe.cni_conf is None and probe.cni_bin_dir is None
    assert (seen_by("kube-flannel readiness").conf_dir, seen_by("kube-flannel readiness").bin_dir) == (
        conf_dir,
        bin_dir,
    )
    kube_proxy = by_kind(docs, "DaemonSet")["wincni-kube-proxy-windows"]
    env_vars = {e["name"]: e.get("value") for c in containers(kube_proxy) for e in c.get("env", [])}
    assert "CNI_CONF" not in env_vars  # the script reads cni-dirs.json, what `wincni dirs` said
    [dirs] = [c for c in containers(kube_proxy) if c["name"] == "cni-dirs"]
    assert dirs["command"][2].endswith("> %CONTAINER_SANDBOX_MOUNT_POINT%\\wincni-scripts\\cni-dirs.json")
    assert seen_by("cni-dirs").conf_dir == conf_dir
    script = (DEPLOY / "start-kube-proxy.ps1").read_text()
    assert "(Join-Path $PSScriptRoot 'cni-dirs.json')" in script
    assert f"(Join-Path $dirs.confDir '{CONF_NAME}')" in script and parsed["install-cni"].conf_name == CONF_NAME
    if mode == "vxlan":
        assert (
            parsed["source-vip"].cni_conf is None and ntpath.join(seen_by("source-vip").conf_dir, CONF_NAME) == written
        )
        assert env_vars["SOURCE_VIP_FILE"] == parsed["source-vip"].out
    else:
        assert "SOURCE_VIP_FILE" not in env_vars


#: Where the DaemonSet's template puts the plugins' debug log (docs/TROUBLESHOOTING.md, "Logs").
LOG_FILE = "C:\\var\\log\\wincni\\cni.log"


@pytest.mark.parametrize(
    "mode, netconf, node_ip",
    [("vxlan", "net-conf.vxlan.json", ""), ("host-gw", "net-conf.host-gw.json", "10.127.130.36")],
)
def test_each_mode_s_template_is_what_wincni_renders_by_default(
    tmp_path: Path, mode: str, netconf: str, node_ip: str
) -> None:
    """The shipped templates load in the plugins' loaders (install validates them) and say what
    wincni's own config says, plus the debug log at its documented place (the DaemonSet turns it
    on; the rotation bounds it): an operator starts from the default and changes what they mean to."""
    from test_wincni_install import install_node, package_folder

    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node = install_node(tmp_path / "default", netconf)
    node.install("--from", str(rel), "--node-ip", node_ip or "0.0.0.0")
    templated = install_node(tmp_path / "template", netconf)
    templated.install(
        "--from",
        str(rel),
        "--node-ip",
        node_ip or "0.0.0.0",
        "--template",
        str(DEPLOY / "modes" / mode / "cni-template.conflist"),
    )
    laid = templated.read_cni_conf()
    assert laid["plugins"][0].pop("logFile") == LOG_FILE
    assert laid == node.read_cni_conf()


def test_the_image_carries_what_the_manifests_run(variant) -> None:
    _, docs = variant
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copies = dict(re.findall(r"^COPY (\S+) (\S+)$", dockerfile, re.M))
    assert copies["image/wincni/"] == "/wincni/" and copies["image/flanneld.exe"] == "/flannel/flanneld.exe"
    for script in ("start-flanneld.ps1", "start-kube-proxy.ps1", "kubeconfig.ps1"):
        assert (DEPLOY / script).is_file() and copies[script] == f"/flannel/{script}"
    daemonsets = by_kind(docs, "DaemonSet").values()
    run = {
        arg
        for ds in daemonsets
        for c in containers(ds)
        for arg in c["command"] + c.get("args", [])
        if arg.startswith(SANDBOX + "\\")
    }
    mounted = {
        m["mountPath"].strip("/").split("/")[0]
        for ds in daemonsets
        for c in containers(ds)
        for m in c.get("volumeMounts", [])
    }
    for path in run:
        top = path[len(SANDBOX) + 1 :].split("\\")[0]
        assert top in mounted or any(dst.strip("/").split("/")[0] == top for dst in copies.values()), path
    kube_proxy = by_kind(docs, "DaemonSet")["wincni-kube-proxy-windows"]
    [copy] = [c for c in containers(kube_proxy) if c["name"] == "scripts"]
    assert "flannel\\*.ps1" in copy["args"][-1] and "wincni-scripts" in copy["args"][-1]
