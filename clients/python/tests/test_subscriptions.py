"""Subscriptions through the Python client against a real server
(docs/HTTP.md, "Pushed events"): a receiver on 127.0.0.1 refuses one
claim's events; the other claim's arrive, the refused one is listed among
the attempts (parked), retried once the receiver takes it, and a replay
delivers the events again. Cursors and seqs are strings."""

from __future__ import annotations

import json
import threading
import time
import unittest
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from claimcheck import Client
from claimcheck.errors import ClaimcheckError, InvalidArgument

from .harness import Server

CONFIG = """\
namespaces:
  subs: {}
subscriptions:
  allow_loopback_targets: true
  settle: 50ms
  interval: 20ms
  backoff_min: 100ms
  backoff_max: 200ms
"""


class Receiver:
    """Takes CloudEvents (structured mode) and counts them per claim,
    answering 500 to the claims in ``refused``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.refused: set[str] = set()
        self.got: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                subject = json.loads(body)["subject"]
                with outer.lock:
                    if subject in outer.refused:
                        self.send_response(500)
                    else:
                        outer.got[subject] = outer.got.get(subject, 0) + 1
                        self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def count(self, claim: str) -> int:
        with self.lock:
            return self.got.get(claim, 0)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def until(what: str, cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class SubscriptionsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = Server(CONFIG)
        self.addCleanup(self.server.stop)
        self.receiver = Receiver()
        self.addCleanup(self.receiver.close)
        self.c = Client(self.server.url, api_key=self.server.keys["admin"])
        self.addCleanup(self.c.close)

    def test_attempts_retry_replay(self) -> None:
        sub = self.c.create_subscription(self.receiver.url, id="py-hook", types=["created"], events_per_request=1)
        self.assertEqual(sub["id"], "py-hook")
        self.assertTrue(sub["secret"].startswith("whsec_"))
        self.assertIsInstance(sub["cursor"], str)
        since = datetime.now(timezone.utc)

        bad = self.c.put("subs", b"refused")
        with self.receiver.lock:
            self.receiver.refused.add(bad.id)
        good = self.c.put("subs", b"taken")
        until("the other claim's event", lambda: self.receiver.count(good.id) == 1)
        until("the refused event parked", lambda: len(self.c.subscription_attempts("py-hook")["attempts"]) == 1)
        attempt = self.c.subscription_attempts("py-hook", limit=10)["attempts"][0]
        self.assertEqual(attempt["event"]["claim_id"], bad.id)
        self.assertEqual(attempt["state"], "parked")
        self.assertIsInstance(attempt["event"]["seq"], str)

        with self.receiver.lock:
            self.receiver.refused.discard(bad.id)
        self.assertEqual(self.c.retry_subscription("py-hook"), 1)
        until("the retried event", lambda: self.receiver.count(bad.id) == 1)

        self.assertIsInstance(self.c.replay_subscription("py-hook", since), str)
        until("the replayed events", lambda: self.receiver.count(good.id) == 2 and self.receiver.count(bad.id) == 2)

        page = self.c.subscriptions(limit=10)
        self.assertEqual([s["id"] for s in page["subscriptions"]], ["py-hook"])
        self.assertNotIn("secret", page["subscriptions"][0])

        self.c.delete_subscription("py-hook")
        with self.assertRaises(ClaimcheckError) as cm:
            self.c.subscription_attempts("py-hook")
        self.assertEqual(cm.exception.status, 404)
        with self.assertRaises(InvalidArgument) as bad_id:
            self.c.create_subscription("http://127.0.0.1:1/x", id="bad id")
        self.assertIn("id", str(bad_id.exception))


if __name__ == "__main__":
    unittest.main()
