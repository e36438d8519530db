"""The Python client against a real `claimcheck serve` (see harness.py),
and against a fake server that lies, for the checks a real one never
triggers. Run from clients/python: python3 -m unittest -v
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import socketserver
import tempfile
import threading
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

import claimcheck
from claimcheck import Client, Ref

from .harness import Server

server: Server


def setUpModule() -> None:
    global server
    server = Server()


def tearDownModule() -> None:
    server.stop()


def data_of(n: int, seed: int = 0) -> bytes:
    """n bytes that differ per seed (so dedup does not join test cases)."""
    block = hashlib.sha256(f"seed {seed}".encode()).digest()
    return (block * (n // len(block) + 1))[:n]


def digest(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


class ClaimsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.keys["admin"])

    def test_put_and_redeem_every_kind_of_body(self) -> None:
        bodies = {
            "bytes": lambda d: d,
            "file": lambda d: io.BytesIO(d),
            "chunks": lambda d: iter([d[:1000], d[1000:]]),  # no length: sent chunked
        }
        for i, (kind, make) in enumerate(bodies.items()):
            for size in (0, 1000, 300 << 10):
                with self.subTest(kind=kind, size=size):
                    data = data_of(size, seed=i * 10 + size)
                    ref = self.c.put("orders", make(data), content_type="text/plain")
                    self.assertEqual((ref.ns, ref.size, ref.digest), ("orders", size, digest(data)))
                    with self.c.redeem(ref) as p:
                        self.assertEqual(p.ref, ref)
                        self.assertEqual(p.content_type, "text/plain")
                        self.assertEqual(p.read(), data)
                    # A bare id and the JSON form name the same claim.
                    self.assertEqual(self.c.get_bytes(ref.id), data)
                    self.assertEqual(self.c.get_bytes(ref.to_json()), data)

    def test_put_from_a_real_file_streams_in_blocks(self) -> None:
        data = data_of(3 * claimcheck.BLOCK + 17, seed=99)
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            f.seek(0)
            ref = self.c.put("raw", f)
        self.assertEqual(ref.size, len(data))
        with self.c.redeem(ref) as p:
            chunks = list(p.iter_chunks(1 << 16))
        self.assertEqual(b"".join(chunks), data)
        self.assertTrue(all(len(c) <= 1 << 16 for c in chunks))

    def test_stat_release_delete(self) -> None:
        ref = self.c.put("orders", b"fan-out", consumer_names=["audit", "mail,eu"],
                         labels={"team": "billing", "note": "a b=c"})
        info = self.c.stat(ref)
        self.assertEqual(info.state, "active")
        self.assertEqual(info.consumers, 2)
        self.assertEqual(info.labels, {"team": "billing", "note": "a b=c"})
        self.c.release(ref, "audit")
        self.c.release(ref, "audit")  # idempotent per name
        self.assertEqual(self.c.stat(ref).released_by, ["audit"])
        self.c.delete(ref)
        self.c.delete(ref)  # fine on a finished claim
        with self.assertRaises(claimcheck.Gone) as cm:
            self.c.redeem(ref)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.reason), ("gone", 410, "deleted"))
        self.assertEqual(self.c.stat(ref).delete_reason, "deleted")

    def test_answers_are_typed_and_read_by_key(self) -> None:
        ref = self.c.put("orders", b"typed", labels={"team": "billing"})
        info = self.c.stat(ref)
        self.assertIsInstance(info, claimcheck.ClaimInfo)
        self.assertEqual(info.ref, ref)
        self.assertEqual((info["state"], info["labels"], info.get("holds")), (info.state, {"team": "billing"}, None))
        self.assertEqual(info["ref"], ref.to_dict())
        ns = self.c.namespace("orders")
        self.assertIsInstance(ns, claimcheck.NamespaceInfo)
        self.assertEqual(ns.name, "orders")
        self.assertEqual(ns.policy.threshold, ns["policy"]["threshold"])
        self.assertEqual(ns.usage.active_claims, ns["usage"]["active_claims"])
        self.assertGreaterEqual(ns.usage.active_claims, 1)
        self.assertEqual((ns.policy.inline_below, self.c.namespace("small").policy.inline_below), (0, 4096))

    def test_errors_are_typed_by_code(self) -> None:
        unknown = "cc_AAAAAAAAAAAAAAAAAAAAAA"
        with self.assertRaises(claimcheck.NotFound):
            self.c.stat(unknown)
        ref = self.c.put("orders", b"lives in orders")
        with self.assertRaises(claimcheck.NotFound):
            self.c.stat(ref.id, ns="raw")  # ids do not leak across namespaces
        with self.assertRaises(claimcheck.TooLarge):
            self.c.put("tiny", data_of(2000))
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.put("Not A Namespace", b"x")
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.put("orders", b"x", digest="sha256:XYZ")  # a malformed digest is 400...
        with self.assertRaises(claimcheck.ChecksumMismatch):
            self.c.put("orders", b"x" * 10, digest=digest(b"y" * 10))  # ...a wrong one 422
        self.c.put("quota1", b"the one claim")
        with self.assertRaises(claimcheck.QuotaExceeded) as cm:
            self.c.put("quota1", b"one too many")
        self.assertEqual(cm.exception.status, 403)
        with self.assertRaises(claimcheck.NoRoute):
            Client(server.url + "/not-the-api", api_key=server.keys["admin"]).stat(ref)

    def test_api_keys(self) -> None:
        ref = Client(server.url, api_key=server.keys["producer"]).put("orders", b"by the producer")
        consumer = Client(server.url, api_key=server.keys["consumer"])
        self.assertEqual(consumer.get_bytes(ref), b"by the producer")
        with self.assertRaises(claimcheck.PermissionDenied):
            consumer.put("orders", b"consumers may not put")
        with self.assertRaises(claimcheck.Unauthenticated):
            Client(server.url).stat(ref)
        with self.assertRaises(claimcheck.Unauthenticated):
            Client(server.url, api_key="cck_nope_nope").stat(ref)
        limited = Client(server.url, api_key=server.create_key("admin", ns="raw"))
        with self.assertRaises(claimcheck.NotFound):  # outside its namespace: like an unknown id
            limited.stat(ref)

    def test_direct_upload(self) -> None:
        data = data_of(200 << 10, seed=7)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "video.bin"
            path.write_bytes(data)
            ref = self.c.upload_file("raw", path, content_type="video/mp4", labels={"team": "web"},
                                     idempotency_key="job-42")
            # Repeating with the same key answers the same claim.
            again = self.c.upload_file("raw", str(path), content_type="video/mp4", idempotency_key="job-42")
        self.assertEqual(again.id, ref.id)
        self.assertEqual((ref.size, ref.digest, ref.compression), (len(data), digest(data), "none"))
        with self.c.redeem(ref) as p:
            self.assertEqual(p.content_type, "video/mp4")
            self.assertEqual(p.read(), data)

    def test_a_payload_already_stored_is_not_sent_again(self) -> None:
        """Bytes and seekable files are hashed first and sent with
        Expect: 100-continue; the server answers a dedup hit (and a
        refusal) before the body, which is then never read."""
        data = data_of(300 << 10, seed=500)
        first = CountingFile(data)
        ref = self.c.put("orders", first)
        self.assertEqual(first.read_bytes, 2 * len(data))  # hashed, then sent
        again = CountingFile(data)
        dup = self.c.put("orders", again, content_type="text/plain")
        self.assertEqual(again.read_bytes, len(data))  # hashed only
        self.assertNotEqual(dup.id, ref.id)
        self.assertEqual((dup.size, dup.digest), (ref.size, ref.digest))
        with self.c.redeem(dup) as p:
            self.assertEqual((p.content_type, p.read()), ("text/plain", data))
        # bytes too, from a file's current position on.
        self.assertEqual(self.c.put("orders", data).digest, ref.digest)
        tail = CountingFile(b"head" + data)
        tail.seek(4)
        self.assertEqual(self.c.put("orders", tail).digest, ref.digest)
        self.assertEqual(tail.read_bytes, len(data))
        # A refusal before the body: nothing but the hashing read.
        big = CountingFile(data_of(2000, seed=501))
        with self.assertRaises(claimcheck.TooLarge):
            self.c.put("tiny", big)
        self.assertEqual(big.read_bytes, 2000)

    def test_no_hashing_first_where_the_namespace_never_answers_first(self) -> None:
        data = data_of(100 << 10, seed=502)
        first = CountingFile(data)
        self.c.put("nodf", first)  # answered Claimcheck-Digest-First: off
        self.assertEqual(first.read_bytes, 2 * len(data))
        again = CountingFile(data)
        ref = self.c.put("nodf", again)
        self.assertEqual(again.read_bytes, len(data))  # sent only, hashed as it went
        self.assertEqual(self.c.get_bytes(ref), data)

    def test_a_server_that_never_says_continue_gets_the_body(self) -> None:
        data = data_of(1000, seed=503)
        with SilentPutServer() as url:
            ref = Client(url, continue_timeout=0.05).put("orders", data)
        self.assertEqual((ref.size, ref.digest), (len(data), digest(data)))

    def test_offload_and_resolve_against_the_threshold(self) -> None:
        small = {"order": 1}
        large = {"order": 2, "items": ["x" * 50] * 10}  # over offl's 100 bytes
        self.assertIs(self.c.offload("offl", small), small)
        v = self.c.offload("offl", large)
        self.assertTrue(claimcheck.is_ref(v))
        self.assertEqual(Ref.from_dict(v).ns, "offl")
        self.assertEqual(json.loads(json.dumps(v))["type"], "claim_check_ref")  # travels as JSON
        self.assertEqual(self.c.resolve(v), large)
        self.assertEqual(self.c.resolve(small), small)
        # orders keeps the default threshold (50 KiB): inline.
        self.assertIs(self.c.offload("orders", large), large)
        self.assertTrue(claimcheck.is_ref(self.c.offload("orders", large, threshold=10)))


class RangeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.keys["admin"])

    def test_parts_of_every_storage_form(self) -> None:
        data = data_of(300 << 10, seed=300)
        size = len(data)
        # (offset, length) -> the bytes; a suffix, a length past the end.
        cases = {(0, 1): data[:1], (1000, 70000): data[1000:71000], (size - 10, None): data[-10:],
                 (-10, None): data[-10:], (-(size + 5), None): data, (100, 2 * size): data[100:]}
        # zstd frames with a seek table, plain, gzip (read whole on the server).
        for ns in ("orders", "raw", "gz"):
            ref = self.c.put(ns, data, content_type="text/plain")
            for (offset, length), want in cases.items():
                with self.subTest(ns=ns, offset=offset, length=length):
                    with self.c.redeem_range(ref, offset, length) as p:
                        self.assertEqual((p.ref, p.content_type), (ref, "text/plain"))
                        self.assertEqual((p.offset, p.length, p.end),
                                         (size - len(want) if offset < 0 else offset, len(want),
                                          (size - len(want) if offset < 0 else offset) + len(want)))
                        got = b"".join(p.iter_chunks(4096))
                        self.assertEqual(got, want)
                        self.assertEqual(p.read(1), b"")  # and it stays ended

    def test_bad_ranges(self) -> None:
        ref = self.c.put("orders", data_of(1000, seed=301))
        for offset in (1000, 5000):
            with self.subTest(offset=offset), self.assertRaises(claimcheck.RangeNotSatisfiable) as cm:
                self.c.redeem_range(ref, offset, 10)
            self.assertEqual((cm.exception.status, cm.exception.size, cm.exception.offset), (416, 1000, offset))
        empty = self.c.put("orders", b"")
        for offset in (0, -1):
            with self.subTest(empty=offset), self.assertRaises(claimcheck.RangeNotSatisfiable) as cm:
                self.c.redeem_range(empty, offset)
            self.assertEqual(cm.exception.size, 0)
        # Refused before any request (status 0), naming the argument.
        for offset, length, field in ((0, 0, "length"), (10, -1, "length"), (-10, 5, "length"),
                                      (1.5, None, "offset")):
            with self.subTest(offset=offset, length=length), self.assertRaises(claimcheck.InvalidArgument) as cm:
                self.c.redeem_range(ref, offset, length)  # type: ignore[arg-type]
            self.assertEqual(cm.exception.status, 0)
            self.assertIn(field, cm.exception.message)
        with self.assertRaises(claimcheck.NotFound):
            self.c.redeem_range("cc_AAAAAAAAAAAAAAAAAAAAAA", 0, 10)
        self.c.delete(ref)
        with self.assertRaises(claimcheck.Gone):
            self.c.redeem_range(ref, 0, 10)

    def test_only_a_part_reaching_the_end_is_a_read(self) -> None:
        data = data_of(5000, seed=302)
        ref = self.c.put("orders", data)
        self.assertEqual(self.c.redeem_range(ref, 0, 100).read(), data[:100])
        self.assertEqual(self.c.stat(ref).reads, 0)
        self.assertEqual(self.c.redeem_range(ref, 4000).read(), data[4000:])
        self.assertEqual(self.c.stat(ref).reads, 1)


class ListExtendTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.keys["admin"])

    def test_list_pages_and_filters(self) -> None:
        run = self.id()  # a label no other test uses
        refs = [self.c.put("orders", data_of(10, seed=400 + i), labels={"run": run, "i": str(i)})
                for i in range(5)]
        newest_first = [r.id for r in reversed(refs)]
        pages, cursor = [], None
        while True:
            page = self.c.list("orders", labels={"run": run}, limit=2, cursor=cursor)
            pages.append([info.ref.id for info in page.claims])
            if page.next is None:
                break
            cursor = page.next
        self.assertEqual(pages, [newest_first[:2], newest_first[2:4], newest_first[4:]])
        self.assertEqual([i.ref.id for i in self.c.list_all("orders", labels={"run": run}, limit=2)],
                         newest_first)
        # Every filter must match.
        self.assertEqual([i.labels["i"] for i in self.c.list_all("orders", labels={"run": run, "i": "3"})],
                         ["3"])
        self.c.delete(refs[0])
        active = self.c.list("orders", labels={"run": run}, state="active").claims
        self.assertEqual([i.ref.id for i in active], newest_first[:4])
        deleted = self.c.list("orders", labels={"run": run}, state="deleted").claims
        self.assertEqual([(i.ref.id, i.state) for i in deleted], [(refs[0].id, "deleted")])

    def test_extend_and_list_by_expiry(self) -> None:
        run = self.id()
        a = self.c.put("keep", data_of(10, seed=410), labels={"run": run})
        b = self.c.put("keep", data_of(10, seed=411), labels={"run": run})
        info = self.c.extend(a, by=3600)
        self.assertEqual(info.ref.expires_at, a.expires_at + 3600)
        info = self.c.extend(a, by=timedelta(minutes=30))  # by adds again
        self.assertEqual(info.ref.expires_at, a.expires_at + 5400)
        at = datetime.fromtimestamp(a.expires_at + 7200, timezone.utc)
        for _ in range(2):  # expires_at is idempotent
            self.assertEqual(self.c.extend(a.id, expires_at=at).ref.expires_at, a.expires_at + 7200)
        # Never shorter: an earlier expiry answers the claim as it is.
        self.assertEqual(self.c.extend(a, expires_at=b.expires_at).ref.expires_at, a.expires_at + 7200)
        self.assertEqual(self.c.extend(b, expires_at=b.expires_at + 60).ref.expires_at, b.expires_at + 60)
        # Soonest expiry first; the window is [after, before).
        expiring = self.c.list("keep", labels={"run": run}, order="expiring").claims
        self.assertEqual([i.ref.id for i in expiring], [b.id, a.id])
        later = self.c.list("keep", labels={"run": run}, expires_after=b.expires_at + 61).claims
        self.assertEqual([i.ref.id for i in later], [a.id])
        sooner = self.c.list("keep", labels={"run": run},
                             expires_before=datetime.fromtimestamp(a.expires_at + 7200, timezone.utc)).claims
        self.assertEqual([i.ref.id for i in sooner], [b.id])

    def test_bad_listings(self) -> None:
        # The server's answers name the parameter.
        for filters, field in (({"cursor": "nope"}, "cursor"), ({"limit": 0}, "limit"),
                               ({"limit": 1001}, "limit"), ({"state": "lost"}, "state"),
                               ({"order": "oldest"}, "order"), ({"labels": {"": "x"}}, "label"),
                               ({"order": "expiring", "state": "deleted"}, "state")):
            with self.subTest(filters=filters), self.assertRaises(claimcheck.InvalidArgument) as cm:
                self.c.list("orders", **filters)
            self.assertEqual(cm.exception.status, 400)
            self.assertIn(field, cm.exception.message)
        # A cursor of the other order is refused too.
        self.c.put("orders", b"one", labels={"run": self.id()})
        self.c.put("orders", b"two", labels={"run": self.id()})
        cursor = self.c.list("orders", labels={"run": self.id()}, limit=1).next
        self.assertTrue(cursor)
        with self.assertRaises(claimcheck.InvalidArgument) as cm:
            self.c.list("orders", labels={"run": self.id()}, order="expiring", cursor=cursor)
        self.assertIn("cursor", cm.exception.message)
        # Refused here: a time without a zone.
        with self.assertRaises(claimcheck.InvalidArgument) as cm:
            self.c.list("orders", expires_after=datetime(2030, 1, 1))
        self.assertEqual(cm.exception.status, 0)
        self.assertIn("expires_after", cm.exception.message)
        with self.assertRaises(claimcheck.InvalidArgument):
            self.c.list("Not A Namespace")

    def test_bad_extensions(self) -> None:
        ref = self.c.put("keep", data_of(10, seed=420))
        # Refused here, naming the argument.
        for kw, field in (({}, "expires_at or by"), ({"by": 60, "expires_at": 1}, "not both"),
                          ({"by": -5}, "by"), ({"by": timedelta(0)}, "by"), ({"by": "24h"}, "by")):
            with self.subTest(kw=kw), self.assertRaises(claimcheck.InvalidArgument) as cm:
                self.c.extend(ref, **kw)
            self.assertEqual(cm.exception.status, 0)
            self.assertIn(field, cm.exception.message)
        # The server's: past max_lifetime (48h), and a namespace without one.
        with self.assertRaises(claimcheck.InvalidArgument) as cm:
            self.c.extend(ref, by=timedelta(days=3))
        self.assertIn("max_lifetime", cm.exception.message)
        other = self.c.put("orders", b"cannot be extended")
        with self.assertRaises(claimcheck.InvalidArgument) as cm:
            self.c.extend(other, by=60)
        self.assertIn("max_lifetime", cm.exception.message)
        with self.assertRaises(claimcheck.NotFound):
            self.c.extend("cc_AAAAAAAAAAAAAAAAAAAAAA", by=60)
        with self.assertRaises(claimcheck.NotFound):
            self.c.extend(ref.id, by=60, ns="orders")  # ids do not leak across namespaces
        self.c.delete(ref)
        with self.assertRaises(claimcheck.Gone) as cm:
            self.c.extend(ref, by=60)
        self.assertEqual(cm.exception.reason, "deleted")


class VerificationTest(unittest.TestCase):
    """Bytes that are not the claim's never come out quietly."""

    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.keys["admin"])

    def corrupt_new_object(self, ns: str, data: bytes) -> Ref:
        root = Path(server.data) / "blobs" / ns
        def objects() -> set[Path]:
            return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()

        before = objects()
        ref = self.c.put(ns, data)
        (obj,) = objects() - before
        b = bytearray(obj.read_bytes())
        b[-1] ^= 0xFF
        obj.write_bytes(bytes(b))
        return ref

    def test_corruption_found_part_way_comes_from_the_trailer(self) -> None:
        data = data_of(300 << 10, seed=1234)
        ref = self.corrupt_new_object("raw", data)
        with self.c.redeem(ref) as p:
            got = bytearray()
            with self.assertRaises(claimcheck.ChecksumMismatch) as cm:
                while chunk := p.read(1 << 16):
                    got += chunk
            self.assertIn("stream failed", cm.exception.message)  # the server's words, from the trailer
            self.assertTrue(p.trailers.get("claimcheck-error"))
            with self.assertRaises(claimcheck.ChecksumMismatch):
                p.read(1)  # and it stays failed
        # Every byte may have arrived (the last one is the altered one):
        # what matters is that the read raised instead of ending.
        self.assertLessEqual(len(got), len(data))

    def test_small_corruption_is_an_error_status(self) -> None:
        ref = self.corrupt_new_object("raw", data_of(1000, seed=4321))
        with self.assertRaises(claimcheck.ChecksumMismatch) as cm:
            self.c.redeem(ref)
        self.assertEqual(cm.exception.status, 422)

    def test_a_ref_that_disagrees_with_the_server(self) -> None:
        ref = self.c.put("orders", b"the real bytes")
        forged = Ref(**{**ref.__dict__, "digest": digest(b"other bytes")})
        with self.assertRaises(claimcheck.ChecksumMismatch):
            self.c.redeem(forged)

    def test_a_lying_server(self) -> None:
        """The client's own checks, against a server that sends wrong bytes
        with an empty trailer: too few, too many, or altered."""
        data = b"0123456789" * 10
        ref = Ref(id="cc_AAAAAAAAAAAAAAAAAAAAAA", ns="orders", size=len(data), stored_size=len(data),
                  compression="none", digest=digest(data), created_at=1, expires_at=0)
        for name, body in (("short", data[:-1]), ("long", data + b"!"), ("altered", data[:-1] + b"X"),
                           ("whole", data)):
            with self.subTest(name), LyingServer(ref, body) as url:
                with Client(url).redeem(ref) as p:
                    if name == "whole":
                        self.assertEqual(p.read(), data)
                        continue
                    with self.assertRaises(claimcheck.ChecksumMismatch):
                        p.read()

    def test_a_range_of_a_corrupt_object(self) -> None:
        # zstd frames: the altered seek table fails every range, never
        # answers other bytes.
        ref = self.corrupt_new_object("orders", data_of(300 << 10, seed=4322))
        with self.assertRaises(claimcheck.ChecksumMismatch):
            with self.c.redeem_range(ref, 1000, 100) as p:
                p.read()

    def test_a_lying_server_s_ranges(self) -> None:
        """A part is exactly the bytes asked for: a Content-Range for other
        bytes, a short or long body raise; a whole payload (the server
        ignored the Range) is cut here and verified whole."""
        data = bytes(range(100))
        ref = Ref(id="cc_AAAAAAAAAAAAAAAAAAAAAA", ns="orders", size=len(data), stored_size=len(data),
                  compression="none", digest=digest(data), created_at=1, expires_at=0)
        cr = {"Content-Range": "bytes 10-19/100"}
        cases = (
            ("other bytes", 206, {"Content-Range": "bytes 0-9/100"}, data[:10]),
            ("no Content-Range", 206, {}, data[10:20]),
            ("short", 206, cr, data[10:19]),
            ("long", 206, cr, data[10:21]),
            ("whole altered after the part", 200, {}, data[:-1] + b"X"),
        )
        for name, status, headers, body in cases:
            with self.subTest(name), LyingServer(ref, body, status, headers) as url:
                with self.assertRaises(claimcheck.ChecksumMismatch):
                    with Client(url).redeem_range(ref, 10, 10) as p:
                        p.read()
        for status, headers, body in ((206, cr, data[10:20]), (200, {}, data)):
            with self.subTest(status=status), LyingServer(ref, body, status, headers) as url:
                with Client(url).redeem_range(ref, 10, 10) as p:
                    self.assertEqual(p.read(), data[10:20])

    def test_ref_parsing_is_strict(self) -> None:
        good = self.c.put("orders", b"x").to_dict()
        self.assertEqual(Ref.from_dict(good).to_dict(), good)
        for bad in ({**good, "type": "other"}, {**good, "v": 2}, {**good, "extra": 1},
                    {**good, "id": "cc_short"}, {**good, "digest": "md5:00"}, {**good, "size": -1},
                    {**good, "ns": "UPPER"}):
            with self.subTest(bad=bad), self.assertRaises(claimcheck.InvalidArgument):
                Ref.from_dict(bad)


class CountingFile(io.BytesIO):
    """A seekable file that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: Optional[int] = -1) -> bytes:
        b = super().read(size)
        self.read_bytes += len(b)
        return b


class FakeServer:
    """An HTTP server on 127.0.0.1 in a thread of its own, serving Handler;
    a context manager whose value is the server's URL. Each connection has
    a thread of its own, which a connection the client keeps open does not
    hold up when the server stops."""

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentPutServer(FakeServer):
    """An HTTP server on 127.0.0.1 that ignores Expect: 100-continue (as a
    proxy may), reads a put's body and answers its ref."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_expect_100(self) -> bool:
                return True  # no 100 Continue: the client must send anyway

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                ref = Ref(id="cc_AAAAAAAAAAAAAAAAAAAAAA", ns="orders", size=len(body), stored_size=len(body),
                          compression="none", digest=digest(body), created_at=1, expires_at=0)
                answer = ref.to_json().encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)


class LyingServer(FakeServer):
    """An HTTP server on 127.0.0.1 that answers every redeem with body,
    chunked, under the given ref, and an empty Claimcheck-Error trailer
    (with status and headers given: a ranged answer, whatever was asked)."""

    def __init__(self, ref: Ref, body: bytes, status: int = 200,
                 headers: Optional[dict[str, str]] = None) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Claimcheck-Ref", ref.to_json())
                self.send_header("Trailer", "Claimcheck-Error")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\nClaimcheck-Error: \r\n\r\n" % (len(body), body))

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)


class GoInteropTest(unittest.TestCase):
    """The Go client (through the claimcheck CLI) and this one read each
    other's claims on one server."""

    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.keys["admin"])
        self.key = server.keys["admin"]

    def test_python_puts_go_redeems(self) -> None:
        data = data_of(500 << 10, seed=55)
        ref = self.c.put("orders", data, consumers=1)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "copy")
            server.cli("get", ref.to_json(), "-o", out, key=self.key)
            self.assertEqual(Path(out).read_bytes(), data)
        server.cli("release", "--consumer", "go", ref.to_json(), key=self.key)
        self.assertEqual(self.c.stat(ref).releases, 1)

    def test_python_reads_a_part_go_resumes_from_it(self) -> None:
        """Python's first part is the partial file `claimcheck get
        --continue` resumes from: Go asks for the rest with a Range and
        checks the whole file against the reference."""
        data = data_of(600 << 10, seed=57)
        ref = self.c.put("orders", data)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "copy")
            with self.c.redeem_range(ref, 0, 200 << 10) as p, \
                    open(os.path.join(d, f".copy.{ref.id}.partial"), "wb") as f:
                self.assertEqual(p.copy_to(f), 200 << 10)
            server.cli("get", "--continue", ref.to_json(), "-o", out, key=self.key)
            self.assertEqual(Path(out).read_bytes(), data)

    def test_go_puts_python_redeems(self) -> None:
        data = data_of(700 << 10, seed=56)
        out = server.cli("put", "--ns", "orders", "-", key=self.key, stdin=data)
        ref = Ref.parse(out)
        self.assertEqual((ref.size, ref.digest), (len(data), digest(data)))
        self.assertEqual(self.c.get_bytes(ref), data)
        self.c.delete(ref)
        with self.assertRaises(RuntimeError) as cm:
            server.cli("get", ref.id, key=self.key)
        self.assertIn("exit 4", str(cm.exception))  # the CLI's exit code for gone


if __name__ == "__main__":
    unittest.main()
