"""A real `claimcheck serve` for the tests and the benchmark.

The binary is built from this repository (``go build``) unless
CLAIMCHECK_TEST_BIN names one already built (scripts/test.sh builds it once).
The server runs on a temporary data directory, on a free port of
127.0.0.1 that it picks itself (``--listen 127.0.0.1:0``; its URL is read
from its log), with auth on; stop() ends it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

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
