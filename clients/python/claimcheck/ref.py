"""The claim reference: what producers hand to consumers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Union

from .errors import InvalidArgument

REF_TYPE = "claim_check_ref"
REF_VERSION = 1

_CLAIM_ID = re.compile(r"^cc_[A-Za-z0-9_-]{22}$")
_NAMESPACE = re.compile(r"^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_FIELDS = ("type", "v", "id", "ns", "size", "stored_size", "compression", "digest",
           "created_at", "expires_at")
# Far above any real reference (about 300 bytes): a guard against feeding
# the parser something that is not one.
_MAX_REF_JSON = 1200


@dataclass(frozen=True)
class Ref:
    """A claim's reference (docs/openapi.yaml, schema ``Ref``).

    ``digest`` is ``sha256:<hex>`` of the original bytes and ``size`` their
    length: a redeem is verified against both. ``created_at`` and
    ``expires_at`` are Unix seconds (``expires_at`` 0: no max_age).
    """

    id: str
    ns: str
    size: int
    stored_size: int
    compression: str
    digest: str
    created_at: int
    expires_at: int

    def to_dict(self) -> dict[str, Any]:
        """The wire form, in the server's field order."""
        return {"type": REF_TYPE, "v": REF_VERSION, "id": self.id, "ns": self.ns,
                "size": self.size, "stored_size": self.stored_size,
                "compression": self.compression, "digest": self.digest,
                "created_at": self.created_at, "expires_at": self.expires_at}

    def to_json(self) -> str:
        """The compact JSON the server and the Go client write."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def __str__(self) -> str:
        return self.to_json()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Ref":
        """Parses a reference strictly, as the Go client does: a wrong type or
        version, an unknown field, a malformed id, namespace or digest and a
        negative size are refused with :class:`InvalidArgument`."""
        if not isinstance(d, Mapping):
            raise InvalidArgument("ref: not a JSON object")
        if d.get("type") != REF_TYPE:
            raise InvalidArgument(f"ref: type is {d.get('type')!r}, want {REF_TYPE!r}")
        if d.get("v") != REF_VERSION:
            raise InvalidArgument(f"ref: unsupported version {d.get('v')!r} (this client reads version {REF_VERSION})")
        unknown = sorted(set(d) - set(_FIELDS))
        if unknown:
            raise InvalidArgument(f"ref: unknown field(s) {', '.join(unknown)}")

        def integer(name: str) -> int:
            v = d.get(name, 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidArgument(f"ref: {name} {v!r} is not a non-negative integer")
            return v

        def string(name: str) -> str:
            v = d.get(name, "")
            if not isinstance(v, str):
                raise InvalidArgument(f"ref: {name} {v!r} is not a string")
            return v

        ref = cls(id=string("id"), ns=string("ns"), size=integer("size"),
                  stored_size=integer("stored_size"), compression=string("compression"),
                  digest=string("digest"), created_at=integer("created_at"),
                  expires_at=integer("expires_at"))
        if not _CLAIM_ID.match(ref.id):
            raise InvalidArgument(f"ref: id {ref.id!r} is not a claim id")
        if len(ref.ns) > 24 or not _NAMESPACE.match(ref.ns):
            raise InvalidArgument(f"ref: namespace {ref.ns!r} is malformed")
        if ref.digest:
            check_digest("ref", ref.digest)
        if ref.compression not in ("", "zstd", "gzip", "none"):
            raise InvalidArgument(f"ref: unknown compression {ref.compression!r}")
        return ref

    @classmethod
    def parse(cls, data: Union[str, bytes]) -> "Ref":
        """Parses the JSON form of a reference (see :meth:`from_dict`)."""
        if len(data) > _MAX_REF_JSON:
            raise InvalidArgument(f"ref: {len(data)} bytes is too long to be a reference")
        try:
            d = json.loads(data)
        except ValueError as e:
            raise InvalidArgument(f"ref: not a JSON reference: {e}") from None
        return cls.from_dict(d)


def is_ref(value: Any) -> bool:
    """Whether a decoded JSON value is a claim reference (what
    :meth:`claimcheck.Client.offload` leaves in place of a large value)."""
    return isinstance(value, Mapping) and value.get("type") == REF_TYPE


def valid_claim_id(s: str) -> bool:
    return bool(_CLAIM_ID.match(s))


def valid_namespace(s: str) -> bool:
    return len(s) <= 24 and bool(_NAMESPACE.match(s))


def check_digest(where: str, digest: str) -> None:
    """Raises InvalidArgument, naming where, unless digest is sha256:<hex>."""
    if not _DIGEST.match(digest):
        raise InvalidArgument(f"{where}: digest {digest!r} is not sha256:<64 lowercase hex digits>")
