"""A small kube-apiserver on loopback for the NetworkPolicy agent's tests and bench
(bench/netpol_agent.py): TLS under the test cluster CA (tests/data/netpol), a bearer token
checked, paged lists, and watches streamed chunked as the API server streams them (one JSON
event a line). ``service_account`` lays the token and CA where a pod finds them."""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tools.wincni.netpol.kubeapi import SA_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Iterator

DATA = Path(__file__).resolve().parent / "data" / "netpol"


class FakeApiServer(ThreadingHTTPServer):
    """Serves ``lists`` page by page and ``watches`` one scripted event list per watch request
    (the stream then ends). Once a kind's scripts are used up a watch answers 500, or, with
    ``open_watches``, stays open and streams each event ``push``ed for its kind past its
    resourceVersion, as they come, until ``close``. Accepts only ``tokens``; records requests,
    when each came (``requested_at``) and how many events each kind's watches sent (``sent``)."""

    daemon_threads = True

    def __init__(self, stream: dict, open_watches: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(DATA / "apiserver.crt", DATA / "apiserver.key")
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
        self.lists = stream["lists"]
        self.watches = {k: list(v) for k, v in stream["watches"].items()}
        self.open_watches = open_watches
        self.pushed: dict[str, list[dict]] = {k: [] for k in self.lists}
        self.sent = dict.fromkeys(self.lists, 0)
        self.cond = threading.Condition()
        self.closed = False
        self.tokens = {"token-1"}
        self.requests: list[tuple[str, dict, str]] = []
        self.requested_at: list[float] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def requested(self, kind: str, watching: bool) -> list[dict]:
        return [q for k, q, _ in self.requests if k == kind and ("watch" in q) == watching]

    def push(self, kind: str, events: Iterable[dict]) -> None:
        """Events for the open watches of ``kind`` (and those opened later from before them)."""
        with self.cond:
            self.pushed[kind].extend(events)
            self.cond.notify_all()

    def following(self, kind: str, version: str) -> Iterator[dict]:
        """The events pushed for ``kind`` past resourceVersion ``version``, as they come, until ``close``."""
        at = 0
        while True:
            with self.cond:
                while at == len(self.pushed[kind]) and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                new, at = self.pushed[kind][at:], len(self.pushed[kind])
            yield from (e for e in new if int(_version(e)) > int(version or 0))

    def close(self) -> None:
        """End the open watches and stop serving."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        server: FakeApiServer = self.server  # type: ignore[assignment]
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        kind = url.path.rsplit("/", 1)[-1]
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        server.requests.append((kind, query, token))
        server.requested_at.append(time.time())
        if token not in server.tokens:
            return self._answer(401, {"kind": "Status", "code": 401, "message": "Unauthorized"})
        if "watch" not in query:
            pages, token = server.lists[kind], query.get("continue")
            after = {
                p["metadata"].get("continue"): n for n, p in zip(pages[1:], pages)
            }  # each page by the token before it
            return self._answer(200, after[token] if token else pages[0])
        if server.watches[kind]:
            return self._stream(kind, server.watches[kind].pop(0))
        if server.open_watches:
            return self._stream(kind, server.following(kind, query.get("resourceVersion", "")))
        return self._answer(500, {"kind": "Status", "code": 500, "message": "etcd is away"})

    def _stream(self, kind: str, events: Iterable[dict]) -> None:
        server: FakeApiServer = self.server  # type: ignore[assignment]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            for event in events:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                server.sent[kind] += 1
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away (a stopped agent): its watch ends here

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _version(event: dict) -> str:
    return (event["object"].get("metadata") or {}).get("resourceVersion") or "0"


def service_account(root: Path, token: str = "token-1", ca: str = "ca.crt") -> Path:
    """The token and cluster CA under ``root`` as a pod's mount lays them (a HostProcess
    container's ``CONTAINER_SANDBOX_MOUNT_POINT``)."""
    account = root.joinpath(*SA_DIR)
    account.mkdir(parents=True, exist_ok=True)
    (account / "token").write_text(token + "\n")
    (account / "ca.crt").write_bytes((DATA / ca).read_bytes())
    return account
