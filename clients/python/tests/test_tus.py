"""Resumable uploads (tus) against a real `claimcheck serve` (see
harness.py), some through a proxy that cuts a PATCH part-way
(harness.Proxy). Run from clients/python: python3 -m unittest -v
"""

from __future__ import annotations

import http.client
import http.server
import io
import json
import os
import tempfile
import unittest
import urllib.parse
from typing import Any
from unittest import mock

import claimcheck
from claimcheck import Client, Ref

from . import test_client
from .harness import Proxy
# The module fixtures start and stop a server of this module's own, kept
# in test_client.server.
from .test_client import FakeServer, data_of, digest, setUpModule, tearDownModule  # noqa: F401


class FakeTusServer(FakeServer):
    """A tus server on 127.0.0.1 of one upload, kept in memory, whose
    PATCHes are answered with ``refusals`` first (status, content type and
    body each; nothing stored), then as the real one answers. ``methods``
    are the requests' methods, in order."""

    def __init__(self, refusals: list[tuple[int, str, bytes]]) -> None:
        received = bytearray()
        size = [0]
        self.methods: list[str] = []
        methods = self.methods

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def state(self) -> dict[str, str]:
                h = {"Tus-Resumable": "1.0.0", "Upload-Offset": str(len(received)), "Upload-Length": str(size[0])}
                if len(received) == size[0]:
                    b = bytes(received)
                    ref = Ref(id="cc_AAAAAAAAAAAAAAAAAAAAAA", ns="raw", size=len(b), stored_size=len(b),
                              compression="none", digest=digest(b), created_at=1, expires_at=0)
                    h["Claimcheck-Ref"] = ref.to_json()
                return h

            def do_POST(self) -> None:
                methods.append("POST")
                size[0] = int(self.headers["Upload-Length"])
                self.answer(201, {"Location": "/v1/tus/up1"})

            def do_HEAD(self) -> None:
                methods.append("HEAD")
                self.answer(200, self.state())

            def do_PATCH(self) -> None:
                methods.append("PATCH")
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if refusals:
                    status, ctype, text = refusals.pop(0)
                    self.answer(status, {"Content-Type": ctype}, text)
                    return
                received.extend(body)
                self.answer(204, self.state())

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)


def json_error(code: str, message: str) -> bytes:
    return json.dumps({"code": code, "message": message}).encode()


class FakeTusTest(unittest.TestCase):
    """Answers the real server gives only in a race, and ones that only
    something in between gives."""

    def setUp(self) -> None:
        # No server here needs time to let go of an upload.
        patch = mock.patch.object(claimcheck.client, "_TUS_BACKOFF", 0.01)
        patch.start()
        self.addCleanup(patch.stop)

    def test_an_offset_mismatch_is_asked_about_and_retried(self) -> None:
        data = data_of(5000, seed=12)
        fake = FakeTusServer([(409, "application/json", json_error("invalid_argument", "mismatched offset"))])
        with fake as url:
            ref = Client(url).upload_resumable("raw", io.BytesIO(data), chunk_size=2000)
        self.assertEqual((ref.size, ref.digest), (len(data), digest(data)))
        self.assertEqual(fake.methods, ["POST", "PATCH", "HEAD", "PATCH", "PATCH", "PATCH"])

    def test_a_locked_upload_is_retried_as_often_as_allowed(self) -> None:
        refusals = [(423, "application/json", json_error("invalid_argument", "locked"))] * 3
        fake = FakeTusServer(refusals)
        with fake as url, self.assertRaises(claimcheck.InvalidArgument) as cm:
            Client(url).upload_resumable("raw", io.BytesIO(b"x" * 10), retries=1)
        self.assertEqual(cm.exception.status, 423)
        self.assertIn("gave up after 2 attempts", str(cm.exception))
        self.assertEqual(fake.methods, ["POST", "PATCH", "HEAD", "PATCH"])

    def test_a_460_without_json_is_a_checksum_mismatch(self) -> None:
        fake = FakeTusServer([(460, "text/plain", b"checksum mismatch")])
        with fake as url, self.assertRaises(claimcheck.ChecksumMismatch) as cm:
            Client(url).upload_resumable("raw", io.BytesIO(b"x" * 10))
        self.assertEqual(cm.exception.status, 460)
        self.assertEqual(fake.methods, ["POST", "PATCH"])


class Stop(Exception):
    """Stands for the end of the process that uploads."""


class ResumableUploadTest(unittest.TestCase):
    def setUp(self) -> None:
        self.proxy = Proxy(test_client.server.url)
        self.addCleanup(self.proxy.close)
        self.key = test_client.server.keys["producer"]
        self.c = Client(self.proxy.url, api_key=self.key)
        self.admin = Client(test_client.server.url, api_key=test_client.server.keys["admin"])
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def file_of(self, data: bytes) -> str:
        path = os.path.join(self.tmp.name, f"payload-{len(data)}-{digest(data)[7:15]}")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def redeem_equal(self, ref: Ref, data: bytes) -> None:
        with self.admin.redeem(ref) as p:
            self.assertEqual(p.read(), data)

    def usage(self, ns: str) -> dict[str, Any]:
        """The namespace's quota figures. finished_claims is left out: an
        upload given up or refused is a claim that finished, and counts
        there (history, not quota)."""
        usage = dict(self.admin.namespace(ns)["usage"])
        usage.pop("finished_claims", None)
        return usage

    def head_status(self, url: str) -> int:
        """The status a plain HEAD of the upload's URL answers."""
        u = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=10)
        try:
            conn.request("HEAD", u.path, headers={"Authorization": f"Bearer {self.key}"})
            return conn.getresponse().status
        finally:
            conn.close()

    def test_chunks_from_a_path_redeem_equal(self) -> None:
        data = data_of(3 << 20 | 123, seed=1)
        offsets: list[int] = []
        ref = self.c.upload_resumable("raw", self.file_of(data), content_type="video/mp4", chunk_size=1 << 20,
                                      progress=lambda off, size: offsets.append(off))
        self.assertEqual((ref.ns, ref.size, ref.digest), ("raw", len(data), digest(data)))
        self.assertEqual(offsets, [1 << 20, 2 << 20, 3 << 20, len(data)])
        self.assertEqual(self.proxy.methods, ["POST"] + ["PATCH"] * 4)
        with self.admin.redeem(ref) as p:
            self.assertEqual(p.content_type, "video/mp4")
            self.assertEqual(p.read(), data)

    def test_a_file_object_is_sent_from_its_position(self) -> None:
        data = data_of(300 << 10, seed=2)
        f = io.BytesIO(b"not this" + data)
        f.seek(8)
        ref = self.c.upload_resumable("raw", f, chunk_size=100 << 10)
        self.assertEqual((ref.size, ref.digest), (len(data), digest(data)))
        self.redeem_equal(ref, data)

    def test_a_cut_patch_goes_on_from_the_server_s_offset(self) -> None:
        data = data_of(3 << 20, seed=3)
        self.proxy.cut_after = 300 << 10  # inside the first chunk's body
        offsets: list[int] = []
        ref = self.c.upload_resumable("raw", self.file_of(data), chunk_size=1 << 20,
                                      progress=lambda off, size: offsets.append(off))
        self.assertEqual((ref.size, ref.digest), (len(data), digest(data)))
        self.assertEqual(self.proxy.methods.count("HEAD"), 1, self.proxy.methods)
        self.assertEqual(self.proxy.methods[:2], ["POST", "PATCH"])
        self.assertEqual(self.proxy.methods[2], "HEAD")
        self.assertEqual(offsets[-1], len(data))
        self.redeem_equal(ref, data)

    def test_a_lost_answer_goes_on_after_the_stored_chunk(self) -> None:
        data = data_of(2 << 20, seed=11)
        self.proxy.lose_answer = True
        offsets: list[int] = []
        ref = self.c.upload_resumable("raw", self.file_of(data), chunk_size=1 << 20,
                                      progress=lambda off, size: offsets.append(off))
        # The first chunk was stored: the HEAD says so, and only the second is sent.
        self.assertEqual(self.proxy.methods, ["POST", "PATCH", "HEAD", "PATCH"])
        self.assertEqual(offsets, [1 << 20, 2 << 20])
        self.redeem_equal(ref, data)

    def test_no_retries_gives_the_cut_up(self) -> None:
        data = data_of(2 << 20, seed=4)
        self.proxy.cut_after = 100 << 10
        urls: list[str] = []
        with self.assertRaises(claimcheck.Unavailable) as cm:
            self.c.upload_resumable("raw", self.file_of(data), chunk_size=1 << 20, retries=0, created=urls.append)
        self.assertIn("gave up after 1 attempts", str(cm.exception))
        self.assertEqual(self.proxy.methods, ["POST", "PATCH"])
        # The upload is still there, to be resumed.
        ref = self.c.resume_upload(urls[0], self.file_of(data), chunk_size=1 << 20)
        self.redeem_equal(ref, data)

    def test_resume_from_the_saved_url_in_a_new_client(self) -> None:
        data = data_of(3 << 20, seed=5)
        path = self.file_of(data)
        saved: list[str] = []

        def stop_after_first_chunk(offset: int, size: int) -> None:
            if offset >= 1 << 20:
                raise Stop()

        with self.assertRaises(Stop):
            self.c.upload_resumable("raw", path, content_type="text/csv", chunk_size=1 << 20,
                                    created=saved.append, progress=stop_after_first_chunk)
        self.assertEqual(len(saved), 1)
        self.assertTrue(saved[0].startswith(self.proxy.url + "/v1/tus/"), saved[0])

        offsets: list[int] = []
        again = Client(test_client.server.url, api_key=self.key)
        ref = again.resume_upload(saved[0], path, digest=digest(data), chunk_size=1 << 20,
                                  progress=lambda off, size: offsets.append(off))
        self.assertEqual(offsets, [1 << 20, 2 << 20, 3 << 20])  # the HEAD's offset, then each chunk
        with self.admin.redeem(ref) as p:
            self.assertEqual(p.content_type, "text/csv")
            self.assertEqual(p.read(), data)
        # Complete: resuming again (by id too) answers the ref, sending nothing.
        upload_id = saved[0].rsplit("/", 1)[1]
        for upload in (saved[0], upload_id):
            with open(path, "rb") as f:
                self.assertEqual(again.resume_upload(upload, f), ref)
        self.assertEqual(self.head_status(saved[0]), 200)

    def test_abort_leaves_nothing(self) -> None:
        data = data_of(2 << 20, seed=6)
        path = self.file_of(data)
        before = self.usage("raw")
        saved: list[str] = []

        def stop(offset: int, size: int) -> None:
            self.assertEqual(self.usage("raw")["reserved_bytes"], before["reserved_bytes"] + len(data))
            raise Stop()

        with self.assertRaises(Stop):
            self.c.upload_resumable("raw", path, chunk_size=1 << 20, created=saved.append, progress=stop)
        self.c.abort_upload(saved[0])
        self.c.abort_upload(saved[0])  # finished already: no error
        self.assertEqual(self.usage("raw"), before)
        self.assertIn(self.head_status(saved[0]), (404, 410))
        with self.assertRaises((claimcheck.Gone, claimcheck.NotFound)):
            self.c.resume_upload(saved[0], path)

    def test_a_url_that_cannot_be_kept_drops_the_upload(self) -> None:
        data = data_of(1 << 20, seed=7)
        before = self.usage("raw")
        saved: list[str] = []

        def cannot_keep(url: str) -> None:
            saved.append(url)
            raise OSError("disk full")

        with self.assertRaisesRegex(OSError, "disk full"):
            self.c.upload_resumable("raw", self.file_of(data), created=cannot_keep)
        self.assertNotIn("PATCH", self.proxy.methods)
        self.assertEqual(self.proxy.methods[-1], "DELETE")
        self.assertIn(self.head_status(saved[0]), (404, 410))
        self.assertEqual(self.usage("raw"), before)

    def test_a_wrong_digest_is_refused_and_nothing_committed(self) -> None:
        data = data_of(1 << 20, seed=8)
        before = self.usage("raw")
        saved: list[str] = []
        with self.assertRaises(claimcheck.ChecksumMismatch) as cm:
            self.c.upload_resumable("raw", self.file_of(data), digest=digest(b"other bytes"),
                                    chunk_size=256 << 10, created=saved.append)
        self.assertEqual(cm.exception.status, 460)
        # A refused upload is final: no retry, no HEAD.
        self.assertEqual(self.proxy.methods, ["POST"] + ["PATCH"] * 4)
        self.assertEqual(self.usage("raw"), before)
        self.assertIn(self.head_status(saved[0]), (404, 410))

    def test_errors(self) -> None:
        data = data_of(2000, seed=9)
        path = self.file_of(data)
        with self.assertRaises(claimcheck.TooLarge) as cm:
            self.c.upload_resumable("tiny", path)  # max_size 1 KiB
        self.assertEqual(cm.exception.status, 413)
        self.assertIn("Upload-Length", cm.exception.message)
        for kwargs in ({"digest": "md5:abc"}, {"chunk_size": 0}, {"retries": -1}):
            with self.subTest(**kwargs), self.assertRaises(claimcheck.InvalidArgument):
                self.c.upload_resumable("raw", path, **kwargs)
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.upload_resumable("Not A Namespace", path)
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.resume_upload("ftp://example/x", path)
        with open(path) as text, self.assertRaises(claimcheck.InvalidArgument):
            self.c.upload_resumable("raw", text)  # type: ignore[arg-type]
        # Another payload than the upload's.
        saved: list[str] = []

        def stop(offset: int, size: int) -> None:
            raise Stop()

        with self.assertRaises(Stop):
            self.c.upload_resumable("raw", path, chunk_size=1000, created=saved.append, progress=stop)
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.resume_upload(saved[0], io.BytesIO(data + b"more"))
        # A chunk that is not the bytes the upload had: the server refuses it.
        with self.assertRaises(claimcheck.ChecksumMismatch):
            self.c.resume_upload(saved[0], io.BytesIO(data_of(2000, seed=10)))
        self.c.abort_upload(saved[0])
        with self.assertRaises((claimcheck.Gone, claimcheck.NotFound)):
            self.c.resume_upload(saved[0], path)
        with self.assertRaises(claimcheck.NotFound):
            self.c.resume_upload("cc_AAAAAAAAAAAAAAAAAAAAAA", path)

    def test_an_empty_file(self) -> None:
        saved: list[str] = []
        ref = self.c.upload_resumable("raw", io.BytesIO(b""), created=saved.append)
        self.assertEqual((ref.size, ref.digest), (0, digest(b"")))
        self.assertEqual(len(saved), 1)
        self.assertEqual(self.admin.get_bytes(ref), b"")


if __name__ == "__main__":
    unittest.main()
