"""Python client of the claimcheck HTTP API (docs/openapi.yaml in the repository).

Standard library only::

    from claimcheck import Client
    c = Client("http://127.0.0.1:8080", api_key="cck_...")
    with open("big.json", "rb") as f:
        ref = c.put("orders", f, content_type="application/json")
    with c.redeem(ref) as payload:      # verified as it streams
        payload.copy_to(out)
"""

from ._version import __version__
from .client import (BLOCK, DEFAULT_CHUNK_SIZE, DEFAULT_RETRIES, Body, ClaimPage, Client, Part, Payload,
                     RefLike)
from .errors import (ChecksumMismatch, ClaimcheckError, Expired, Gone, Held, Internal,
                     InvalidArgument, MethodNotAllowed, NoRoute, NotFound, PermissionDenied,
                     QuotaExceeded, RangeNotSatisfiable, RateLimited, TooLarge, Unauthenticated,
                     Unavailable)
from .info import ClaimInfo, Hold, NamespaceInfo, Policy, Quota, TenantInfo, Usage
from .ref import Ref, is_ref
from .tracing import trace_context, trace_headers

__all__ = [
    "BLOCK", "DEFAULT_CHUNK_SIZE", "DEFAULT_RETRIES", "Body", "ClaimPage", "Client", "Part", "Payload",
    "Ref", "RefLike", "is_ref", "trace_context", "trace_headers",
    "ClaimInfo", "Hold", "NamespaceInfo", "Policy", "Quota", "TenantInfo", "Usage",
    "ClaimcheckError", "ChecksumMismatch", "Expired", "Gone", "Held", "Internal",
    "InvalidArgument", "MethodNotAllowed", "NoRoute", "NotFound", "PermissionDenied",
    "QuotaExceeded", "RangeNotSatisfiable", "RateLimited", "TooLarge", "Unauthenticated", "Unavailable",
    "__version__",
]
