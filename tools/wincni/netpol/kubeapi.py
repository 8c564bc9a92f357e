"""Talking to the API server from a HostProcess container: in-cluster config, TLS, GET.

Our own, on the standard library, rather than a client package: lightkube 0.17 (what pip picks
for our Python) reads the service-account token once, so it fails an hour after start when
kubelet rotates it, and has no watch bookmarks nor 410 handling; lightkube 1.0 re-reads the token
and restarts on 410 but has no bookmarks either, and needs httpx2 with HTTP/2 and WebSocket
extras, msgspec (compiled), PyYAML (compiled) and its model package: a few MB in the frozen
bundle for two GETs. The agent needs a paged list and a streamed watch of three kinds.

- In-cluster config: ``KUBERNETES_SERVICE_HOST`` / ``_PORT``, and the service-account folder,
  which a HostProcess container finds under ``CONTAINER_SANDBOX_MOUNT_POINT`` (its volume mounts
  are there, not at the root: Kubernetes docs, "Create a Windows HostProcess Pod", volume mounts).
- The token is read again at most ``TOKEN_TTL`` after the last read, and at once after a 401:
  kubelet rotates the projected token at 80 % of its life and the old one stays valid until it
  expires (Kubernetes docs, "Managing Service Accounts", bound service account tokens).
- TLS is checked against the service account's ``ca.crt``, host name included (the API server's
  certificate names the service address ``KUBERNETES_SERVICE_HOST``).
- Files are read as every operator input is (``basics.inputfile``: nothing blocking, a link only
  an administrator's, as kubelet lays these), capped.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import time
import urllib.parse

from basics import inputfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

SA_DIR = ("var", "run", "secrets", "kubernetes.io", "serviceaccount")
MAX_TOKEN = 64 << 10
MAX_CA = 1 << 20
#: The largest list page or watch event read; a page holds ``PAGE`` objects.
MAX_BODY = 64 << 20
MAX_EVENT = 4 << 20
PAGE = 500
TOKEN_TTL = 60.0


class ApiError(Exception):
    """The API server answered ``status`` (0: it could not be reached or the answer was unreadable)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status


class Gone(ApiError):
    """410: the resourceVersion is too old; list again."""


class InCluster:
    """Where the API server is and how to prove who we are."""

    def __init__(
        self, host: str, port: int, account: str, clock: Callable[[], float] = time.monotonic, timeout: float = 30.0
    ) -> None:
        self.host, self.port, self.account, self.clock, self.timeout = host, port, account, clock, timeout
        self._token: tuple[str, float] | None = None
        self._context: ssl.SSLContext | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> InCluster:
        host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "443")
        if not host or not port.isdigit():
            raise ApiError(0, "KUBERNETES_SERVICE_HOST/PORT are not set: run in a pod with a service account")
        root = env.get("CONTAINER_SANDBOX_MOUNT_POINT") or os.sep
        return cls(host, int(port), os.path.join(root, *SA_DIR))

    def _read(self, name: str, cap: int) -> bytes:
        path = os.path.join(self.account, name)
        try:
            found = inputfile.read(path, cap)
        except OSError as err:
            raise ApiError(0, f"cannot read {path}: {err}") from None
        if found is None:
            raise ApiError(0, f"{path} is missing: is a service account token mounted?")
        return found.data

    def token(self, fresh: bool = False) -> str:
        now = self.clock()
        if fresh or self._token is None or now - self._token[1] >= TOKEN_TTL:
            self._token = (self._read("token", MAX_TOKEN).decode("ascii", "replace").strip(), now)
        return self._token[0]

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            ctx = ssl.create_default_context(cadata=self._read("ca.crt", MAX_CA).decode("ascii", "replace"))
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            self._context = ctx
        return self._context

    def get(self, path: str, query: Mapping[str, Any], timeout: float | None = None) -> http.client.HTTPResponse:
        """An open response with status 200 (the caller reads and closes it); ApiError otherwise.
        A 401 is tried once more with the token read again (kubelet rotated it)."""
        url = path + "?" + urllib.parse.urlencode(query) if query else path
        try:
            return self._get(path, url, timeout, fresh=False)
        except ApiError as err:
            if err.status != 401:
                raise
        return self._get(path, url, timeout, fresh=True)

    def _get(self, path: str, url: str, timeout: float | None, fresh: bool) -> http.client.HTTPResponse:
        headers = {"Authorization": f"Bearer {self.token(fresh)}", "Accept": "application/json"}
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=self.context(), timeout=timeout or self.timeout
        )
        try:
            conn.request("GET", url, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise ApiError(0, f"GET {path}: {err}") from None
        if resp.status == 200:
            return resp
        body = resp.read(MAX_EVENT)
        conn.close()
        raise _status_error(resp.status, body, path)


def _status_error(status: int, body: bytes, path: str) -> ApiError:
    try:
        message = str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        message = ""
    cls = Gone if status == 410 else ApiError
    return cls(status, f"GET {path}: {message or http.client.responses.get(status, 'error')}")


def read_json(resp: http.client.HTTPResponse, cap: int = MAX_BODY) -> Any:
    try:
        body = resp.read(cap + 1)
    except (OSError, http.client.HTTPException) as err:
        raise ApiError(0, f"reading the answer: {err}") from None
    finally:
        resp.close()
    if len(body) > cap:
        raise ApiError(0, f"an answer larger than {inputfile.size(cap)}")
    try:
        return json.loads(body)
    except ValueError:
        raise ApiError(0, "an answer that is not JSON") from None
