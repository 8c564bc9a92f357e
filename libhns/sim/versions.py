"""The HNS versions the simulator answers as, and what a version decides inside HNS.

HNS tells its version only through HNSCall ``GET /globals/version``; clients derive features from
it (hnslib's hcn/hcnglobals.go, which kube-proxy 1.34 vendors as github.com/Microsoft/hnslib
v0.1.1), and HNS itself fails a call its release does not implement. ``libhns.client.Features``
is the clients' side of the same table.
"""

from __future__ import annotations

#: Windows Server 2022 reports HNS 13.3 (an HNS endpoint document with Version 55834574851 from a
#: windows-2022 runner, moby/moby#43479). hnslib gives 13.2 and 13.3 the same features
#: (V2, RemoteSubnet, DSR, IPv6DualStack, SessionAffinity; no ModifyLoadbalancer).
WS2022 = (13, 3)
#: What the simulator reports unless ``LIBHNS_SIM_VERSION`` says otherwise: a Windows Server 2022
#: node, as the goldens' seed HNS reported it.
DEFAULT_VERSION = (13, 2)
#: HCN's V2 API appeared with HNS 9.2; below that computenetwork.dll does not exist.
V2_MIN_VERSION = (9, 2)
#: ``HcnModifyLoadBalancer`` fails E_NOTIMPL before HNS 15.4: the API "was not previously
#: implemented in our control plane" (kubernetes PR #124092, for Windows Server 2025), and
#: kube-proxy takes ``hcn.IsNotImplemented`` from it as "not supported" (proxier.go
#: handleUpdateLoadbalancerFailure); hcsshim gates it at 15.4.
MODIFY_LB_MIN_VERSION = (15, 4)
#: At exactly 15.4 the modify succeeds but the load balancer keeps its old backends
#: (kubernetes#131466, Windows Server 2025), which is why hnslib v0.1.1 asks for 15.5.
MODIFY_LB_KEEPS_BACKENDS = (15, 4)
