"""W3C trace context on the client's requests (traceparent, tracestate, baggage).

The server continues the caller's trace when a request carries it, so a
consumer's redeem shows up under the consumer's span. Where the headers
come from, first match wins:

1. :func:`trace_context`, around the calls: a ``traceparent`` the caller
   has (from a message's headers, say), with ``tracestate`` and
   ``baggage`` when it has them;
2. OpenTelemetry, when the ``opentelemetry`` package is importable: its
   global propagator injects the current span's context (and baggage);
3. nothing.

The client needs no package for this: ``opentelemetry`` is used only
when the application has it.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Any, Iterator, Optional

__all__ = ["trace_context", "trace_headers"]

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")

_given: contextvars.ContextVar[Optional[dict[str, str]]] = contextvars.ContextVar(
    "claimcheck_trace_context", default=None)

# The opentelemetry.propagate module once looked up: None not looked up
# yet, False not importable.
_propagate: Any = None


@contextlib.contextmanager
def trace_context(traceparent: str, tracestate: Optional[str] = None,
                  baggage: Optional[str] = None) -> Iterator[None]:
    """Sends ``traceparent`` (and ``tracestate``, ``baggage``) with every
    request of this thread or task inside the ``with`` block, whatever
    OpenTelemetry's current span is::

        with claimcheck.trace_context(msg.headers["traceparent"]):
            data = client.get_bytes(ref)

    A ``traceparent`` that is not the W3C form
    (``00-<32 hex>-<16 hex>-<2 hex>``) raises ``ValueError`` naming it.
    """
    if not isinstance(traceparent, str) or not _TRACEPARENT.match(traceparent) \
            or traceparent.startswith("ff-") or "-" + "0" * 32 + "-" in traceparent \
            or "-" + "0" * 16 + "-" in traceparent:
        raise ValueError(f"traceparent {traceparent!r}: want 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>")
    h = {"traceparent": traceparent}
    if tracestate:
        h["tracestate"] = tracestate
    if baggage:
        h["baggage"] = baggage
    token = _given.set(h)
    try:
        yield
    finally:
        _given.reset(token)


def trace_headers() -> dict[str, str]:
    """The trace headers a request sent now carries (see the module)."""
    given = _given.get()
    if given is not None:
        return dict(given)
    global _propagate
    if _propagate is None:
        try:
            from opentelemetry import propagate  # type: ignore[import-not-found]
            _propagate = propagate
        except ImportError:
            _propagate = False
    if _propagate is False:
        return {}
    carrier: dict[str, str] = {}
    try:
        _propagate.inject(carrier)
    except Exception:  # an application's broken propagator must not fail the request
        return {}
    return carrier
