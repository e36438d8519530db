"""What the server answers about claims and namespaces, as typed objects.

:class:`ClaimInfo` (``stat``, ``extend``, the claims of ``list``) and
:class:`NamespaceInfo` (``namespace``) are frozen dataclasses with one field
per field of the API (docs/openapi.yaml, schemas ``ClaimInfo`` and
``NamespaceInfo``). Each keeps the answer as the server sent it in ``raw``
and reads it by key too (``info["state"]``, ``info.get("holds")``), so code
written against the answers as dicts goes on working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional

from .ref import Ref

__all__ = ["ClaimInfo", "Hold", "NamespaceInfo", "Policy", "Quota", "TenantInfo", "Usage"]


class _Answer:
    """Read-only mapping access to ``raw``, the answer as the server sent it."""

    raw: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def keys(self) -> Any:
        return self.raw.keys()


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Hold(_Answer):
    """A legal hold on a claim or its namespace: the claim outlives its
    deadlines until the hold is cleared."""

    scope: str
    since: str
    reason: Optional[str] = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Hold":
        return cls(scope=d["scope"], since=d["since"], reason=d.get("reason"), raw=d)


@dataclass(frozen=True)
class ClaimInfo(_Answer):
    """A claim's state, deadlines and counters. Timestamps are RFC 3339
    strings as the server writes them; ``delete_reason`` is the reason a
    finished claim was finished (``expired``, ``released``, ``deleted``, …)."""

    ref: Ref
    state: str
    reads: int
    releases: int
    consumers: int
    content_type: Optional[str] = None
    labels: dict[str, str] = field(default_factory=dict)
    first_read_at: Optional[str] = None
    released_by: list[str] = field(default_factory=list)
    delete_at: Optional[str] = None
    deleted_at: Optional[str] = None
    delete_reason: Optional[str] = None
    holds: list[Hold] = field(default_factory=list)
    #: The key of the claim's object in the store's blob storage when that
    #: object is the payload as it is (uncompressed, unencrypted); else None.
    object: Optional[str] = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ClaimInfo":
        return cls(ref=Ref.from_dict(d["ref"]), state=d["state"], reads=int(d.get("reads", 0)),
                   releases=int(d.get("releases", 0)), consumers=int(d.get("consumers", 0)),
                   content_type=d.get("content_type"), labels=dict(d.get("labels") or {}),
                   first_read_at=d.get("first_read_at"), released_by=list(d.get("released_by") or []),
                   delete_at=d.get("delete_at"), deleted_at=d.get("deleted_at"),
                   delete_reason=d.get("delete_reason"),
                   holds=[Hold.from_dict(h) for h in d.get("holds") or []], object=d.get("object"), raw=d)


@dataclass(frozen=True)
class Quota(_Answer):
    """Limits in bytes and claims; 0 is unlimited."""

    bytes: int
    claims: int
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Quota":
        return cls(bytes=int(d.get("bytes", 0)), claims=int(d.get("claims", 0)), raw=d)


@dataclass(frozen=True)
class Usage(_Answer):
    """What a namespace (or tenant) holds: ``used_bytes`` of active claims,
    ``reserved_bytes`` held by pending ones."""

    used_bytes: int
    reserved_bytes: int
    active_claims: int
    pending_claims: int
    finished_claims: int = 0  # claims finished for any reason (history, not quota)
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Usage":
        return cls(used_bytes=int(d.get("used_bytes", 0)), reserved_bytes=int(d.get("reserved_bytes", 0)),
                   active_claims=int(d.get("active_claims", 0)),
                   pending_claims=int(d.get("pending_claims", 0)),
                   finished_claims=int(d.get("finished_claims", 0)), raw=d)


@dataclass(frozen=True)
class Policy(_Answer):
    """A namespace's effective policy: sizes in bytes, durations in Go
    syntax (``"24h"``). ``ttl`` and ``uploads`` are the sections as the
    server writes them; ``dedup`` and ``digest_first`` are None when unset.
    ``inline_below``: puts of at most that many bytes are kept in the
    metadata database (0: none)."""

    threshold: int
    max_size: int
    compression: str
    quota: Quota
    ttl: dict[str, Any] = field(default_factory=dict)
    uploads: dict[str, Any] = field(default_factory=dict)
    dedup: Optional[bool] = None
    digest_first: Optional[bool] = None
    encryption: Optional[str] = None
    tenant: Optional[str] = None
    inline_below: int = 0
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Policy":
        return cls(threshold=int(d.get("threshold", 0)), max_size=int(d.get("max_size", 0)),
                   compression=d.get("compression", ""), quota=Quota.from_dict(d.get("quota") or {}),
                   ttl=dict(d.get("ttl") or {}), uploads=dict(d.get("uploads") or {}),
                   dedup=d.get("dedup"), digest_first=d.get("digest_first"),
                   encryption=d.get("encryption"), tenant=d.get("tenant"),
                   inline_below=int(d.get("inline_below", 0)), raw=d)


@dataclass(frozen=True)
class TenantInfo(_Answer):
    """The tenant a namespace belongs to: its limits and usage over all of
    its ``namespaces``."""

    name: str
    limits: Quota
    usage: Usage
    namespaces: int
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TenantInfo":
        return cls(name=d["name"], limits=Quota.from_dict(d.get("limits") or {}),
                   usage=Usage.from_dict(d.get("usage") or {}), namespaces=int(d.get("namespaces", 0)), raw=d)


@dataclass(frozen=True)
class NamespaceInfo(_Answer):
    """A namespace's effective policy, limits and usage; ``retired``: it
    holds claims but is no longer configured."""

    name: str
    policy: Policy
    limits: Quota
    usage: Usage
    retired: bool = False
    tenant: Optional[TenantInfo] = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "NamespaceInfo":
        tenant = d.get("tenant")
        return cls(name=d["name"], policy=Policy.from_dict(d.get("policy") or {}),
                   limits=Quota.from_dict(d.get("limits") or {}), usage=Usage.from_dict(d.get("usage") or {}),
                   retired=bool(d.get("retired", False)),
                   tenant=TenantInfo.from_dict(tenant) if tenant else None, raw=d)
