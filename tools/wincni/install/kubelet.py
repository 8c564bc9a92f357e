"""The two fields ``wincni install`` needs from the kubelet's own config file
(``C:\\var\\lib\\kubelet\\config.yaml``, a KubeletConfiguration as kubeadm writes it): ``clusterDNS``
(the cluster DNS service's addresses) and ``clusterDomain``.

Not a YAML parser: only top-level ``key: value`` lines are read, and of those only these two keys,
as a plain or quoted scalar, a flow list (``[a, "b"]``) or a block list (``- a`` lines below the
key); every other line is skipped, nested mappings included. A JSON file (the kubelet takes JSON
too) is read as JSON. Anything these two keys hold that is not that is an error naming the line,
never a guess. Pure: ``parse`` takes the text.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from basics import jsontext

MAX_BYTES = 1 << 20  # kubeadm's is ~1 KiB
KEYS = ("clusterDNS", "clusterDomain")
_TOP = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*:(.*)$")
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


class KubeletConfigError(ValueError):
    """The file exists but its clusterDNS / clusterDomain cannot be used: the message names the
    file, the line and the way out."""


@dataclass(frozen=True)
class ClusterDns:
    servers: tuple[str, ...]  # the cluster DNS service's addresses
    domain: str  # e.g. cluster.local


def parse(text: str, path: str) -> ClusterDns:
    """clusterDNS and clusterDomain of a kubelet config ("" / () when it does not set them)."""
    found = _from_json(text, path) if text.lstrip().startswith("{") else _from_yaml(text, path)
    servers = found.get("clusterDNS", [])
    if isinstance(servers, str):
        servers = [servers]
    if not isinstance(servers, list):
        raise KubeletConfigError(f"{path}: clusterDNS must be a list of IP addresses")
    servers = [ip for ip in servers if not _ipv6(ip)]  # a dual-stack cluster's second DNS address
    if found.get("clusterDNS") and not servers:
        raise KubeletConfigError(
            f"{path}: clusterDNS holds no IPv4 address (Windows pods resolve through the "
            "cluster DNS service's IPv4 address): pass --cluster-dns"
        )
    for ip in servers:
        check_server(ip, f"{path}: clusterDNS")
    domain = found.get("clusterDomain", "")
    if domain:
        check_domain(domain, f"{path}: clusterDomain")
    return ClusterDns(tuple(servers), domain)


def _ipv6(ip: object) -> bool:
    try:
        ipaddress.IPv6Address(ip if isinstance(ip, str) else None)
    except (ValueError, TypeError):
        return False
    return True


def check_server(ip: object, what: str) -> None:
    try:
        ipaddress.IPv4Address(ip if isinstance(ip, str) else None)  # not a number: JSON's 167772170
    except (ValueError, TypeError):
        raise KubeletConfigError(
            f"{what} {ip!r} is not an IPv4 address (Windows pods resolve through the "
            "cluster DNS service's IPv4 address, e.g. 10.96.0.10)"
        ) from None


def check_domain(domain: object, what: str) -> None:
    if not isinstance(domain, str) or not _DOMAIN.match(domain.rstrip(".")):
        raise KubeletConfigError(f"{what} {domain!r} is not a DNS domain (e.g. cluster.local)")


def _from_json(text: str, path: str) -> dict:
    try:
        doc = jsontext.loads(text)
    except ValueError as exc:
        raise KubeletConfigError(f"{path} is not JSON ({exc}); the kubelet cannot read it either") from None
    if not isinstance(doc, dict):
        raise KubeletConfigError(f"{path} is not a KubeletConfiguration object")
    return {k: doc[k] for k in KEYS if k in doc}


def _from_yaml(text: str, path: str) -> dict:
    found: dict = {}
    lines = text.splitlines()
    at = 0
    while at < len(lines):
        top = _TOP.match(lines[at])
        at += 1
        if top is None or top.group(1) not in KEYS:
            continue
        key, rest = top.group(1), _uncomment(top.group(2)).strip()
        where = f"{path} line {at}: {key}"
        if key in found:
            raise KubeletConfigError(f"{where} is set twice")
        if rest:
            found[key] = _flow_list(rest, where) if rest.startswith("[") else _scalar(rest, where)
            continue
        items = []  # a block list: "- item" lines (at any indentation) up to the next top-level line
        while at < len(lines):
            line = _uncomment(lines[at]).strip()
            if line and not line.startswith("- ") and line != "-":
                if not lines[at][:1].isspace():
                    break
                raise KubeletConfigError(f"{path} line {at + 1}: {key} must be a list of plain values")
            if line:
                items.append(_scalar(line[1:].strip(), f"{path} line {at + 1}: {key}"))
            at += 1
        if key == "clusterDomain" and items:
            raise KubeletConfigError(f"{where} must be one value, not a list")
        found[key] = items if key == "clusterDNS" else ""
    return found


def _flow_list(text: str, where: str) -> list[str]:
    if not text.endswith("]"):
        raise KubeletConfigError(f"{where}: a [list] must end on its line")
    inner = text[1:-1].strip()
    return [_scalar(item.strip(), where) for item in inner.split(",")] if inner else []


def _scalar(text: str, where: str) -> str:
    if text[:1] in "\"'":
        if len(text) < 2 or text[-1] != text[0]:
            raise KubeletConfigError(f"{where}: unterminated quote in {text!r}")
        return text[1:-1]
    if not text or text[0] in "[{&*!|>%@`":
        raise KubeletConfigError(f"{where}: {text!r} is not a plain value")
    return text


def _uncomment(text: str) -> str:
    """``text`` before a `` #`` comment (a ``#`` inside quotes stays)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i]
    return text
