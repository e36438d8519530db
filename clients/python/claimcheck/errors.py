"""Typed exceptions mirroring the API's error codes (docs/HTTP.md, "Errors").

The server answers every error as JSON with a stable ``code``; several codes
share an HTTP status, so the client picks the exception by code, never by
status. Catch :class:`ClaimcheckError` for all of them.
"""

from __future__ import annotations

import json
from typing import Any, Optional


class ClaimcheckError(Exception):
    """An error answered by the server, or found by the client's checks.

    ``code`` is the API's error code (``not_found``, ``gone``, ...), ``status``
    the HTTP status (0 when the client found the problem itself).
    """

    code: str = "unknown"

    def __init__(self, message: str, *, code: Optional[str] = None, status: int = 0,
                 reason: str = "", at: str = "") -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        # reason and at are set on gone and expired answers.
        self.reason = reason
        self.at = at

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class NotFound(ClaimcheckError):
    """No such claim (or outside the key's reach, or not in ``?ns=``)."""
    code = "not_found"


class Gone(ClaimcheckError):
    """The claim existed and was finished; ``reason`` says why (deleted, released, ...)."""
    code = "gone"


class Expired(Gone):
    """The claim passed its max_age (a :class:`Gone` with reason ``expired``)."""
    code = "expired"


class ChecksumMismatch(ClaimcheckError):
    """Bytes failed verification: wrong size or sha256, on either side."""
    code = "checksum_mismatch"


class RangeNotSatisfiable(ClaimcheckError):
    """A ranged redeem selects no byte of the payload (an offset at or past
    its end, any range of an empty payload); ``size`` is the payload's size,
    ``offset`` the offset asked for (negative for the last bytes)."""
    code = "range_not_satisfiable"

    def __init__(self, message: str, *, size: Optional[int] = None, offset: Optional[int] = None,
                 **kw: Any) -> None:
        super().__init__(message, **kw)
        self.size = size
        self.offset = offset


class TooLarge(ClaimcheckError):
    """The payload exceeds the namespace's max_size."""
    code = "too_large"


class QuotaExceeded(ClaimcheckError):
    """The namespace's or tenant's quota is used up; a plain retry does not help."""
    code = "quota_exceeded"


class InvalidArgument(ClaimcheckError):
    """A malformed id, namespace, header or body."""
    code = "invalid_argument"


class Unauthenticated(ClaimcheckError):
    """Auth is on and the request has no valid, unrevoked API key."""
    code = "unauthenticated"


class PermissionDenied(ClaimcheckError):
    """The key's role may not do this, or it is limited to another namespace."""
    code = "permission_denied"


class RateLimited(ClaimcheckError):
    """Over the server's rate or stream limit; ``retry_after`` is in seconds."""
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: Optional[int] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class Held(ClaimcheckError):
    """The claim or its namespace is on legal hold."""
    code = "held"


class Unavailable(ClaimcheckError):
    """A backend failed (or a gateway answered 502/503/504); retrying may help."""
    code = "unavailable"


class Internal(ClaimcheckError):
    """The server failed; the details are in its log."""
    code = "internal"


class NoRoute(ClaimcheckError):
    """The path is not an API route: a wrong server URL, never a missing claim."""
    code = "no_route"


class MethodNotAllowed(ClaimcheckError):
    """The path exists with other methods."""
    code = "method_not_allowed"


_BY_CODE: dict[str, type[ClaimcheckError]] = {
    cls.code: cls
    for cls in (NotFound, Gone, Expired, ChecksumMismatch, RangeNotSatisfiable, TooLarge, QuotaExceeded,
                InvalidArgument, Unauthenticated, PermissionDenied, RateLimited, Held,
                Unavailable, Internal, NoRoute, MethodNotAllowed)
}


# What an answer without a body says by its status alone: an answer to
# HEAD (a resumable upload's status) has none.
_BY_STATUS: dict[int, type[ClaimcheckError]] = {
    404: NotFound, 410: Gone, 401: Unauthenticated, 403: PermissionDenied, 429: RateLimited,
    502: Unavailable, 503: Unavailable, 504: Unavailable,
}


def error_from_body(status: int, body: bytes, headers: Any = None, *, head: bool = False) -> ClaimcheckError:
    """The exception for an error answer (its status, body and headers).
    ``head``: the answer is to a HEAD request, whose status is all it says."""
    if head and not body and status in _BY_STATUS:
        cls = _BY_STATUS[status]
        kw: dict[str, Any] = {"status": status}
        if cls is RateLimited:
            kw["retry_after"] = _retry_after(headers)
        return cls(f"HTTP {status} answered to HEAD", **kw)
    try:
        doc = json.loads(body)
        code = doc["code"]
        message = doc.get("message", "")
        if not isinstance(code, str) or not isinstance(message, str):
            raise ValueError("not an error body")
    except (ValueError, KeyError, TypeError):
        # Not the API's JSON: a proxy's error page. Gateways that cannot
        # reach the server mean the same as the server's own unavailable.
        text = body[:200].decode("utf-8", "replace")
        if status in (502, 503, 504):
            return Unavailable(f"HTTP {status} from a gateway: {text}", status=status)
        return ClaimcheckError(f"HTTP {status}: {text}", code=f"http_{status}", status=status)
    cls = _BY_CODE.get(code, ClaimcheckError)
    kw = {"status": status, "reason": doc.get("reason") or "", "at": doc.get("at") or ""}
    if cls is ClaimcheckError:
        kw["code"] = code  # a code from a newer server: kept as it is
    if cls is RateLimited:
        kw["retry_after"] = _retry_after(headers)
    if cls is RangeNotSatisfiable:
        # Content-Range: bytes */SIZE gives the payload's size.
        cr = headers.get("Content-Range") if headers is not None else None
        size = cr[len("bytes */"):] if cr and cr.startswith("bytes */") else ""
        kw["size"] = int(size) if size.isdigit() else None
    return cls(message, **kw)


def _retry_after(headers: Any) -> Optional[int]:
    """Retry-After in seconds (the form the server sends); None otherwise."""
    retry = headers.get("Retry-After") if headers is not None else None
    return int(retry) if retry and retry.isdigit() else None
