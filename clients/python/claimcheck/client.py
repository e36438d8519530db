"""The client: the claimcheck HTTP API (docs/openapi.yaml) over http.client.

Payloads stream in both directions and are never held whole: a put reads
its file object block by block, and a redeem is a file-like :class:`Payload`
that checks size and sha256 as the bytes arrive and raises rather than hand
over short or altered data.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import ssl
import urllib.parse
from typing import Any, BinaryIO, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .errors import (ChecksumMismatch, ClaimcheckError, InvalidArgument, Unavailable,
                     error_from_body)
from .ref import Ref, is_ref, valid_claim_id

__all__ = ["Client", "Payload", "RefLike", "Body"]

# What names a claim: a Ref, its dict or JSON form, or a bare claim id.
RefLike = Union[Ref, Mapping[str, Any], str]
# What a put sends: bytes, a binary file object, or an iterable of bytes.
Body = Union[bytes, bytearray, memoryview, BinaryIO, Iterable[bytes]]

# The block size of request and response bodies: large enough that a
# 100 MB transfer is a few hundred system calls, small enough to be
# nothing in memory.
BLOCK = 1 << 20
# Error answers and JSON bodies are small; more is not read.
_MAX_SMALL_BODY = 4 << 20
_MAX_LINE = 65536
_USER_AGENT = "claimcheck-python/0.1"


class Client:
    """A claimcheck server.

    ``api_key`` (``cck_...``) is sent as ``Authorization: Bearer`` on every
    API request when set; a server with auth off does not need one.
    ``timeout`` bounds each connect and each read or write on the socket,
    never a whole transfer. ``ssl_context`` is used for ``https`` URLs.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", *, api_key: Optional[str] = None,
                 timeout: float = 60.0, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"server URL {base_url!r}: want http://HOST[:PORT] or https://...")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.ssl_context = ssl_context

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
        body too, and skip storing bytes the namespace already holds.
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
        if size is not None:
            headers["Content-Length"] = str(size)
        path = f"/v1/namespaces/{_quote(ns)}/claims"
        status, rheaders, data = self._call("PUT", path, headers=headers, body=reader,
                                            ok=(201,))
        ref = Ref.parse(data)
        want_size, want_digest = (reader.n, reader.digest()) if reader.eof else (size, digest)
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
            header_ref = resp.getheader("Claimcheck-Ref")
            if not header_ref:
                raise ClaimcheckError("redeem: the answer has no Claimcheck-Ref header", code="bad_answer",
                                      status=resp.status)
            got = Ref.parse(header_ref)
            if got.id != cid or (want is not None and want.digest and got.digest != want.digest) or \
                    (want is not None and want.digest and got.size != want.size):
                raise ChecksumMismatch(f"redeem {cid}: the server answered for {got}, asked for {want or cid}")
            return Payload(conn, resp, got)
        except BaseException:
            conn.close()
            raise

    def get_bytes(self, ref: RefLike, *, ns: Optional[str] = None) -> bytes:
        """The whole verified payload in memory (for small ones; stream large ones)."""
        with self.redeem(ref, ns=ns) as p:
            return p.read()

    def stat(self, ref: RefLike, *, ns: Optional[str] = None) -> dict[str, Any]:
        """State, deadlines and counters (``ClaimInfo``); not a read."""
        return self._json("GET", f"/v1/claims/{_claim_id(ref)}/meta", query={"ns": ns or _ns_of(ref)})

    def release(self, ref: RefLike, consumer: Optional[str] = None, *, ns: Optional[str] = None) -> None:
        """A consumer is done with the claim (idempotent per consumer name)."""
        body = json.dumps({"consumer": consumer}).encode() if consumer else b""
        headers = {"Content-Type": "application/json"} if body else {}
        self._call("POST", f"/v1/claims/{_claim_id(ref)}/release", query={"ns": ns or _ns_of(ref)},
                   headers=headers, body=body, ok=(204,))

    def delete(self, ref: RefLike, *, ns: Optional[str] = None) -> None:
        """Finishes the claim now (reason ``deleted``); fine on a finished one."""
        self._call("DELETE", f"/v1/claims/{_claim_id(ref)}", query={"ns": ns or _ns_of(ref)}, ok=(204,))

    def namespace(self, ns: str) -> dict[str, Any]:
        """The namespace's effective policy, limits and usage."""
        return self._json("GET", f"/v1/namespaces/{_quote(ns)}")

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
        start = file.tell()
        h, size = hashlib.sha256(), 0
        while block := file.read(BLOCK):
            h.update(block)
            size += len(block)
        file.seek(start)
        req: dict[str, Any] = {"size": size, "sha256": h.hexdigest()}
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
            # The URL may be another host (a presigned S3 URL): it gets no
            # API key, and is used exactly as answered.
            self._call(up.get("method") or "PUT", up["url"], headers=put_headers,
                       body=_HashingReader.of(file), ok=(200, 204), absolute=True, auth=False)
        _, _, data = self._call("POST", f"/v1/uploads/{up['id']}/confirm", ok=(200,))
        return Ref.parse(data)

    # -- offload and resolve -----------------------------------------------

    def offload(self, ns: str, value: Any, *, threshold: Optional[int] = None, **put_options: Any) -> Any:
        """Returns ``value`` itself when its JSON is smaller than the
        namespace's threshold, else stores the JSON in a claim and returns the
        reference (a dict, JSON-serialisable like the value it stands for).
        ``threshold`` overrides the namespace's (read from the server when
        not given); ``put_options`` are :meth:`put`'s."""
        data = json.dumps(value, separators=(",", ":")).encode()
        if threshold is None:
            threshold = int(self.namespace(ns)["policy"]["threshold"])
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
                raise self._error(resp)
            return resp.status, resp.headers, _read_small(resp)
        finally:
            conn.close()

    def _open(self, method: str, path: str, *, query: Optional[Mapping[str, Optional[str]]] = None,
              headers: Optional[Mapping[str, str]] = None, body: Any = None,
              absolute: bool = False, auth: bool = True) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        url = urllib.parse.urlsplit(path if absolute else self.base_url + path)
        target = url.path or "/"
        if not absolute:
            target = urllib.parse.urlsplit(self.base_url).path.rstrip("/") + path
        q = urllib.parse.urlencode({k: v for k, v in (query or {}).items() if v})
        if url.query or q:
            target += "?" + "&".join(x for x in (url.query, q) if x)
        conn = self._connect(url)
        h = {"User-Agent": _USER_AGENT}
        if auth and self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        h.update(headers or {})
        try:
            conn.request(method, target, body=body, headers=h)
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise Unavailable(f"{method} {url.scheme}://{url.netloc}{url.path}: {e}") from e

    def _connect(self, url: urllib.parse.SplitResult) -> http.client.HTTPConnection:
        host, port = url.hostname or "", url.port
        if url.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout,
                                               context=self.ssl_context, blocksize=BLOCK)
        return http.client.HTTPConnection(host, port, timeout=self.timeout, blocksize=BLOCK)

    @staticmethod
    def _error(resp: http.client.HTTPResponse) -> ClaimcheckError:
        return error_from_body(resp.status, _read_small(resp), resp.headers)


class Payload(io.RawIOBase):
    """A claim's payload as it streams: a readable binary file that verifies.

    ``ref`` is the claim's reference (from the ``Claimcheck-Ref`` header),
    ``content_type`` the type it was stored with. Every read counts bytes
    and feeds sha256; more bytes than ``ref.size``, fewer at the end, another
    digest, or an error in the ``Claimcheck-Error`` trailer raise, and keep
    raising on later reads. Read to the end before trusting what you read.
    """

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, ref: Ref) -> None:
        super().__init__()
        self.ref = ref
        self.content_type = resp.getheader("Content-Type", "application/octet-stream")
        self._conn, self._resp = conn, resp
        # http.client decodes chunked bodies but throws their trailer away:
        # the payload's is read here, from the connection, to see the
        # server's error after a failure part-way.
        self._chunked = bool(resp.chunked)
        self._fp = resp.fp
        self._chunk_left: Optional[int] = None
        self._hash = hashlib.sha256()
        self._n = 0
        self._err: Optional[ClaimcheckError] = None
        self._done = False
        self.trailers: dict[str, str] = {}

    def readable(self) -> bool:
        return True

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
                f"claim {self.ref.id}: stream cut after {self._n} of {self.ref.size} bytes: {e!r}")) from None
        if n == 0:
            self._finish()
            return 0
        self._hash.update(mv[:n])
        self._n += n
        if self._n > self.ref.size:
            raise self._fail(ChecksumMismatch(
                f"claim {self.ref.id}: more than the {self.ref.size} bytes recorded"))
        return n

    def iter_chunks(self, size: int = BLOCK) -> Iterator[bytes]:
        """Yields the payload in blocks of at most ``size`` bytes."""
        buf = bytearray(size)
        while n := self.readinto(buf):
            yield bytes(buf[:n])

    def copy_to(self, out: BinaryIO) -> int:
        """Writes the whole verified payload to ``out``; returns its size."""
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

    def close(self) -> None:
        if not self.closed:
            self._conn.close()
        super().close()

    def _fail(self, err: ClaimcheckError) -> ClaimcheckError:
        self._err = err
        self._conn.close()
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
        self._conn.close()
        trailer = self.trailers.get("claimcheck-error", "")
        if trailer:
            raise self._fail(error_from_body(200, trailer.encode("latin-1")))
        if self._n != self.ref.size:
            raise self._fail(ChecksumMismatch(
                f"claim {self.ref.id}: stream ended after {self._n} of {self.ref.size} bytes"))
        got = "sha256:" + self._hash.hexdigest()
        if got != self.ref.digest:
            raise self._fail(ChecksumMismatch(
                f"claim {self.ref.id}: content hashes to {got}, recorded {self.ref.digest}"))

    def __enter__(self) -> "Payload":
        return self


class _HashingReader:
    """A request body that hashes and counts what http.client sends."""

    def __init__(self, source: Any, length: Optional[int]) -> None:
        self._src = source
        self._len = length
        self._h = hashlib.sha256()
        self.n = 0
        self.eof = False

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


def _ns_of(ref: RefLike) -> Optional[str]:
    r = _ref_or_none(ref)
    return r.ns if r is not None else None


def _quote(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _format_labels(labels: Mapping[str, str]) -> str:
    # Keys and values are query-escaped (docs/HTTP.md, "Put"), as Go's
    # url.QueryEscape does: quote_plus escapes ',' and '=' too.
    return ",".join(f"{urllib.parse.quote_plus(k)}={urllib.parse.quote_plus(v)}"
                    for k, v in sorted(labels.items()))


def _format_names(names: Sequence[str]) -> str:
    return ",".join(urllib.parse.quote_plus(n) for n in names)
