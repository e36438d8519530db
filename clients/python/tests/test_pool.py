"""Kept-alive connections against a real `claimcheck serve` (see
harness.py), counted by a proxy in front of it (harness.Proxy): reuse,
threads, streams left part-way, answers before the body, and connections
the server closed while they sat idle. Run from clients/python:
python3 -m unittest -v
"""

from __future__ import annotations

import io
import os
import threading
import time
import unittest
from typing import Any, Iterator
from unittest import mock

import claimcheck
from claimcheck import Client

from . import test_client
from .harness import CONFIG, Proxy, Server
# The module fixtures start and stop a server of this module's own, kept
# in test_client.server.
from .test_client import data_of, digest, setUpModule, tearDownModule  # noqa: F401


class PoolTest(unittest.TestCase):
    def setUp(self) -> None:
        self.proxy = Proxy(test_client.server.url)
        self.addCleanup(self.proxy.close)
        self.c = Client(self.proxy.url, api_key=test_client.server.keys["admin"])
        self.addCleanup(self.c.close)

    def round_trip(self, c: Client, seed: int, n: int = 1024) -> None:
        """A put of fresh bytes, its stat and its redeem, checked."""
        data = data_of(n, seed=seed)
        ref = c.put("orders", data)
        self.assertEqual((ref.size, ref.digest), (n, digest(data)))
        self.assertEqual(c.stat(ref).state, "active")
        self.assertEqual(c.get_bytes(ref), data)

    def test_sequential_calls_share_one_connection(self) -> None:
        for i in range(30):
            self.round_trip(self.c, seed=1000 + i)
        self.assertEqual(self.proxy.methods, ["PUT", "GET", "GET"] * 30)
        self.assertEqual(self.proxy.connections, 1)
        # A part read to its end and error answers keep it too.
        ref = self.c.put("orders", data_of(300 << 10, seed=1100))
        with self.c.redeem_range(ref, 1000, 5000) as part:
            self.assertEqual(part.read(), data_of(300 << 10, seed=1100)[1000:6000])
        with self.assertRaises(claimcheck.NotFound):
            self.c.stat("cc_AAAAAAAAAAAAAAAAAAAAAA", ns="orders")
        self.round_trip(self.c, seed=1101)
        self.assertEqual(self.proxy.connections, 1)

    def test_no_pool_opens_a_connection_per_request(self) -> None:
        c = Client(self.proxy.url, api_key=test_client.server.keys["admin"], pool_size=0)
        for i in range(5):
            self.round_trip(c, seed=1200 + i)
        self.assertEqual(self.proxy.connections, 15)
        with self.assertRaises(ValueError):
            Client(self.proxy.url, pool_size=-1)

    def test_threads_never_share_a_connection(self) -> None:
        held: set[int] = set()
        shared: list[str] = []
        lock = threading.Lock()
        take, done, connect = claimcheck.client._Pool.take, claimcheck.client._Pool.done, Client._connect

        def hold(conn: Any) -> Any:
            if conn is not None:
                with lock:
                    if id(conn) in held:
                        shared.append(repr(conn))
                    held.add(id(conn))
            return conn

        def took(pool: Any, key: Any) -> Any:
            return hold(take(pool, key))

        def connected(client: Client, url: Any) -> Any:
            return hold(connect(client, url))

        def gave_back(pool: Any, conn: Any, resp: Any) -> None:
            with lock:
                held.discard(id(conn))
            done(pool, conn, resp)

        threads, rounds = 8, 12
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                for i in range(rounds):
                    self.round_trip(self.c, seed=2000 + t * 100 + i, n=1024 + 997 * t)
            except BaseException as e:  # reported below, in the test's thread
                errors.append(e)

        with mock.patch.object(claimcheck.client._Pool, "take", took), \
                mock.patch.object(claimcheck.client._Pool, "done", gave_back), \
                mock.patch.object(Client, "_connect", connected):
            ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(errors, [])
        self.assertEqual(shared, [])
        self.assertEqual(len(self.proxy.methods), threads * rounds * 3)
        # Connections were reused: far fewer than requests, at most one per
        # thread at a time plus those closed beyond the pool's bound.
        self.assertLess(self.proxy.connections, threads * rounds)

    def test_a_stream_left_part_way_does_not_poison_the_pool(self) -> None:
        big, small = data_of(300 << 10, seed=3000), data_of(1000, seed=3001)
        ref, ref2 = self.c.put("orders", big), self.c.put("orders", small)
        for _ in range(3):
            with self.c.redeem(ref) as p:
                self.assertEqual(p.read(1000), big[:1000])
            # Closed before its end: that connection is closed, the next
            # call gets a good one and the right bytes.
            self.assertEqual(self.c.get_bytes(ref2), small)
            with self.c.redeem_range(ref, 0, 200 << 10) as part:
                self.assertEqual(part.read(10), big[:10])
            self.assertEqual(self.c.get_bytes(ref), big)
        self.assertEqual(self.proxy.connections, 1 + 2 * 3)

    def test_an_answer_before_the_body_leaves_the_next_request_correct(self) -> None:
        data = data_of(100 << 10, seed=4000)
        first = self.c.put("orders", data)
        before = self.proxy.connections
        # A dedup hit and a refusal are answered to Expect: 100-continue
        # before the body, which must never follow on that connection.
        dup = self.c.put("orders", data)
        self.assertEqual(dup.digest, first.digest)
        self.round_trip(self.c, seed=4001)
        with self.assertRaises(claimcheck.TooLarge):
            self.c.put("tiny", data_of(2000, seed=4002))
        self.round_trip(self.c, seed=4003)
        self.assertEqual(self.c.get_bytes(dup), data)
        self.assertEqual(self.proxy.connections, before + 2)

    def test_connections_the_server_closed_are_not_an_error(self) -> None:
        self.round_trip(self.c, seed=5000)
        self.proxy.close_all()  # as a server that restarted
        self.round_trip(self.c, seed=5001)
        self.assertEqual(self.proxy.connections, 2)
        # Seen closed before it is used: even a body read as it goes (which
        # is never sent twice) goes on a new connection.
        self.proxy.close_all()
        ref = self.c.put("orders", iter([b"x" * 1000, b"y" * 1000]))
        self.assertEqual(self.c.get_bytes(ref), b"x" * 1000 + b"y" * 1000)
        self.assertEqual(self.proxy.connections, 3)

    def test_a_request_on_a_connection_closed_as_it_came_is_sent_again(self) -> None:
        data = data_of(5000, seed=6000)
        ref = self.c.put("orders", data)
        calls = {
            "stat": lambda: self.c.stat(ref),
            "redeem": lambda: self.assertEqual(self.c.get_bytes(ref), data),
            "put bytes": lambda: self.c.put("orders", data_of(3000, seed=6001)),
            "put a file": lambda: self.c.put("orders", io.BytesIO(data_of(3000, seed=6002))),
            "put without digest first": lambda: self.c.put("nodf", data_of(3000, seed=6003)),
            "extend": lambda: self.c.extend(ref, expires_at=time.time() + 60),
            "release": lambda: self.c.release(ref),
        }
        for i, (name, call) in enumerate(calls.items()):
            with self.subTest(call=name):
                self.proxy.drop_next = True
                call()
                self.assertEqual(self.proxy.dropped, i + 1)
                self.assertEqual(self.proxy.connections, i + 2)

    def test_a_body_that_cannot_be_rewound_is_not_sent_again(self) -> None:
        self.round_trip(self.c, seed=7000)
        sent: list[bytes] = []

        def chunks() -> Iterator[bytes]:
            for block in (b"a" * 1000, b"b" * 1000):
                sent.append(block)
                yield block

        self.proxy.drop_next = True
        with self.assertRaises(claimcheck.Unavailable):
            self.c.put("orders", chunks())
        self.assertEqual(self.proxy.dropped, 1)
        self.assertEqual(self.proxy.methods, ["PUT", "GET", "GET"])
        self.assertEqual(len(sent), 2)  # read once, never again
        self.round_trip(self.c, seed=7001)

    @unittest.skipUnless(hasattr(os, "fork"), "no fork here")
    def test_a_forked_process_opens_its_own_connections(self) -> None:
        self.round_trip(self.c, seed=8100)
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                self.round_trip(self.c, seed=8101)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        # The child opened its own connection, never used the parent's,
        # which is still good.
        self.assertEqual(self.proxy.connections, 2)
        self.round_trip(self.c, seed=8102)
        self.assertEqual(self.proxy.connections, 2)

    def test_close_closes_the_idle_connections(self) -> None:
        with Client(self.proxy.url, api_key=test_client.server.keys["admin"]) as c:
            self.round_trip(c, seed=8000)
            self.assertEqual(self.proxy.open_connections(), 1)
        wait_for(lambda: self.proxy.open_connections() == 0)
        # Still usable, a connection per request from now on.
        self.round_trip(c, seed=8001)
        wait_for(lambda: self.proxy.open_connections() == 0)
        self.assertEqual(self.proxy.connections, 4)


class IdleTimeoutTest(unittest.TestCase):
    """A server whose keep-alive connections time out after a second
    (http.idle_timeout; `claimcheck serve`'s default is 2 minutes)."""

    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(CONFIG + "http:\n  idle_timeout: 1s\n")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def setUp(self) -> None:
        self.proxy = Proxy(self.server.url)
        self.addCleanup(self.proxy.close)
        self.c = Client(self.proxy.url, api_key=self.server.keys["admin"])
        self.addCleanup(self.c.close)

    def idle(self) -> None:
        """Waits until the server closed the kept connection."""
        wait_for(lambda: self.proxy.open_connections() == 0)

    def test_a_connection_the_server_timed_out_is_replaced(self) -> None:
        data = data_of(2000, seed=9000)
        ref = self.c.put("orders", data)
        self.idle()
        self.assertEqual(self.c.get_bytes(ref), data)
        self.assertEqual(self.proxy.connections, 2)

    def test_a_timed_out_connection_taken_for_open_is_retried(self) -> None:
        """The race: the connection looks open when taken and the server's
        close meets the request. Taken anyway here, the request fails
        before any answer and goes again on a new connection."""
        data = data_of(2000, seed=9001)
        ref = self.c.put("orders", data)
        with mock.patch.object(claimcheck.client, "_still_open", return_value=True):
            for i, call in enumerate((lambda: self.c.stat(ref),
                                      lambda: self.c.put("orders", data_of(2000, seed=9002)),
                                      lambda: self.assertEqual(self.c.get_bytes(ref), data))):
                self.idle()
                call()
                self.assertEqual(self.proxy.connections, i + 2)


def wait_for(cond: Any, limit: float = 20.0) -> None:
    """Waits until cond() holds (a state the other side reaches by itself)."""
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not come about")
        time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
