"""The Python client's direct upload on every storage backend a server
can have: each stores the bytes with its own PUT answer (S3 and files 200,
Azure's Put Blob 201, GCS 200), and the client must take every 2xx as
stored. The emulators are the ones scripts/test.sh starts (fake-gcs-server,
Azurite); a backend whose emulator is not running is skipped, saying so.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import unittest
import uuid
from pathlib import Path

from claimcheck import Client

from .harness import CONFIG, Server

BACKENDS = {
    "azure": "TEST_AZURE_URL",
    "gcs": "TEST_GCS_URL",
}


def storage_url(var: str) -> str:
    """The emulator's URL with a prefix of this run's own, so the store
    owns its part of the shared bucket."""
    base = os.environ[var]
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}prefix=py-{uuid.uuid4().hex[:12]}/"


class DirectUploadOnEveryBackend(unittest.TestCase):
    def test_upload_file(self) -> None:
        for name, var in BACKENDS.items():
            with self.subTest(backend=name):
                if not os.environ.get(var):
                    self.skipTest(f"{var} is not set (scripts/test.sh starts the {name} emulator)")
                server = Server(config=CONFIG + f"storage: '{storage_url(var)}'\n")
                try:
                    c = Client(server.url, api_key=server.keys["producer"])
                    data = hashlib.sha256(name.encode()).digest() * 4096
                    with tempfile.TemporaryDirectory() as d:
                        path = Path(d) / "payload.bin"
                        path.write_bytes(data)
                        ref = c.upload_file("raw", path, content_type="application/octet-stream")
                    self.assertEqual(ref.size, len(data))
                    consumer = Client(server.url, api_key=server.keys["consumer"])
                    with consumer.redeem(ref) as p:
                        self.assertEqual(p.read(), data)
                finally:
                    server.stop()
