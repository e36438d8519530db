"""Trace context on the Python client's requests: a traceparent the caller
passes, or OpenTelemetry's when the application has it, or nothing. A
recording server stands in for claimcheck here: what is checked is what
the client sends (the end-to-end test through a real server and Jaeger
is internal/systemtest's TestTracingThroughJaeger)."""

from __future__ import annotations

import http.server
import socketserver
import sys
import threading
import types
import unittest
from typing import Any

import claimcheck
from claimcheck import tracing

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        _Recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"code":"not_found","message":"no such claim"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class TraceContextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Recorder)
        cls.httpd.daemon_threads = True
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.client = claimcheck.Client(f"http://127.0.0.1:{cls.httpd.server_address[1]}")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def setUp(self) -> None:
        _Recorder.seen.clear()
        tracing._propagate = None  # look opentelemetry up again

    def stat(self) -> dict[str, str]:
        with self.assertRaises(claimcheck.NotFound):
            self.client.stat("cc_0123456789abcdefghijkl")
        return _Recorder.seen[-1]

    def test_nothing_without_a_context(self) -> None:
        h = self.stat()
        self.assertNotIn("traceparent", h)
        self.assertNotIn("baggage", h)

    def test_a_traceparent_the_caller_passes(self) -> None:
        with claimcheck.trace_context(TP, tracestate="vendor=1", baggage="tenant=acme"):
            h = self.stat()
        self.assertEqual(h["traceparent"], TP)
        self.assertEqual(h["tracestate"], "vendor=1")
        self.assertEqual(h["baggage"], "tenant=acme")
        self.assertNotIn("traceparent", self.stat())  # only inside the block

    def test_a_bad_traceparent_is_refused(self) -> None:
        for bad in ("", "00-xyz", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", TP.upper()):
            with self.assertRaisesRegex(ValueError, "traceparent"):
                with claimcheck.trace_context(bad):
                    pass

    def test_opentelemetry_when_importable(self) -> None:
        # The application's opentelemetry, as far as the client uses it:
        # the global propagator's inject.
        otel = types.ModuleType("opentelemetry")
        propagate = types.ModuleType("opentelemetry.propagate")
        propagate.inject = lambda carrier: carrier.update({"traceparent": TP})  # type: ignore[attr-defined]
        otel.propagate = propagate  # type: ignore[attr-defined]
        sys.modules["opentelemetry"], sys.modules["opentelemetry.propagate"] = otel, propagate
        try:
            self.assertEqual(self.stat()["traceparent"], TP)
            # A traceparent passed explicitly wins.
            other = TP.replace("00f067aa0ba902b7", "1111111111111111")
            with claimcheck.trace_context(other):
                self.assertEqual(self.stat()["traceparent"], other)
        finally:
            del sys.modules["opentelemetry"], sys.modules["opentelemetry.propagate"]


if __name__ == "__main__":
    unittest.main()
