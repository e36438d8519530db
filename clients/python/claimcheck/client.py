"""The client: the claimcheck HTTP API (docs/openapi.yaml) over http.client.

Payloads stream in both directions and are never held whole: a put reads
its file object block by block, and a redeem is a file-like :class:`Payload`
that checks size and sha256 as the bytes arrive and raises rather than hand
over short or altered data.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import json
import os
import re
import select
import ssl
import threading
import time
import urllib.parse
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .errors import (ChecksumMismatch, ClaimcheckError, InvalidArgument, RangeNotSatisfiable,
                     Unavailable, error_from_body)
from ._version import __version__
from .info import ClaimInfo, NamespaceInfo
from .ref import Ref, check_digest, is_ref, valid_claim_id, valid_namespace
from .tracing import trace_headers

__all__ = ["Client", "ClaimPage", "Part", "Payload", "RefLike", "Body", "DEFAULT_CHUNK_SIZE",
           "DEFAULT_RETRIES"]

# What names a claim: a Ref, its dict or JSON form, or a bare claim id.
RefLike = Union[Ref, Mapping[str, Any], str]
# What a put sends: bytes, a binary file object, or an iterable of bytes.
Body = Union[bytes, bytearray, memoryview, BinaryIO, Iterable[bytes]]
# A point in time: a datetime with a time zone, or Unix seconds.
When = Union[datetime, int, float]
# Query parameters: a mapping, or pairs when a name repeats (label=).
Query = Union[Mapping[str, Optional[str]], Sequence[tuple[str, str]]]


@dataclass(frozen=True)
class ClaimPage:
    """One page of a listing (:meth:`Client.list`): ``claims`` are
    :class:`ClaimInfo`, ``next`` the cursor of the following page (None on
    the last page)."""

    claims: list[ClaimInfo]
    next: Optional[str]

# The block size of request and response bodies: large enough that a
# 100 MB transfer is a few hundred system calls, small enough to be
# nothing in memory.
BLOCK = 1 << 20
# Error answers and JSON bodies are small; more is not read.
_MAX_SMALL_BODY = 4 << 20
_MAX_LINE = 65536
_USER_AGENT = f"claimcheck-python/{__version__}"
# How long a namespace's "Claimcheck-Digest-First: off" is remembered.
_DIGEST_FIRST_TTL = 30.0
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
# Resumable uploads (tus 1.0.0): the bytes sent per PATCH, and the
# attempts in a row without progress, as the Go client's defaults.
DEFAULT_CHUNK_SIZE = 16 << 20
DEFAULT_RETRIES = 5
_TUS_VERSION = "1.0.0"
# The wait before the first retry, doubled per failure up to the most.
_TUS_BACKOFF = 0.5
_TUS_BACKOFF_MAX = 10.0
# Idle connections kept per server by default (Client's pool_size), and
# how long one may sit idle before it is closed rather than reused: well
# under the server's keep-alive timeout (2 minutes for claimcheck serve,
# server/serve.go) and the minute of many load balancers.
_POOL_SIZE = 8
_POOL_IDLE_MAX = 30.0


class Client:
    """A claimcheck server.

    ``api_key`` (``cck_...``) is sent as ``Authorization: Bearer`` on every
    API request when set; a server with auth off does not need one.
    ``timeout`` bounds each connect and each read or write on the socket,
    never a whole transfer. ``ssl_context`` is used for ``https`` URLs.
    ``continue_timeout`` is how long a put that sends its digest first waits
    for the server's ``100 Continue`` before it sends the body anyway (a
    proxy may not pass the ``Expect`` on).

    Connections are kept alive and reused: at most ``pool_size`` idle ones
    per server (scheme, host and port), more are closed; 0 gives every
    request a connection of its own, closed after it. A client may be
    shared by threads (each request has a connection to itself). Use it as
    a context manager, or call :meth:`close`, to close the idle ones.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", *, api_key: Optional[str] = None,
                 timeout: float = 60.0, ssl_context: Optional[ssl.SSLContext] = None,
                 continue_timeout: float = 1.0, pool_size: int = _POOL_SIZE) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"server URL {base_url!r}: want http://HOST[:PORT] or https://...")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.continue_timeout = continue_timeout
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 0:
            raise ValueError(f"pool_size {pool_size!r}: want an integer of at least 0")
        self._pool = _Pool(pool_size)
        # A client dropped without close() closes its idle connections.
        weakref.finalize(self, self._pool.close)
        # Namespaces whose last put was answered Claimcheck-Digest-First:
        # off, and when (time.monotonic()): their puts skip the pass that
        # hashes the body first, which could not save its sending there.
        self._no_digest_first: dict[str, float] = {}

    def close(self) -> None:
        """Closes the idle connections, and from now on every connection a
        request is done with (a redeem stream still open keeps its own until
        it ends). The client still works: a request after this one opens a
        connection of its own."""
        self._pool.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- claims ------------------------------------------------------------

    def put(self, ns: str, body: Body, *, content_type: Optional[str] = None,
            size: Optional[int] = None, digest: Optional[str] = None,
            consumers: Optional[int] = None, consumer_names: Optional[Sequence[str]] = None,
            labels: Optional[Mapping[str, str]] = None) -> Ref:
        """Stores ``body`` as a new claim in namespace ``ns`` and returns its ref.

        A file object is read block by block (never whole); its size is sent
        as ``Content-Length`` when it can be known (``size``, a regular file,
        a seekable stream), otherwise the body is chunked. The client hashes
        what it sends and checks the answered ref against it, so a body
        altered on the way is an error, not a claim.

        ``digest`` (``sha256:<hex>``), when known, lets the server check the
        body too, and skip storing bytes the namespace already holds. Bytes
        and seekable files are hashed first when no digest is given (not
        where the namespace answered that it never dedups before the body):
        the request then carries the digest and ``Expect: 100-continue``, and
        the body is sent only when the server asks for it, so a payload the
        namespace already holds crosses the network once, and a refused put
        (too large, over quota) sends nothing.
        """
        headers: dict[str, str] = {}
        if content_type:
            headers["Content-Type"] = content_type
        if digest:
            headers["Claimcheck-Digest"] = digest
        if consumers is not None:
            headers["Claimcheck-Consumers"] = str(int(consumers))
        if consumer_names:
            headers["Claimcheck-Consumer-Names"] = _format_names(consumer_names)
        if labels:
            headers["Claimcheck-Labels"] = _format_labels(labels)

        reader = _HashingReader.of(body)
        if size is None:
            size = reader.length()
        if not digest and size and reader.seekable and not self._digest_first_off(ns):
            first_digest, first_size = reader.hash_ahead()
            if first_size == size:
                digest = headers["Claimcheck-Digest"] = first_digest
                # The server checks the body against the digest and the
                # answered ref is checked against it below: hashing again
                # as the body is sent would add nothing.
                reader.hashing = False
        if size is not None:
            headers["Content-Length"] = str(size)
        path = f"/v1/namespaces/{_quote(ns)}/claims"
        status, rheaders, data = self._call("PUT", path, headers=headers, body=reader, ok=(201,),
                                            expect_continue=bool(digest and size))
        self._note_digest_first(ns, rheaders.get("Claimcheck-Digest-First"))
        ref = Ref.parse(data)
        want_size = reader.n if reader.eof else size
        want_digest = reader.digest() if reader.eof and reader.hashing else digest
        if (want_size is not None and ref.size != want_size) or (want_digest and ref.digest != want_digest):
            # The server stored other bytes than the ones sent: never hand
            # out a ref to them.
            try:
                self.delete(ref)
            except ClaimcheckError:
                pass
            raise ChecksumMismatch(
                f"put to {ns}: the server stored {ref.size} bytes hashing to {ref.digest}, "
                f"the client sent {want_size} bytes hashing to {want_digest}")
        return ref

    def redeem(self, ref: RefLike, *, ns: Optional[str] = None) -> "Payload":
        """Opens the claim's payload as a verifying stream (counts as a read).

        Use it as a context manager and read it like a binary file; the
        bytes are checked against the ref's size and sha256 as they arrive,
        and the stream's trailer is checked at its end. A short, long or
        altered stream raises :class:`ChecksumMismatch` (or the server's
        error from the trailer), never ends quietly.
        """
        want = _ref_or_none(ref)
        cid = _claim_id(ref)
        query = {"ns": ns or (want.ns if want else None)}
        # TE: trailers says that this client reads the Claimcheck-Error
        # trailer; without it the server aborts a stream that fails part-way
        # rather than end it cleanly with the error.
        conn, resp = self._open("GET", f"/v1/claims/{cid}", query=query, headers={"TE": "trailers"})
        try:
            if resp.status != 200:
                raise self._error(resp)
            got = _answered_ref(cid, want, resp.getheader("Claimcheck-Ref"), resp.status)
            return Payload(conn, resp, got, pool=self._pool)
        except BaseException:
            self._pool.done(conn, resp)
            raise

    def redeem_range(self, ref: RefLike, offset: int = 0, length: Optional[int] = None, *,
                     ns: Optional[str] = None) -> "Part":
        """Opens bytes ``[offset, offset + length)`` of the claim's payload as
        a :class:`Part`, a stream of exactly those bytes (one ``Range``
        request).

        ``length`` None reads to the end, and a length past the end is cut at
        the end. A negative ``offset`` asks for the last ``-offset`` bytes
        (all of them when the payload is shorter); ``length`` must then be
        None. An offset at or past the end (or any range of an empty payload)
        raises :class:`RangeNotSatisfiable`, which carries the payload's
        ``size``; a ``length`` of 0 or less :class:`InvalidArgument`.

        The part is checked as far as the server can check a part (see
        :class:`Part`): read it to its end before trusting it. Only a part
        that reaches the payload's last byte counts as a read of the claim.
        """
        want = _ref_or_none(ref)
        cid = _claim_id(ref)
        _check_range(cid, offset, length)
        rng = f"bytes={offset}" if offset < 0 else \
            f"bytes={offset}-" if length is None else f"bytes={offset}-{offset + length - 1}"
        conn, resp = self._open("GET", f"/v1/claims/{cid}", query={"ns": ns or _ns_of(ref)},
                                headers={"TE": "trailers", "Range": rng})
        try:
            if resp.status not in (200, 206):
                err = self._error(resp)
                if isinstance(err, RangeNotSatisfiable):
                    err.offset = offset
                raise err
            got = _answered_ref(cid, want, resp.getheader("Claimcheck-Ref"), resp.status)
            start, n = _resolve_range(cid, offset, length, got.size)
            if resp.status == 200:
                # The server ignored the Range: cut the part out of the
                # whole payload, which is verified whole before the part ends.
                return Part(Payload(conn, resp, got, pool=self._pool), start, n, skip=start)
            header = resp.getheader("Content-Range", "")
            answered = _parse_content_range(header)
            if answered is None:
                raise ChecksumMismatch(f"redeem {cid}: the answer's Content-Range {header[:40]!r} "
                                       f"is not bytes FIRST-LAST/SIZE")
            if answered != (start, n, got.size):
                a_start, a_n, a_size = answered
                raise ChecksumMismatch(
                    f"redeem {cid}: the server sent bytes {a_start}-{a_start + a_n - 1} of {a_size}, "
                    f"asked for {start}-{start + n - 1} of {got.size}")
            return Part(_Stream(conn, resp, got, pool=self._pool), start, n, skip=0)
        except BaseException:
            self._pool.done(conn, resp)
            raise

    def get_bytes(self, ref: RefLike, *, ns: Optional[str] = None) -> bytes:
        """The whole verified payload in memory (for small ones; stream large ones)."""
        with self.redeem(ref, ns=ns) as p:
            return p.read()

    def stat(self, ref: RefLike, *, ns: Optional[str] = None) -> ClaimInfo:
        """State, deadlines and counters (:class:`ClaimInfo`); not a read."""
        return ClaimInfo.from_dict(self._json("GET", f"/v1/claims/{_claim_id(ref)}/meta",
                                              query={"ns": ns or _ns_of(ref)}))

    def release(self, ref: RefLike, consumer: Optional[str] = None, *, ns: Optional[str] = None) -> None:
        """A consumer is done with the claim (idempotent per consumer name)."""
        body = json.dumps({"consumer": consumer}).encode() if consumer else b""
        headers = {"Content-Type": "application/json"} if body else {}
        self._call("POST", f"/v1/claims/{_claim_id(ref)}/release", query={"ns": ns or _ns_of(ref)},
                   headers=headers, body=body, ok=(204,))

    def delete(self, ref: RefLike, *, ns: Optional[str] = None) -> None:
        """Finishes the claim now (reason ``deleted``); fine on a finished one."""
        self._call("DELETE", f"/v1/claims/{_claim_id(ref)}", query={"ns": ns or _ns_of(ref)}, ok=(204,))

    def namespace(self, ns: str) -> NamespaceInfo:
        """The namespace's effective policy, limits and usage (:class:`NamespaceInfo`)."""
        return NamespaceInfo.from_dict(self._json("GET", f"/v1/namespaces/{_quote(ns)}"))

    # -- listing and extending ---------------------------------------------

    def list(self, ns: str, *, labels: Optional[Mapping[str, str]] = None, state: Optional[str] = None,
             expires_after: Optional[When] = None, expires_before: Optional[When] = None,
             order: Optional[str] = None, cursor: Optional[str] = None,
             limit: Optional[int] = None) -> "ClaimPage":
        """One page of the namespace's claims (:class:`ClaimInfo`, without
        holds), newest first, or soonest expiry first with ``order="expiring"``
        (live claims only). Every filter given must match: each label of
        ``labels``, ``state`` (``pending``, ``active``, ``deleted``), an
        expiry in ``[expires_after, expires_before)`` (datetimes with a time
        zone, or Unix seconds). ``cursor`` is the ``next`` of the previous
        page; ``limit`` the page size (1 to 1000; the server's default 100).
        Bad filters and cursors raise :class:`InvalidArgument` naming the
        parameter."""
        query: list[tuple[str, str]] = [("label", f"{k}={v}") for k, v in sorted((labels or {}).items())]
        for name, value in (("state", state), ("order", order), ("cursor", cursor)):
            if value:
                query.append((name, value))
        for name, when in (("expires_after", expires_after), ("expires_before", expires_before)):
            if when is not None:
                query.append((name, _rfc3339(name, when)))
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise InvalidArgument(f"list {ns}: limit {limit!r}: want an integer from 1 to 1000")
            query.append(("limit", str(limit)))
        doc = self._json("GET", f"/v1/namespaces/{_quote(ns)}/claims", query=query)
        return ClaimPage(claims=[ClaimInfo.from_dict(c) for c in doc.get("claims") or []],
                         next=doc.get("next") or None)

    def list_all(self, ns: str, **filters: Any) -> Iterator[ClaimInfo]:
        """Every claim of the listing, page after page (the filters of
        :meth:`list`; ``limit`` is then the page size). Pages are fetched as
        the iteration reaches them."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list(ns, cursor=cursor, **filters)
            yield from page.claims
            if not page.next:
                return
            cursor = page.next

    # -- subscriptions (docs/HTTP.md, "Pushed events"; a tenant-wide admin key)

    def create_subscription(self, url: str, *, id: Optional[str] = None, types: Optional[Sequence[str]] = None,
                            namespaces: Optional[Sequence[str]] = None, labels: Optional[Mapping[str, str]] = None,
                            secret: Optional[str] = None, events_per_request: Optional[int] = None) -> dict[str, Any]:
        """Makes a subscription of the key's tenant and returns it as the API
        answers it (a dict); its ``secret`` is answered this once. Refusals
        raise :class:`InvalidArgument` naming the field."""
        spec: dict[str, Any] = {"url": url}
        for name, value in (("id", id), ("types", types), ("namespaces", namespaces), ("labels", labels),
                            ("secret", secret), ("events_per_request", events_per_request)):
            if value is not None:
                spec[name] = list(value) if name in ("types", "namespaces") else value
        _, _, data = self._call("POST", "/v1/subscriptions", headers={"Content-Type": "application/json"},
                                body=json.dumps(spec).encode(), ok=(201,))
        return json.loads(data)

    def subscriptions(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> dict[str, Any]:
        """One page of the tenant's subscriptions, by id: ``{"subscriptions":
        [...], "next": cursor}`` (``next`` absent on the last page). Cursors
        and seqs are strings."""
        return self._json("GET", "/v1/subscriptions", query=_page_query(cursor, limit))

    def delete_subscription(self, id: str) -> None:
        """Deletes a subscription made over the API."""
        self._call("DELETE", f"/v1/subscriptions/{_quote(id)}", ok=(204,))

    def resume_subscription(self, id: str) -> None:
        """Delivers again to a dead-lettered subscription."""
        self._call("POST", f"/v1/subscriptions/{_quote(id)}/resume", ok=(204,))

    def subscription_attempts(self, id: str, *, cursor: Optional[str] = None,
                              limit: Optional[int] = None) -> dict[str, Any]:
        """One page of the subscription's parked and dead-lettered events, by
        seq: ``{"attempts": [{"event", "state", "attempts", "last_error",
        ...}], "next": cursor}``."""
        return self._json("GET", f"/v1/subscriptions/{_quote(id)}/attempts", query=_page_query(cursor, limit))

    def retry_subscription(self, id: str) -> int:
        """Has the subscription's parked and dead-lettered events delivered
        now; returns how many."""
        return int(self._json("POST", f"/v1/subscriptions/{_quote(id)}/retry")["retried"])

    def replay_subscription(self, id: str, since: Union[When, str]) -> str:
        """Has the subscription's events after ``since`` (a datetime with a
        time zone, Unix seconds, or an event seq as a string) delivered
        again; returns the cursor the server set (a string)."""
        value = since if isinstance(since, str) else _rfc3339("since", since)
        return str(self._json("POST", f"/v1/subscriptions/{_quote(id)}/replay", query={"since": value})["cursor"])

    def extend(self, ref: RefLike, *, expires_at: Optional[When] = None,
               by: Optional[Union[timedelta, int, float]] = None, ns: Optional[str] = None) -> ClaimInfo:
        """Moves the claim's expiry later and answers its :class:`ClaimInfo` (the
        ``ref``'s ``expires_at`` is the new expiry). Give exactly one of
        ``expires_at`` (the new expiry: a datetime with a time zone or Unix
        seconds; repeating it changes nothing) and ``by`` (a timedelta or
        seconds added to the current expiry; repeating it extends again).
        An extension never shortens: an expiry at or before the current one
        answers the claim as it is. Past the namespace's ``ttl.max_lifetime``
        is :class:`InvalidArgument` naming the limit; a finished claim
        :class:`Gone`, an unknown one :class:`NotFound`, one past its
        deadline kept by a hold :class:`Held`."""
        cid = _claim_id(ref)
        if (expires_at is None) == (by is None):
            raise InvalidArgument(f"extend {cid}: give expires_at or by" +
                                  ("" if expires_at is None else ", not both"))
        body: dict[str, str] = {}
        if expires_at is not None:
            body["expires_at"] = _rfc3339("expires_at", expires_at)
        else:
            body["by"] = _go_duration(by)
        return ClaimInfo.from_dict(self._json("POST", f"/v1/claims/{cid}/extend", query={"ns": ns or _ns_of(ref)},
                                              headers={"Content-Type": "application/json"},
                                              body=json.dumps(body).encode()))

    # -- direct upload -----------------------------------------------------

    def upload_file(self, ns: str, file: Union[str, os.PathLike, BinaryIO], *,
                    content_type: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
                    consumers: Optional[int] = None, consumer_names: Optional[Sequence[str]] = None,
                    idempotency_key: Optional[str] = None) -> Ref:
        """Direct upload: init (size and sha256), PUT the bytes to the answered
        URL (no API key: the URL is the credential), confirm. The file is read
        twice, to hash it and to send it, so it must be a path or seekable."""
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as f:
                return self.upload_file(ns, f, content_type=content_type, labels=labels,
                                        consumers=consumers, consumer_names=consumer_names,
                                        idempotency_key=idempotency_key)
        digest, size = _hash_ahead(file)
        req: dict[str, Any] = {"size": size, "sha256": digest.removeprefix("sha256:")}
        if content_type:
            req["content_type"] = content_type
        if labels:
            req["labels"] = dict(labels)
        if consumers is not None:
            req["consumers"] = consumers
        if consumer_names:
            req["consumer_names"] = list(consumer_names)
        headers = {"Content-Type": "application/json"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        _, _, data = self._call("POST", f"/v1/namespaces/{_quote(ns)}/uploads", headers=headers,
                                body=json.dumps(req).encode(), ok=(201,))
        up = json.loads(data)
        if up.get("state") == "pending":
            put_headers = dict(up.get("headers") or {})
            put_headers["Content-Length"] = str(size)
            # The URL may be another host (a presigned S3 URL, a GCS signed
            # URL, an Azure SAS URL): it gets no API key, and is used exactly
            # as answered. Each storage answers its own success: S3 and GCS
            # 200, Azure's Put Blob 201, the server's own upload route 204.
            self._call(up.get("method") or "PUT", up["url"], headers=put_headers,
                       body=_HashingReader.of(file), ok=(200, 201, 204), absolute=True, auth=False)
        _, _, data = self._call("POST", f"/v1/uploads/{up['id']}/confirm", ok=(200,))
        return Ref.parse(data)

    # -- resumable upload (tus) --------------------------------------------

    def upload_resumable(self, ns: str, file: Union[str, os.PathLike, BinaryIO], *,
                         content_type: Optional[str] = None, digest: Optional[str] = None,
                         chunk_size: int = DEFAULT_CHUNK_SIZE, retries: int = DEFAULT_RETRIES,
                         created: Optional[Callable[[str], Any]] = None,
                         progress: Optional[Callable[[int, int], Any]] = None) -> Ref:
        """Stores a file in a new claim of namespace ``ns`` over tus 1.0.0
        (docs/HTTP.md, "Resumable uploads (tus)") and returns its ref.

        ``file`` is a path or a seekable binary file, sent from its position
        to its end; it is read more than once (hashed, each chunk hashed
        before it is sent, a chunk again after a cut), so it must not change
        meanwhile. Without ``digest`` (``sha256:<hex>``) it is hashed first,
        in blocks. The upload is created with the size and the sha256, which
        the server checks the whole payload against before the claim exists;
        then the bytes go in PATCHes of ``chunk_size`` bytes, each with its
        own ``Upload-Checksum: sha256``. When a request fails in a way that
        may pass (no connection or a cut one, 409, 423, 429, 5xx), the client
        waits (0.5 s, doubled per failure, at most 10 s, or the server's
        ``Retry-After``), asks the server for its offset (HEAD) and goes on
        from there: at most ``retries`` attempts in a row that move the
        server's offset no further. Other errors (a chunk or payload
        checksum mismatch, a gone upload, permission, quota) are final.

        ``created(url)`` is called as soon as the server created the upload,
        before any byte is sent: keep the URL to go on with
        :meth:`resume_upload` after this process ends. When it raises, the
        upload is dropped on the server and its exception propagates.
        ``progress(offset, size)`` is called with the server's offset after
        every chunk it accepted and every offset it reported.

        The ref is the one the server answers with the last chunk, checked
        against the size and the digest. The creation itself is not retried:
        one whose answer was lost may have created an upload that nobody
        knows (it expires on the server).
        """
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as f:
                return self.upload_resumable(ns, f, content_type=content_type, digest=digest,
                                             chunk_size=chunk_size, retries=retries, created=created,
                                             progress=progress)
        op = f"resumable upload to {ns}"
        if not valid_namespace(ns):
            raise InvalidArgument(f"{op}: {ns!r} is not a namespace (1-24 characters of a-z 0-9 - _)")
        _check_tus_options(op, chunk_size, retries)
        start, size = _tus_section(op, file)
        if digest is None:
            digest, _ = _hash_ahead(file)
        else:
            check_digest(op, digest)
        meta = [_tus_meta("sha256", digest.removeprefix("sha256:"))]
        if content_type:
            meta.append(_tus_meta("content_type", content_type))
        path = f"/v1/namespaces/{_quote(ns)}/tus"
        headers = {"Tus-Resumable": _TUS_VERSION, "Upload-Length": str(size), "Upload-Metadata": ",".join(meta)}
        _, rheaders, _ = self._call("POST", path, headers=headers, ok=(201,))
        location = rheaders.get("Location") or ""
        url = urllib.parse.urljoin(self.base_url + path, location)
        if not location or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise ClaimcheckError(f"{op}: the server's Location {location!r} is not an upload URL",
                                  code="bad_answer", status=201)
        if created is not None:
            try:
                created(url)
            except BaseException:
                # The URL could not be kept: nobody could resume the upload.
                try:
                    self.abort_upload(url)
                except ClaimcheckError:
                    pass  # it expires on the server
                raise
        t = _TusTransfer(self, url, file, start, size, chunk_size, retries, progress)
        # A new upload is at offset 0 (an empty one complete): no need to ask.
        return t.run(digest, _TusState(offset=0, size=size, ref=t.answered_ref(rheaders, 201)))

    def resume_upload(self, upload: str, file: Union[str, os.PathLike, BinaryIO], *,
                      digest: Optional[str] = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
                      retries: int = DEFAULT_RETRIES,
                      progress: Optional[Callable[[int, int], Any]] = None) -> Ref:
        """Sends the rest of the resumable upload ``upload`` (the URL given
        to ``created``, or the upload's id) from ``file``, the whole payload
        as at creation (a path, or a seekable binary file from its position),
        and returns the claim's ref, as :meth:`upload_resumable` does.

        The server is asked for its offset first, so this continues an upload
        that another process started; an upload that is already complete
        only answers its ref. The content type is the one given at creation.
        ``digest``, when given, is checked against the ref the server answers
        (the server checks the payload against the digest of the creation
        anyway). An upload the server no longer has raises :class:`Gone` or
        :class:`NotFound`: start a new one."""
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as f:
                return self.resume_upload(upload, f, digest=digest, chunk_size=chunk_size,
                                          retries=retries, progress=progress)
        url = self._upload_url("resume upload", upload)
        op = f"resumable upload {url}"
        _check_tus_options(op, chunk_size, retries)
        if digest is not None:
            check_digest(op, digest)
        start, size = _tus_section(op, file)
        return _TusTransfer(self, url, file, start, size, chunk_size, retries, progress).run(digest, None)

    def abort_upload(self, upload: str) -> None:
        """Drops the resumable upload ``upload`` (its URL or id; tus
        termination): the server deletes what it received and gives the
        reserved quota back. An upload that is finished already (aborted,
        refused, expired) is no error; a completed one is
        :class:`InvalidArgument` (delete its claim instead)."""
        url = self._upload_url("abort upload", upload)
        self._call("DELETE", url, absolute=True, headers={"Tus-Resumable": _TUS_VERSION}, ok=(204,))

    def _upload_url(self, op: str, upload: str) -> str:
        """The URL of a resumable upload given by its id (on this client's
        server) or its URL (a relative one relative to the server)."""
        if valid_claim_id(upload):
            return f"{self.base_url}/v1/tus/{upload}"
        url = urllib.parse.urljoin(self.base_url + "/", upload)
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise InvalidArgument(f"{op}: {upload!r} is neither an upload id nor an http(s) URL")
        return url

    # -- offload and resolve -----------------------------------------------

    def offload(self, ns: str, value: Any, *, threshold: Optional[int] = None, **put_options: Any) -> Any:
        """Returns ``value`` itself when its JSON is smaller than the
        namespace's threshold, else stores the JSON in a claim and returns the
        reference (a dict, JSON-serialisable like the value it stands for).
        ``threshold`` overrides the namespace's (read from the server when
        not given); ``put_options`` are :meth:`put`'s."""
        data = json.dumps(value, separators=(",", ":")).encode()
        if threshold is None:
            threshold = self.namespace(ns).policy.threshold
        if len(data) < threshold:
            return value
        put_options.setdefault("content_type", "application/json")
        ref = self.put(ns, data, **put_options)
        return ref.to_dict()

    def resolve(self, value: Any) -> Any:
        """The value :meth:`offload` was given: a reference is redeemed
        (verified) and its JSON decoded; anything else is returned as it is."""
        if not is_ref(value):
            return value
        return json.loads(self.get_bytes(Ref.from_dict(value)))

    # -- HTTP --------------------------------------------------------------

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        _, _, data = self._call(method, path, ok=(200,), **kw)
        return json.loads(data)

    def _call(self, method: str, path: str, *, ok: tuple[int, ...], **kw: Any) -> tuple[int, http.client.HTTPMessage, bytes]:
        conn, resp = self._open(method, path, **kw)
        try:
            if resp.status not in ok:
                raise self._error(resp, head=method == "HEAD")
            return resp.status, resp.headers, _read_small(resp)
        finally:
            self._pool.done(conn, resp)

    def _open(self, method: str, path: str, *, query: Optional[Query] = None,
              headers: Optional[Mapping[str, str]] = None, body: Any = None,
              absolute: bool = False, auth: bool = True,
              expect_continue: bool = False) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        url = urllib.parse.urlsplit(path if absolute else self.base_url + path)
        target = url.path or "/"
        if not absolute:
            target = urllib.parse.urlsplit(self.base_url).path.rstrip("/") + path
        pairs = query.items() if isinstance(query, Mapping) else (query or ())
        q = urllib.parse.urlencode([(k, v) for k, v in pairs if v])
        if url.query or q:
            target += "?" + "&".join(x for x in (url.query, q) if x)
        h = {"User-Agent": _USER_AGENT}
        h.update(trace_headers())
        if auth and self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        h.update(headers or {})
        conn = self._pool.take(_pool_key(url))
        reused = conn is not None
        while True:
            if conn is None:
                conn = self._connect(url)
            try:
                if expect_continue:
                    return conn, self._request_body_on_continue(conn, method, target, h, body)
                try:
                    conn.request(method, target, body=body, headers=h)
                except ConnectionError as e:
                    raise _NoAnswer(e) from e
                return conn, conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                # A kept connection the server closed while it sat idle:
                # once more on a new one, if the request can be sent again.
                if reused and isinstance(e, _NoAnswer) and _rewind(body):
                    conn, reused = None, False
                    continue
                raise Unavailable(f"{method} {url.scheme}://{url.netloc}{url.path}: {e}") from e
            except BaseException:
                conn.close()
                raise

    def _request_body_on_continue(self, conn: http.client.HTTPConnection, method: str, target: str,
                                  headers: Mapping[str, str], body: Any) -> http.client.HTTPResponse:
        """Sends the request's headers with ``Expect: 100-continue`` and its
        body only once the server asks for it, or has said nothing for
        ``continue_timeout``. A server that answers at once (a dedup hit, a
        refusal) never gets the body.

        http.client's response parser skips interim answers, so it cannot
        tell a ``100 Continue`` from silence: the first bytes of the answer
        are read here from the socket itself (with its own timeout, which
        leaves the socket usable, unlike a timed-out file over it), and an
        answer that is not a ``100`` is handed to the parser with those bytes
        in front (:class:`_Replay`); its connection is not reused, since the
        body it never read could still follow."""
        conn.putrequest(method, target)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Expect", "100-continue")
        try:
            conn.endheaders()
        except ConnectionError as e:
            raise _NoAnswer(e) from e
        sock = conn.sock
        if sock is None:  # endheaders connects
            raise http.client.NotConnected()
        # "HTTP/1.1 100": enough to tell an interim answer from a final one.
        status_len = 12
        head, closed = b"", False
        sock.settimeout(self.continue_timeout)
        try:
            while len(head) < status_len:
                block = sock.recv(status_len - len(head))
                if not block:
                    closed = True  # the parser below says so
                    break
                head += block
        except TimeoutError:
            if head:
                raise
        except ConnectionError as e:
            if head:
                raise
            raise _NoAnswer(e) from e
        finally:
            sock.settimeout(self.timeout)
        if closed or (head and head[9:12] != b"100"):
            # The final answer, before the body.
            resp = _Response(_Replay(head, sock), method=method)  # type: ignore[arg-type]
            resp.reusable = False
            resp.begin()
            return resp
        if head:
            # 100 Continue: its header lines end at an empty line.
            while not head.endswith((b"\r\n\r\n", b"\n\n")):
                block = sock.recv(1)
                if not block or len(head) > _MAX_LINE:
                    raise http.client.IncompleteRead(head)
                head += block
        conn.send(body)
        return conn.getresponse()

    def _digest_first_off(self, ns: str) -> bool:
        at = self._no_digest_first.get(ns)
        return at is not None and time.monotonic() - at < _DIGEST_FIRST_TTL

    def _note_digest_first(self, ns: str, answer: Optional[str]) -> None:
        if answer == "off":
            self._no_digest_first[ns] = time.monotonic()
        else:
            self._no_digest_first.pop(ns, None)

    def _connect(self, url: urllib.parse.SplitResult) -> http.client.HTTPConnection:
        host, port = url.hostname or "", url.port
        if url.scheme == "https":
            tls = _HTTPSConnection(host, port, timeout=self.timeout, context=self.ssl_context, blocksize=BLOCK)
            tls.pool_key = _pool_key(url)
            return tls
        plain = _HTTPConnection(host, port, timeout=self.timeout, blocksize=BLOCK)
        plain.pool_key = _pool_key(url)
        return plain

    @staticmethod
    def _error(resp: http.client.HTTPResponse, head: bool = False) -> ClaimcheckError:
        return error_from_body(resp.status, _read_small(resp), resp.headers, head=head)


# A pool's servers: scheme, host and port.
_PoolKey = tuple[str, str, int]


def _pool_key(url: urllib.parse.SplitResult) -> _PoolKey:
    return url.scheme, (url.hostname or "").lower(), url.port or (443 if url.scheme == "https" else 80)


class _Pool:
    """A client's idle keep-alive connections, at most ``size`` per server,
    the most recently used taken first. A connection is in the pool or in
    the hands of one request, never both; a process forked from the one
    that opened them leaves them to it."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._idle: dict[_PoolKey, list[tuple[http.client.HTTPConnection, float]]] = {}
        self._closed = False
        self._pid = os.getpid()

    def take(self, key: _PoolKey) -> Optional[http.client.HTTPConnection]:
        """An idle connection to the server that is still open, or None."""
        while True:
            with self._lock:
                if self._pid != os.getpid():
                    # Forked: the parent's connections are its own. Closing
                    # this process's copies (no shutdown) leaves them open
                    # there.
                    self._pid = os.getpid()
                    for conns in self._idle.values():
                        for conn, _ in conns:
                            conn.close()
                    self._idle = {}
                idle = self._idle.get(key)
                if not idle:
                    return None
                conn, since = idle.pop()
            if time.monotonic() - since < _POOL_IDLE_MAX and _still_open(conn):
                return conn
            conn.close()

    def done(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        """A request is done with ``conn``: kept for the next one when the
        answer ``resp`` was read to its end and the connection is fit for
        another request, closed otherwise."""
        key: Optional[_PoolKey] = getattr(conn, "pool_key", None)
        if key is None or not _reusable(conn, resp):
            resp.close()
            conn.close()
            return
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if not self._closed and len(idle) < self._size:
                idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn, _ in conns:
                conn.close()


def _reusable(conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> bool:
    """Whether a connection can carry another request after ``resp``: the
    answer was read to its end (http.client closes an answer at its end),
    the server did not say ``Connection: close``, and the request was sent
    whole (not an answer that came before the body, :class:`_Response`)."""
    return resp.isclosed() and not resp.will_close and conn.sock is not None and \
        getattr(resp, "reusable", False)


def _still_open(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle connection is still open: nothing is to be read on
    it, not even the end the server sends when it closes it."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):
            p = select.poll()
            p.register(sock, select.POLLIN)
            return not p.poll(0)
        return not select.select([sock], [], [], 0)[0]
    except (OSError, ValueError):
        return False


class _NoAnswer(ConnectionError):
    """The connection failed before a byte of the answer arrived: the
    request could not be sent, or the connection ended (closed or reset)
    before any answer. On a reused connection that is the server having
    closed it while it sat idle, and the request may be sent again."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause) or type(cause).__name__)


class _Response(http.client.HTTPResponse):
    """An answer that tells a connection that ended before it began
    (:class:`_NoAnswer`) from one that broke part-way. ``reusable`` is
    False for an answer that came before the request's body was sent."""

    reusable = True

    def begin(self) -> None:
        try:
            first = self.fp.peek(1)
        except (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:
            raise _NoAnswer(e) from e
        if not first:
            raise _NoAnswer(http.client.RemoteDisconnected("the server closed the connection without an answer"))
        super().begin()


class _HTTPConnection(http.client.HTTPConnection):
    """A connection of a client: its answers are :class:`_Response`, its
    ``pool_key`` its server's."""

    response_class = _Response
    pool_key: _PoolKey


class _HTTPSConnection(http.client.HTTPSConnection):
    response_class = _Response
    pool_key: _PoolKey


def _rewind(body: Any) -> bool:
    """Makes a request's body ready to be sent again from its start, when
    it can be: none, bytes, or a body that rewinds (:class:`_HashingReader`
    of bytes or a seekable file). A body read as it goes cannot."""
    if body is None or isinstance(body, (bytes, bytearray, memoryview)):
        return True
    rewind = getattr(body, "rewind", None)
    return bool(rewind is not None and rewind())


class _Reader(io.RawIOBase):
    """A verifying stream's file interface, over its readinto."""

    def readable(self) -> bool:
        return True

    def iter_chunks(self, size: int = BLOCK) -> Iterator[bytes]:
        """Yields the stream in blocks of at most ``size`` bytes."""
        buf = bytearray(size)
        while n := self.readinto(buf):
            yield bytes(buf[:n])

    def copy_to(self, out: BinaryIO) -> int:
        """Writes the whole verified stream to ``out``; returns its size."""
        buf = bytearray(BLOCK)
        mv = memoryview(buf)
        total = 0
        while n := self.readinto(buf):
            out.write(mv[:n])
            total += n
        return total

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        if size is None or size < 0:
            out = io.BytesIO()
            self.copy_to(out)
            return out.getvalue()
        return super().read(size) or b""


class _Stream(_Reader):
    """A payload answer's body as a readable binary file: the chunked body
    parsed here, with its trailer, since http.client decodes chunked bodies
    but throws their trailer away. A ``Claimcheck-Error`` trailer, a broken
    connection or a failed check of a subclass (:meth:`_got`,
    :meth:`_at_end`) raises, and keeps raising on later reads. The
    connection goes back to ``pool`` once the answer ended cleanly, trailer
    and checks included; a stream closed before its end, or that failed,
    closes it."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, ref: Ref, *,
                 pool: Optional[_Pool] = None) -> None:
        super().__init__()
        self.ref = ref
        self.content_type = resp.getheader("Content-Type", "application/octet-stream")
        self._conn: Optional[http.client.HTTPConnection] = conn
        self._resp, self._pool = resp, pool
        self._chunked = bool(resp.chunked)
        self._fp = resp.fp
        self._chunk_left: Optional[int] = None
        self._n = 0
        self._err: Optional[ClaimcheckError] = None
        self._done = False
        self.trailers: dict[str, str] = {}

    def readinto(self, b: Any) -> int:  # type: ignore[override]
        if self._err is not None:
            raise self._err
        if self._done:
            return 0
        mv = memoryview(b).cast("B")
        if len(mv) == 0:
            return 0
        try:
            n = self._raw_readinto(mv)
        except ClaimcheckError as e:
            raise self._fail(e) from None
        except (OSError, ValueError, http.client.HTTPException) as e:
            raise self._fail(Unavailable(
                f"claim {self.ref.id}: stream cut after {self._n} {self._of()}bytes: {e!r}")) from None
        if n == 0:
            self._finish()
            return 0
        self._n += n
        try:
            self._got(mv[:n])
        except ClaimcheckError as e:
            raise self._fail(e) from None
        return n

    def close(self) -> None:
        self._drop()
        super().close()

    def _drop(self) -> None:
        """Closes the connection, unless it was handed back already."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _got(self, block: memoryview) -> None:
        """Checks a block as it arrives (self._n already counts it)."""

    def _at_end(self) -> None:
        """Checks the whole stream once it ended and its trailer was clean."""

    def _of(self) -> str:
        return ""

    def _fail(self, err: ClaimcheckError) -> ClaimcheckError:
        self._err = err
        self._drop()
        return err

    def _raw_readinto(self, mv: memoryview) -> int:
        if not self._chunked:
            n = self._resp.readinto(mv)
            return n or 0
        if not self._chunk_left:
            if self._chunk_left == 0:
                self._crlf()
            size = self._chunk_size()
            if size == 0:
                self._read_trailers()
                return 0
            self._chunk_left = size
        want = min(len(mv), self._chunk_left or 0)
        n = self._fp.readinto(mv[:want])
        if not n:
            raise http.client.IncompleteRead(b"")
        self._chunk_left = (self._chunk_left or 0) - n
        return n

    def _chunk_size(self) -> int:
        line = self._fp.readline(_MAX_LINE + 1)
        if not line:
            raise http.client.IncompleteRead(b"")
        line = line.split(b";", 1)[0].strip()
        return int(line, 16)

    def _crlf(self) -> None:
        if self._fp.readline(_MAX_LINE + 1).strip():
            raise ValueError("chunk not followed by CRLF")

    def _read_trailers(self) -> None:
        while True:
            line = self._fp.readline(_MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                return
            name, _, value = line.decode("latin-1").partition(":")
            self.trailers[name.strip().lower()] = value.strip()

    def _finish(self) -> None:
        self._done = True
        trailer = self.trailers.get("claimcheck-error", "")
        if trailer:
            raise self._fail(error_from_body(200, trailer.encode("latin-1")))
        try:
            self._at_end()
        except ClaimcheckError as e:
            raise self._fail(e) from None
        # The answer was read to its end, the chunked one's trailer here.
        self._resp.close()
        conn, self._conn = self._conn, None
        if conn is not None and self._pool is not None:
            self._pool.done(conn, self._resp)
        elif conn is not None:
            conn.close()


class Payload(_Stream):
    """A claim's payload as it streams: a readable binary file that verifies.

    ``ref`` is the claim's reference (from the ``Claimcheck-Ref`` header),
    ``content_type`` the type it was stored with. Every read counts bytes
    and feeds sha256; more bytes than ``ref.size``, fewer at the end, another
    digest, or an error in the ``Claimcheck-Error`` trailer raise, and keep
    raising on later reads. Read to the end before trusting what you read.
    """

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, ref: Ref, *,
                 pool: Optional[_Pool] = None) -> None:
        super().__init__(conn, resp, ref, pool=pool)
        self._hash = hashlib.sha256()

    def _got(self, block: memoryview) -> None:
        self._hash.update(block)
        if self._n > self.ref.size:
            raise ChecksumMismatch(f"claim {self.ref.id}: more than the {self.ref.size} bytes recorded")

    def _of(self) -> str:
        return f"of {self.ref.size} "

    def _at_end(self) -> None:
        if self._n != self.ref.size:
            raise ChecksumMismatch(f"claim {self.ref.id}: stream ended after {self._n} of {self.ref.size} bytes")
        got = "sha256:" + self._hash.hexdigest()
        if got != self.ref.digest:
            raise ChecksumMismatch(f"claim {self.ref.id}: content hashes to {got}, recorded {self.ref.digest}")

    def __enter__(self) -> "Payload":
        return self


class Part(_Reader):
    """Bytes ``[offset, end)`` of a claim's payload as they stream
    (:meth:`Client.redeem_range`): a readable binary file.

    ``ref`` is the whole payload's reference, ``length`` the part's size
    (``end`` is ``offset + length``). The stream ends only after exactly
    ``length`` bytes arrived and the server's ``Claimcheck-Error`` trailer
    reported no failure; the read that completes the part checks both before
    it returns its bytes. A short or long stream is :class:`ChecksumMismatch`,
    a broken one :class:`Unavailable`, and the error stays.

    The whole payload's sha256 cannot be checked on a part: what the server
    checked the bytes against depends on how the claim is stored
    (docs/HTTP.md, "Ranged redeem"; a plain object only by their number).
    Whoever assembles a payload from parts checks the whole against ``ref``.
    A server that ignored the Range answered the whole payload: the part is
    then cut out of it here, and the whole is verified before the part ends.
    """

    def __init__(self, src: _Stream, offset: int, length: int, *, skip: int) -> None:
        super().__init__()
        self.ref = src.ref
        self.content_type = src.content_type
        self.offset = offset
        self.length = length
        self._src = src
        self._skip = skip  # bytes of src before the part (a whole payload: offset)
        self._whole = isinstance(src, Payload)
        self._left = length
        self._err: Optional[ClaimcheckError] = None

    @property
    def end(self) -> int:
        """The offset after the part's last byte."""
        return self.offset + self.length

    def readinto(self, b: Any) -> int:  # type: ignore[override]
        if self._err is not None:
            raise self._err
        mv = memoryview(b).cast("B")
        if self._left == 0 or len(mv) == 0:
            return 0
        try:
            while self._skip > 0:
                n = self._src.readinto(mv[:min(len(mv), self._skip)])
                if n == 0:
                    raise self._short()
                self._skip -= n
            n = self._src.readinto(mv[:min(len(mv), self._left)])
            if n == 0:
                raise self._short()
            self._left -= n
            if self._left == 0:
                self._check_end()
        except ClaimcheckError as e:
            self._err = e
            self._src.close()
            raise
        return n

    def close(self) -> None:
        if not self.closed:
            self._src.close()
        super().close()

    def __enter__(self) -> "Part":
        return self

    @property
    def trailers(self) -> dict[str, str]:
        """The answer's trailer, once the part has been read to its end."""
        return self._src.trailers

    def _short(self) -> ChecksumMismatch:
        return ChecksumMismatch(f"claim {self.ref.id}: range stream ended after {self.length - self._left} "
                                f"of {self.length} bytes")

    def _check_end(self) -> None:
        """The part is complete: the rest of the answer must end cleanly (a
        206 with nothing more than its trailer; a whole payload, read to its
        end, with its size and sha256)."""
        buf = bytearray(BLOCK if self._whole else 1)
        while self._src.readinto(buf):
            if not self._whole:
                raise ChecksumMismatch(f"claim {self.ref.id}: more than the {self.length} bytes of the range")


class _HashingReader:
    """A request body that hashes and counts what http.client sends."""

    def __init__(self, source: Any, length: Optional[int]) -> None:
        self._src = source
        self._len = length
        self._h = hashlib.sha256()
        self.n = 0
        self.eof = False
        # A length known up front means a seekable source (_remaining).
        self.seekable = length is not None
        self._start = source.tell() if self.seekable else 0
        self.hashing = True

    def rewind(self) -> bool:
        """Back to the start, to be sent again; False when the source is
        read as it goes."""
        if not self.seekable:
            return False
        self._src.seek(self._start)
        self._h = hashlib.sha256()
        self.n, self.eof = 0, False
        return True

    def hash_ahead(self) -> tuple[str, int]:
        """The digest and size of what is left, read ahead and seeked back."""
        return _hash_ahead(self._src)

    @classmethod
    def of(cls, body: Any) -> "_HashingReader":
        if isinstance(body, (bytes, bytearray, memoryview)):
            return cls(io.BytesIO(bytes(body)), len(body))
        if isinstance(body, io.TextIOBase):
            raise InvalidArgument("put: the body is a text file; open it in binary mode ('rb')")
        if hasattr(body, "read"):
            return cls(body, _remaining(body))
        if isinstance(body, str):
            raise InvalidArgument("put: the body is a str; encode it to bytes first")
        return cls(_IterReader(iter(body)), None)

    def length(self) -> Optional[int]:
        return self._len

    def read(self, n: int = -1) -> bytes:
        b = self._src.read(n)
        if isinstance(b, str):
            raise InvalidArgument("put: the body yields str; open it in binary mode")
        if b:
            if self.hashing:
                self._h.update(b)
            self.n += len(b)
        else:
            self.eof = True
        return b

    def digest(self) -> str:
        return "sha256:" + self._h.hexdigest()


class _IterReader:
    """An iterable of bytes as a file with read()."""

    def __init__(self, it: Iterator[bytes]) -> None:
        self._it = it
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while not self._buf:
            try:
                self._buf = bytes(next(self._it))
            except StopIteration:
                return b""
        if n < 0:
            n = len(self._buf)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out


class _Replay:
    """A socket whose first bytes were already read: a response parser
    built on it (http.client reads through ``makefile``) reads them again."""

    def __init__(self, head: bytes, sock: Any) -> None:
        self._head, self._sock = head, sock

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_ReplayRaw(self._head, self._sock))


class _ReplayRaw(io.RawIOBase):
    def __init__(self, head: bytes, sock: Any) -> None:
        super().__init__()
        self._head, self._sock = head, sock

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._sock.recv_into(b)


@dataclass
class _TusState:
    """Where a resumable upload stands: the server's offset, the upload's
    size and, once complete, its claim's ref."""

    offset: int
    size: int
    ref: Optional[Ref] = None


class _TusTransfer:
    """One run of :meth:`Client.upload_resumable` or
    :meth:`Client.resume_upload`: PATCH chunks from the server's offset;
    after a failure that may pass, wait and ask (HEAD) again. The server's
    offset is the only truth about what it has: a chunk whose answer was
    lost may have been stored whole, in part or not at all."""

    def __init__(self, client: Client, url: str, file: BinaryIO, start: int, size: int, chunk_size: int,
                 retries: int, progress: Optional[Callable[[int, int], Any]]) -> None:
        self._c = client
        self.url = url
        self._file = file
        self._start = start  # the payload's first byte in the file
        self.size = size
        self._chunk = chunk_size
        self._retries = retries
        self._progress = progress
        self.op = f"resumable upload {url}"

    def run(self, digest: Optional[str], known: Optional[_TusState]) -> Ref:
        """The upload's ref, from its known state or from a HEAD when
        ``known`` is None; checked against the size and ``digest``."""
        failures, furthest = 0, -1
        st, err = known, None
        if st is None:
            st, err = self._try(self._headed)
        while True:
            if st is not None:
                if st.offset > furthest:
                    # The server's offset moved: the count starts over.
                    furthest, failures = st.offset, 0
                if st.ref is not None:
                    return self._checked(st.ref, digest)
                if st.size != self.size:
                    raise InvalidArgument(f"{self.op}: the upload has {st.size} bytes, the file {self.size}: "
                                          f"it is another payload's upload")
                offset = st.offset
                st, err = self._try(lambda: self._send_chunk(offset))
                if st is not None:
                    continue
            assert err is not None
            if not _tus_retryable(err):
                raise err
            failures += 1
            if failures > self._retries:
                err.message = f"{err.message} (gave up after {failures} attempts in a row without progress)"
                err.args = (err.message,)
                raise err
            retry_after = getattr(err, "retry_after", None)
            time.sleep(retry_after if retry_after else min(_TUS_BACKOFF * 2 ** (failures - 1), _TUS_BACKOFF_MAX))
            st, err = self._try(self._headed)

    @staticmethod
    def _try(step: Callable[[], _TusState]) -> tuple[Optional[_TusState], Optional[ClaimcheckError]]:
        try:
            return step(), None
        except ClaimcheckError as e:
            return None, e

    def _checked(self, ref: Ref, digest: Optional[str]) -> Ref:
        if ref.size != self.size or (digest and ref.digest != digest):
            raise ChecksumMismatch(f"{self.op}: the server stored {ref.size} bytes with digest {ref.digest}, "
                                   f"not the {self.size} bytes with {digest} sent")
        return ref

    def _headed(self) -> _TusState:
        """The upload's state (HEAD), reported to ``progress`` while pending."""
        _, headers, _ = self._c._call("HEAD", self.url, absolute=True, headers={"Tus-Resumable": _TUS_VERSION},
                                      ok=(200,))
        st = _TusState(offset=self._header_int(headers, "Upload-Offset", 200),
                       size=self._header_int(headers, "Upload-Length", 200),
                       ref=self.answered_ref(headers, 200))
        if st.ref is None and self._progress is not None:
            self._progress(st.offset, self.size)
        return st

    def _send_chunk(self, offset: int) -> _TusState:
        """Sends the chunk at ``offset`` with its sha256. Chunks end at
        multiples of the chunk size, also after the server kept a part of a
        chunk that was cut."""
        n = min(self._chunk - offset % self._chunk, self.size - offset)
        h = hashlib.sha256()
        self._file.seek(self._start + offset)
        left = n
        while left > 0:
            block = self._file.read(min(BLOCK, left))
            if not block:
                raise self._short(offset + n - left)
            h.update(block)
            left -= len(block)
        body = _Section(self._file, self._start + offset, n)
        headers = {"Tus-Resumable": _TUS_VERSION, "Content-Type": "application/offset+octet-stream",
                   "Upload-Offset": str(offset), "Content-Length": str(n),
                   "Upload-Checksum": "sha256 " + base64.b64encode(h.digest()).decode()}
        try:
            _, rheaders, _ = self._c._call("PATCH", self.url, absolute=True, headers=headers,
                                           body=body if n else b"", ok=(204,))
        except Unavailable:
            if body.error is not None:
                # Not the network: the file could not be read.
                if isinstance(body.error, EOFError):
                    raise self._short(offset + n - body.left) from None
                raise body.error from None
            raise
        except ClaimcheckError as e:
            if e.status == 460 and not isinstance(e, ChecksumMismatch):
                # 460 from something that did not send claimcheck's JSON.
                raise ChecksumMismatch(f"{self.op}: {e.message}", status=460) from e
            raise
        st = _TusState(offset=self._header_int(rheaders, "Upload-Offset", 204), size=self.size,
                       ref=self.answered_ref(rheaders, 204))
        if st.offset != offset + n:
            raise ClaimcheckError(f"{self.op}: the server is at offset {st.offset} after a chunk of {n} bytes "
                                  f"from {offset}", code="bad_answer", status=204)
        if self._progress is not None:
            self._progress(st.offset, self.size)
        if st.offset == self.size and st.ref is None:
            raise ClaimcheckError(f"{self.op}: the answer to the last chunk has no Claimcheck-Ref header",
                                  code="bad_answer", status=204)
        return st

    def _short(self, at: int) -> ChecksumMismatch:
        return ChecksumMismatch(f"{self.op}: the file ended after {at} of its {self.size} bytes: "
                                f"it changed during the upload")

    def answered_ref(self, headers: http.client.HTTPMessage, status: int) -> Optional[Ref]:
        """The ``Claimcheck-Ref`` of a complete upload; None when there is none."""
        v = headers.get("Claimcheck-Ref")
        if not v:
            return None
        try:
            return Ref.parse(v)
        except InvalidArgument as e:
            raise ClaimcheckError(f"{self.op}: header Claimcheck-Ref: {e.message}", code="bad_answer",
                                  status=status) from None

    def _header_int(self, headers: http.client.HTTPMessage, name: str, status: int) -> int:
        v = headers.get(name) or ""
        if not v.isdigit():
            raise ClaimcheckError(f"{self.op}: the server answered {name} {v[:40]!r}, not a byte count",
                                  code="bad_answer", status=status)
        return int(v)


class _Section:
    """``n`` bytes of a file from ``offset``, as a request body. A failed
    read is kept in ``error`` (an ``EOFError`` when the file ended early)
    and reported to http.client as an OSError, which closes the connection;
    the caller then raises the kept error rather than a network one."""

    def __init__(self, file: BinaryIO, offset: int, n: int) -> None:
        self._file, self._offset, self.left = file, offset, n
        self._sought = False
        self.error: Optional[BaseException] = None

    def read(self, size: int = -1) -> bytes:
        if self.left == 0:
            return b""
        try:
            if not self._sought:
                self._file.seek(self._offset)
                self._sought = True
            block = self._file.read(self.left if size < 0 else min(size, self.left))
            if not block:
                raise EOFError()
        except (OSError, ValueError, EOFError) as e:
            self.error = e
            raise OSError("reading the payload failed") from e
        self.left -= len(block)
        return block


def _check_tus_options(op: str, chunk_size: int, retries: int) -> None:
    for name, v, least in (("chunk_size", chunk_size, 1), ("retries", retries, 0)):
        if not isinstance(v, int) or isinstance(v, bool) or v < least:
            raise InvalidArgument(f"{op}: {name} {v!r}: want an integer of at least {least}")


def _tus_section(op: str, file: Any) -> tuple[int, int]:
    """The position of a seekable binary file and the bytes left after it."""
    if isinstance(file, io.TextIOBase):
        raise InvalidArgument(f"{op}: the file is open in text mode; open it in binary mode ('rb')")
    size = _remaining(file) if hasattr(file, "read") else None
    if size is None:
        raise InvalidArgument(f"{op}: want a path or a seekable binary file (it is read more than once)")
    return file.tell(), size


def _tus_meta(key: str, value: str) -> str:
    """One pair of tus's Upload-Metadata: the key and its base64 value."""
    return f"{key} {base64.b64encode(value.encode()).decode()}"


def _tus_retryable(err: ClaimcheckError) -> bool:
    """Whether a failed tus request may pass by itself: the server was not
    reached or the connection broke (Unavailable, which 502, 503 and 504
    are), the upload is locked by a request the server has not yet seen end
    (423), the server's offset is not the one sent (409: the next HEAD
    tells), the server failed (500), or a rate limit (429). Everything else
    (no such upload, a checksum mismatch, permission, quota) is final."""
    return isinstance(err, Unavailable) or err.status in (409, 423, 429, 500)


def _hash_ahead(f: Any) -> tuple[str, int]:
    """The sha256 (``sha256:<hex>``) and size of the rest of a seekable
    file, which is left where it was."""
    start = f.tell()
    h, size = hashlib.sha256(), 0
    while block := f.read(BLOCK):
        h.update(block)
        size += len(block)
    f.seek(start)
    return "sha256:" + h.hexdigest(), size


def _remaining(f: Any) -> Optional[int]:
    """The bytes left in a file object, when that can be known cheaply."""
    try:
        if f.seekable():
            cur = f.tell()
            end = f.seek(0, io.SEEK_END)
            f.seek(cur)
            return end - cur
    except (AttributeError, OSError, ValueError):
        pass
    return None


def _read_small(resp: http.client.HTTPResponse) -> bytes:
    data = resp.read(_MAX_SMALL_BODY + 1)
    if len(data) > _MAX_SMALL_BODY:
        raise ClaimcheckError(f"answer larger than {_MAX_SMALL_BODY} bytes", code="bad_answer", status=resp.status)
    return data


def _ref_or_none(ref: RefLike) -> Optional[Ref]:
    if isinstance(ref, Ref):
        return ref
    if isinstance(ref, Mapping):
        return Ref.from_dict(ref)
    if isinstance(ref, str) and ref.lstrip().startswith("{"):
        return Ref.parse(ref)
    return None


def _claim_id(ref: RefLike) -> str:
    r = _ref_or_none(ref)
    cid = r.id if r is not None else str(ref).strip()
    if not valid_claim_id(cid):
        raise InvalidArgument(f"{cid!r} is not a claim id (cc_ and 22 URL-safe characters) or a reference")
    return cid


def _answered_ref(cid: str, want: Optional[Ref], header: Optional[str], status: int) -> Ref:
    """The reference of a payload answer (its ``Claimcheck-Ref``), which
    must be the claim asked for: the stream is verified against it."""
    if not header:
        raise ClaimcheckError(f"redeem {cid}: the answer has no Claimcheck-Ref header", code="bad_answer",
                              status=status)
    got = Ref.parse(header)
    if got.id != cid or (want is not None and want.digest and got.digest != want.digest) or \
            (want is not None and want.digest and got.size != want.size):
        raise ChecksumMismatch(f"redeem {cid}: the server answered for {got}, asked for {want or cid}")
    return got


def _check_range(cid: str, offset: int, length: Optional[int]) -> None:
    for name, v in (("offset", offset), ("length", length)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise InvalidArgument(f"redeem {cid}: {name} {v!r}: want an integer")
    if length is not None and offset < 0:
        raise InvalidArgument(f"redeem {cid}: length {length}: a negative offset reads the last "
                              f"{-offset} bytes; leave length None")
    if length is not None and length <= 0:
        raise InvalidArgument(f"redeem {cid}: length {length}: want a positive length, "
                              f"or None to read to the end")


def _resolve_range(cid: str, offset: int, length: Optional[int], size: int) -> tuple[int, int]:
    """The absolute bytes ``[start, start + n)`` a range selects of a payload
    of ``size`` bytes, cut as the server cuts it (claimcheck.ResolveRange)."""
    if offset < 0:
        if size == 0:
            raise RangeNotSatisfiable(f"claim {cid}: the last {-offset} bytes of an empty payload",
                                      offset=offset, size=size)
        n = min(-offset, size)
        return size - n, n
    if offset >= size:
        raise RangeNotSatisfiable(f"claim {cid}: offset {offset}, but the payload has {size} bytes",
                                  offset=offset, size=size)
    n = size - offset
    if length is not None and length < n:
        n = length
    return offset, n


def _parse_content_range(v: str) -> Optional[tuple[int, int, int]]:
    """``bytes FIRST-LAST/SIZE`` as (first, length, size); None if malformed."""
    m = _CONTENT_RANGE.fullmatch(v.strip())
    if not m:
        return None
    first, last, size = (int(g) for g in m.groups())
    if last < first or last >= size:
        return None
    return first, last - first + 1, size


def _ns_of(ref: RefLike) -> Optional[str]:
    r = _ref_or_none(ref)
    return r.ns if r is not None else None


def _rfc3339(name: str, when: When) -> str:
    """A time as RFC 3339 in UTC, as the API reads it."""
    if isinstance(when, bool) or not isinstance(when, (datetime, int, float)):
        raise InvalidArgument(f"{name} {when!r}: want a datetime with a time zone, or Unix seconds")
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, timezone.utc)
    elif when.tzinfo is None:
        raise InvalidArgument(f"{name} {when.isoformat()}: a datetime without a time zone is ambiguous; "
                              f"give one (e.g. timezone.utc)")
    return when.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _go_duration(by: Any) -> str:
    """A positive timedelta or number of seconds as a Go duration ("90s")."""
    if isinstance(by, bool) or not isinstance(by, (timedelta, int, float)):
        raise InvalidArgument(f"extend: by {by!r}: want a timedelta or seconds")
    us = by // timedelta(microseconds=1) if isinstance(by, timedelta) else round(by * 1_000_000)
    if us <= 0:
        raise InvalidArgument(f"extend: by {by!r}: must be positive")
    return f"{us // 1_000_000}s" if us % 1_000_000 == 0 else f"{us}us"


def _page_query(cursor: Optional[str], limit: Optional[int]) -> dict[str, Optional[str]]:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise InvalidArgument(f"limit {limit!r}: want an integer from 1 to 1000")
    return {"cursor": cursor, "limit": str(limit) if limit is not None else None}


def _quote(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _format_labels(labels: Mapping[str, str]) -> str:
    # Keys and values are query-escaped (docs/HTTP.md, "Put"), as Go's
    # url.QueryEscape does: quote_plus escapes ',' and '=' too.
    return ",".join(f"{urllib.parse.quote_plus(k)}={urllib.parse.quote_plus(v)}"
                    for k, v in sorted(labels.items()))


def _format_names(names: Sequence[str]) -> str:
    return ",".join(urllib.parse.quote_plus(n) for n in names)
