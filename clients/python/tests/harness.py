"""A real `claimcheck serve` for the tests and the benchmark.

The binary is built from this repository (``go build``) unless
CLAIMCHECK_TEST_BIN names one already built (scripts/test.sh builds it once).
The server runs on a temporary data directory, on a free port of
127.0.0.1 that it picks itself (``--listen 127.0.0.1:0``; its URL is read
from its log), with auth on; stop() ends it. A :class:`Proxy` in front of
it counts connections and requests, and cuts or drops them on demand.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import BinaryIO, Iterator, Optional

REPO = Path(__file__).resolve().parents[3]

CONFIG = """\
namespaces:
  orders: {}
  raw: {compression: none}
  tiny: {max_size: 1KiB, threshold: 100}
  offl: {threshold: 100}
  quota1: {quota: {claims: 1}}
  gz: {compression: gzip}
  keep: {ttl: {max_age: 1h, max_lifetime: 48h}}
  nodf: {digest_first: false}
  small: {inline_below: 4KiB}
"""


def build_binary(out_dir: str) -> str:
    """The claimcheck binary: CLAIMCHECK_TEST_BIN, or built into out_dir."""
    given = os.environ.get("CLAIMCHECK_TEST_BIN")
    if given:
        return given
    path = os.path.join(out_dir, "claimcheck")
    subprocess.run(["go", "build", "-o", path, "./cmd/claimcheck"], cwd=REPO, check=True,
                   stdin=subprocess.DEVNULL)
    return path


class Server:
    def __init__(self, config: str = CONFIG, auth: bool = True) -> None:
        self.dir = tempfile.mkdtemp(prefix="claimcheck-py-")
        self.bin = build_binary(self.dir)
        self.data = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "config.yaml")
        with open(self.config, "w") as f:
            f.write(config)
        self.auth = auth
        self.keys: dict[str, str] = {}
        if auth:
            for role in ("admin", "producer", "consumer"):
                self.keys[role] = self.create_key(role)
        self.log_path = os.path.join(self.dir, "serve.log")
        self._log = open(self.log_path, "wb")
        args = [self.bin, "serve", "--config", self.config, "--data", self.data,
                "--listen", "127.0.0.1:0"]
        if auth:
            args.append("--auth")
        self.proc: Optional[subprocess.Popen[bytes]] = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = self._wait_for_url()

    def create_key(self, role: str, ns: str = "") -> str:
        args = [self.bin, "keys", "create", "--config", self.config, "--data", self.data,
                "--role", role, "--json"]
        if ns:
            args += ["--ns", ns]
        out = subprocess.run(args, check=True, capture_output=True, stdin=subprocess.DEVNULL).stdout
        return json.loads(out)["token"]

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                m = re.search(rb'msg="claimcheck serving" url=(http://127\.0\.0\.1:\d+)', f.read())
            if m:
                return m.group(1).decode()
            if self.proc is not None and self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("claimcheck serve did not start; its log:\n" + self.log())

    def log(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def cli(self, *args: str, key: Optional[str] = None, stdin: Optional[bytes] = None) -> bytes:
        """Runs a client command of the Go CLI against this server."""
        cmd = [self.bin, *args, "--server", self.url]
        if key:
            cmd += ["--api-key", key]
        r = subprocess.run(cmd, input=stdin if stdin is not None else b"", capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.decode()}")
        return r.stdout

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()  # graceful: serve stops on SIGTERM
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """A TCP proxy on 127.0.0.1 to a server that reads the HTTP/1.1
    requests it passes on, several per connection (keep-alive).

    ``connections`` counts the connections accepted, ``methods`` the
    requests passed on, in order. While ``cut_after`` is set, the next
    PATCH's connection is closed after that many bytes of the request (its
    head and part of its body): the client's request fails without an
    answer, the server sees a short body. While ``lose_answer`` is set, the
    next PATCH reaches the server whole but its answer is not passed on.
    While ``drop_next`` is set, the next request on a connection that
    carried one before is not passed on and its connection closes, as a
    server that closed the connection while it sat idle (``dropped`` counts
    them). :meth:`close_all` closes every connection open now, as a server
    that restarts."""

    def __init__(self, target: str) -> None:
        u = urllib.parse.urlsplit(target)
        self._target = (u.hostname or "", u.port or 80)
        self.cut_after = 0
        self.lose_answer = False
        self.drop_next = False
        self.connections = 0
        self.dropped = 0
        self.methods: list[str] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._clients: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()
        self.close_all()

    def open_connections(self) -> int:
        """The client connections open now."""
        with self._lock:
            return len(self._clients & self._open)

    def close_all(self) -> None:
        with self._lock:
            socks, self._open = self._open, set()
        self._close(*socks)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self._target)
        with self._lock:
            self.connections += 1
            self._open.update((client, upstream))
            self._clients.add(client)
        lose = threading.Event()
        threading.Thread(target=self._answers, args=(upstream, client, lose), daemon=True).start()
        rfile = client.makefile("rb")
        served = 0
        try:
            while True:
                head = self._head(rfile)
                if not head:
                    break
                method = head.split(b" ", 1)[0].decode("latin-1")
                with self._lock:
                    if self.drop_next and served:
                        self.drop_next = False
                        self.dropped += 1
                        break
                    self.methods.append(method)
                    cut = self.cut_after if method == "PATCH" else 0
                    if cut:
                        self.cut_after = 0
                    if self.lose_answer and method == "PATCH":
                        self.lose_answer = False
                        lose.set()
                served += 1
                left = cut or -1
                # The head first: the body may wait for the server's 100 Continue.
                for block in itertools.chain([head], self._body(head, rfile)):
                    if left > 0 and len(block) >= left:
                        upstream.sendall(block[:left])
                        raise ConnectionAbortedError("cut")
                    upstream.sendall(block)
                    left -= len(block)
        except (OSError, ValueError):
            pass
        rfile.close()
        self._close(client, upstream)

    @staticmethod
    def _head(rfile: BinaryIO) -> bytes:
        """A request's line and header lines; b"" at the connection's end."""
        head = b""
        while True:
            line = rfile.readline(65537)
            if not line:
                return b""
            head += line
            if line in (b"\r\n", b"\n"):
                return head

    @staticmethod
    def _body(head: bytes, rfile: BinaryIO) -> Iterator[bytes]:
        """The request's body as it is read: Content-Length bytes, or the
        chunks of a chunked body with their framing."""
        fields = {}
        for field in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = field.partition(":")
            fields[name.strip().lower()] = value.strip().lower()
        if "chunked" in fields.get("transfer-encoding", ""):
            while True:
                line = rfile.readline(65537)
                yield line
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    break
                yield rfile.read(size + 2)
            while True:  # the trailer, up to its empty line
                line = rfile.readline(65537)
                yield line
                if line in (b"\r\n", b"\n", b""):
                    return
        n = int(fields.get("content-length") or 0)
        while n > 0:
            block = rfile.read(min(n, 1 << 16))
            if not block:
                raise ConnectionAbortedError("short body")
            yield block
            n -= len(block)

    def _answers(self, upstream: socket.socket, client: socket.socket, lose: threading.Event) -> None:
        """Copies the server's answers to the client; once ``lose`` is set,
        the next answer's first bytes close both connections instead (every
        earlier answer was read by the client before it sent the request)."""
        try:
            while block := upstream.recv(1 << 16):
                if lose.is_set():
                    break
                client.sendall(block)
        except OSError:
            pass
        self._close(upstream, client)

    def _close(self, *socks: socket.socket) -> None:
        with self._lock:
            self._open.difference_update(socks)
            self._clients.difference_update(socks)
        for s in socks:
            # shutdown, not close alone, wakes a thread blocked reading it.
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
