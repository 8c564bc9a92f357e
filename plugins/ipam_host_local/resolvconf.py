"""resolv.conf -> the result's ``dns``, read the way the reference reads it."""

from __future__ import annotations

from plugins.cni.result import DNS


def parse(text: str) -> DNS:
    """nameserver/domain/search/options lines; ``#``/``;`` comments and one-word lines skipped.

    ``search`` and ``options`` accumulate across lines, ``domain`` keeps the last one.
    """
    dns = DNS()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[0][0] in "#;":
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver":
            dns.nameservers.append(values[0])
        elif key == "domain":
            dns.domain = values[0]
        elif key == "search":
            dns.search.extend(values)
        elif key == "options":
            dns.options.extend(values)
    return dns
