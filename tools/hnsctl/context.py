"""What every hnsctl command is handed: where to print, the environment, and HNS (both API
clients over one raw stack, opened on first use so ``version`` can report an HNS that does not
answer instead of failing on it)."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping, Sequence, TextIO

from basics.cli import UsageError
from libhns import errors
from libhns.client import HcnClient, HnsCallClient


class HnsctlContext:
    def __init__(self, out: TextIO, env: Mapping[str, str]) -> None:
        self.out, self.env = out, env
        self._clients: tuple[HcnClient, HnsCallClient] | None = None

    def _open(self) -> tuple[HcnClient, HnsCallClient]:
        if self._clients is None:
            from libhns.client import open_clients

            self._clients = open_clients(self.env)
        return self._clients

    @property
    def hcn(self) -> HcnClient:
        return self._open()[0]

    @property
    def hnscall(self) -> HnsCallClient:
        return self._open()[1]

    def view(self, args: argparse.Namespace) -> Any:
        """The API the command's ``--v1`` picks (HCN when it has none)."""
        from tools.hnsctl.views import HcnView, HnsCallView

        return HnsCallView(self.hnscall) if getattr(args, "v1", False) else HcnView(self.hcn)

    @staticmethod
    def found(what: str, ref: str, obj: Any) -> Any:
        """``obj``, or HNS's own not-found error naming ``what`` was asked for."""
        if obj is None:
            raise errors.NotFound(f"{what} {ref!r}", None, None, "not found")
        return obj

    def network(self, args: argparse.Namespace, ref: str) -> Any:
        return self.found("network", ref, self.view(args).network(ref))

    def endpoint(self, args: argparse.Namespace, ref: str) -> Any:
        return self.found("endpoint", ref, self.view(args).endpoint(ref))

    def delete_each(self, ids: Sequence[str], delete: Callable[[str], None], what: str) -> None:
        """Each in turn; the first that fails stops the rest (those before it stay deleted)."""
        for id_ in ids:
            delete(id_)
            self.out.write(f"deleted {what} {id_}\n")

    def simulator(self) -> Any:
        """The simulator behind HNS, for what only it can do; a usage error on real HNS. HNS is
        opened first, so a backend name that is neither is reported as such."""
        from libhns.backend import backend_name

        self._open()
        if backend_name(self.env) != "sim":
            raise UsageError("hnsctl: container and restart commands work only on the simulator (LIBHNS_BACKEND=sim)")
        from libhns.sim import Simulator

        return Simulator.from_env(self.env)
