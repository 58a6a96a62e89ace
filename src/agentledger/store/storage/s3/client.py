"""The S3 client the object-store backend talks through, and where in a bucket a ledger lives.

One boto3 client per process (boto3 clients are thread-safe, not fork-safe), built from the
standard chain only: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` and the shared config files, instance and container roles, and
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for MinIO, Ceph, R2 or a test server. Nothing
of it is ever written to ledger.json: a URI that carries credentials is refused.

S3's answers become agentledger's errors here: a missing bucket, missing or refused
credentials and an unreachable endpoint are `StorageAccessError` (exit 2); any other failure
left after botocore's retries is `WriteFailedError` (exit 1); a failed precondition
(412, or 409 for two conditional writes racing) is an answer, not an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO

from agentledger.errors import (
    AgentLedgerError,
    StorageAccessError,
    UnknownBackendError,
    WriteFailedError,
    WriteRefusedError,
)

__all__ = [
    "PART_BYTES",
    "ObjectInfo",
    "ObjectStore",
    "S3Location",
    "StoredObject",
    "parse_location",
    "read_up_to",
]

PART_BYTES = 8 * 1024 * 1024
"""Size of each part of a multipart upload (and the largest artifact sent in one PUT)."""
_COPY_LIMIT = 5 * 1024**3  # CopyObject copies up to 5 GiB in one request
_DELETE_BATCH = 1000  # DeleteObjects takes at most 1,000 keys
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PREFIX_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
_REFUSED = frozenset(
    {
        "AccessDenied",
        "AllAccessDisabled",
        "ExpiredToken",
        "InvalidAccessKeyId",
        "InvalidToken",
        "SignatureDoesNotMatch",
        "TokenRefreshRequired",
        "403",
    }
)
_PRECONDITION = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})
_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix (empty, or ending with ``/``) that hold one ledger."""

    bucket: str
    prefix: str

    @property
    def uri(self) -> str:
        """The URI ledger.json names this location by."""
        return f"s3://{self.bucket}/{self.prefix.rstrip('/')}".rstrip("/")

    def key(self, relative: str) -> str:
        """The object key of `relative` (a key of the ledger's layout)."""
        return self.prefix + relative

    def relative(self, key: str) -> str:
        """The ledger key of the object key `key` (which lies under the prefix)."""
        return key[len(self.prefix) :]

    def describe(self, relative: str) -> str:
        """``s3://bucket/prefix/relative``, for messages."""
        return f"s3://{self.bucket}/{self.prefix}{relative}"


def parse_location(rest: str) -> S3Location:
    """The location of ``s3://<rest>``: ``bucket`` or ``bucket/prefix/...``.

    UnknownBackendError for a URI that carries credentials, a query or a bad bucket name or
    prefix: what the backend cannot use is refused before anything is written.
    """
    if "@" in rest or ":" in rest.split("/", 1)[0]:
        raise UnknownBackendError(
            "an s3:// URI names a bucket and a prefix, never credentials: give them through "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or a role (docs/scale.md)"
        )
    if any(char in rest for char in "?#"):
        raise UnknownBackendError(
            f"s3://{rest}: an s3:// URI takes no query or fragment; set the endpoint with "
            "AWS_ENDPOINT_URL"
        )
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise UnknownBackendError(
            f"s3://{rest}: {bucket!r} is not a bucket name (3 to 63 lower-case letters, "
            "digits, '.' and '-'; example: s3://team-ledger/agents)"
        )
    prefix = prefix.rstrip("/")
    segments = prefix.split("/") if prefix else []
    for segment in segments:
        if not _PREFIX_SEGMENT.match(segment):
            raise UnknownBackendError(
                f"s3://{rest}: the prefix segment {segment!r} is not safe (letters, digits, "
                "'.', '_' and '-', not starting with '.' or '-', no empty segment)"
            )
    return S3Location(bucket, "".join(f"{segment}/" for segment in segments))


@dataclass(frozen=True)
class ObjectInfo:
    """What a HEAD or GET says of an object besides its bytes."""

    etag: str
    last_modified: datetime
    server_time: datetime | None
    """The server's clock at the answer (its Date header): staleness is judged on one clock."""

    @property
    def age_seconds(self) -> float:
        """How long ago, by the server's clock, the object was last written."""
        if self.server_time is None:
            return 0.0
        return (self.server_time - self.last_modified).total_seconds()


@dataclass(frozen=True)
class StoredObject:
    """An object's bytes and what S3 says of it."""

    data: bytes
    info: ObjectInfo


def _server_time(response: dict[str, Any]) -> datetime | None:
    from email.utils import parsedate_to_datetime

    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        return None


def _info(response: dict[str, Any]) -> ObjectInfo:
    return ObjectInfo(
        etag=str(response.get("ETag", "")),
        last_modified=response["LastModified"],
        server_time=_server_time(response),
    )


_loader: Any = None


def _botocore_session() -> Any:
    """A new botocore session (so that credentials and endpoint are read afresh from the
    environment) sharing one loader of the service models: reading them is most of the cost
    of making a client."""
    global _loader
    import botocore.session

    session = botocore.session.Session()
    if _loader is None:
        _loader = session.get_component("data_loader")
    else:
        session.register_component("data_loader", _loader)
    return session


class ObjectStore:
    """The S3 operations the backend needs, on one location, with errors translated."""

    def __init__(self, location: S3Location, *, workers: int = 16) -> None:
        self.location = location
        self.workers = workers
        self.page_size = 1000
        """Keys asked for per listing request (S3 answers at most 1,000)."""
        self._pid = -1
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._mutex = threading.Lock()
        self.requests: Counter[str] = Counter()
        """The S3 requests sent through this store, by operation (``PutObject``, ``HeadObject``,
        ...): every HTTP request, retries included, counted on botocore's ``before-send``
        event of each client this store makes. What benchmarks read."""
        self.calls: Counter[str] = Counter()
        """The S3 operations this store asked for, by operation, each once however many times
        botocore retried it (``before-call``): what the code asks for, whatever the network or
        a loaded server made botocore resend. What tests pin."""
        self._counting = threading.Lock()

    # -- the client, remade in a forked child ----------------------------------------------

    def _ensure(self) -> None:
        if self._pid == os.getpid():
            return
        with self._mutex:
            if self._pid == os.getpid():
                return
            try:
                import boto3
                from botocore.config import Config
            except ImportError:  # pragma: no cover - the s3 extra is not installed
                raise StorageAccessError(
                    f"{self.location.uri}: S3 storage needs boto3: pip install 'agentledger[s3]'"
                ) from None
            config = Config(
                retries={"mode": "standard", "max_attempts": 5},
                max_pool_connections=self.workers * 2,
                connect_timeout=10,
                read_timeout=120,
            )
            try:
                self._client = boto3.session.Session(botocore_session=_botocore_session()).client(
                    "s3", config=config
                )
            except Exception as exc:  # a bad profile or config file
                raise StorageAccessError(
                    f"{self.location.uri}: cannot make an S3 client: {exc}"
                ) from None
            self._counting = threading.Lock()  # (a fork may have copied it held)
            self._client.meta.events.register("before-send.s3", self._count)
            self._client.meta.events.register("before-call.s3", self._count_call)
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="agentledger-s3")
            self._pid = os.getpid()

    def _count(self, event_name: str = "", **_: Any) -> None:
        """Count one request (``before-send.s3.<Operation>``); sends nothing in its place."""
        with self._counting:
            self.requests[event_name.rsplit(".", 1)[-1]] += 1

    def _count_call(self, event_name: str = "", **_: Any) -> None:
        """Count one operation asked for (``before-call.s3.<Operation>``), retries aside."""
        with self._counting:
            self.calls[event_name.rsplit(".", 1)[-1]] += 1

    def close(self) -> None:
        """Shut this process's thread pool and close its client's connections (a client made
        in another process, before a fork, is left to that process). Used again, the store
        makes a new client."""
        with self._mutex:
            if self._pid != os.getpid():
                return
            client, pool = self._client, self._pool
            self._client, self._pool, self._pid = None, None, -1
        if pool is not None:
            pool.shutdown(wait=True)
        if client is not None:
            client.close()

    @property
    def client(self) -> Any:
        """This process's boto3 S3 client."""
        self._ensure()
        return self._client

    def map(self, function: Any, items: Iterable[Any]) -> list[Any]:
        """`function` over `items` on this process's thread pool, results in order."""
        listed = list(items)
        if len(listed) <= 1:
            return [function(item) for item in listed]
        self._ensure()
        assert self._pool is not None
        return list(self._pool.map(function, listed))

    # -- errors ----------------------------------------------------------------------------

    def error(self, exc: Exception, action: str, relative: str = "") -> AgentLedgerError:
        """The agentledger error for a failed S3 call."""
        from botocore.exceptions import (
            ClientError,
            EndpointConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
        )

        uri = self.location.uri
        where = self.location.describe(relative) if relative else uri
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return StorageAccessError(
                f"{uri}: no AWS credentials were found ({exc}); set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run where a role applies (docs/scale.md)"
            )
        if isinstance(exc, EndpointConnectionError):
            return StorageAccessError(f"{uri}: cannot reach the S3 endpoint ({exc})")
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code == "NoSuchBucket":
                return StorageAccessError(
                    f"{uri}: the bucket {self.location.bucket!r} does not exist (or the "
                    "endpoint is not the one that holds it); create it, or correct the URI "
                    "or AWS_ENDPOINT_URL"
                )
            if code in _REFUSED:
                refused = WriteRefusedError if action == "writing" else StorageAccessError
                return refused(
                    f"{where}: the credentials were refused ({code}) for {action}; check "
                    "AWS_PROFILE / AWS_ACCESS_KEY_ID and that the bucket policy allows it "
                    "(docs/scale.md lists the actions)"
                )
            return WriteFailedError(
                f"{where}: {action} failed after retries ({code}: {error.get('Message', '')})"
            )
        return WriteFailedError(f"{where}: {action} failed ({type(exc).__name__}: {exc})")

    @staticmethod
    def _code(exc: Exception) -> str:
        response = getattr(exc, "response", None)
        if not isinstance(response, dict):
            return ""
        code = str(response.get("Error", {}).get("Code", ""))
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return code or str(status or "")

    def _call(self, action: str, relative: str, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(Bucket=self.location.bucket, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise self.error(exc, action, relative) from None

    # -- objects ---------------------------------------------------------------------------

    def check_bucket(self) -> None:
        """StorageAccessError unless the bucket exists and the credentials may list the
        prefix (a listing, not HeadBucket: a policy that allows listing only under the
        prefix refuses HeadBucket)."""
        self._call(
            "listing the ledger's prefix",
            "",
            "list_objects_v2",
            Prefix=self.location.prefix,
            MaxKeys=1,
        )

    def put(
        self,
        relative: str,
        data: bytes,
        *,
        if_none_match: bool = False,
        if_match: str | None = None,
    ) -> str | None:
        """Write `data` at `relative`; its ETag, or None when the precondition failed
        (``If-None-Match: *``: something is there; ``If-Match``: it changed)."""
        from botocore.exceptions import BotoCoreError, ClientError

        conditions: dict[str, str] = {}
        if if_none_match:
            conditions["IfNoneMatch"] = "*"
        if if_match is not None:
            conditions["IfMatch"] = if_match
        try:
            response = self.client.put_object(
                Bucket=self.location.bucket,
                Key=self.location.key(relative),
                Body=data,
                **conditions,
            )
        except ClientError as exc:
            code = self._code(exc)
            if code in _PRECONDITION or (if_match is not None and code in _MISSING):
                return None
            raise self.error(exc, "writing", relative) from None
        except BotoCoreError as exc:
            raise self.error(exc, "writing", relative) from None
        return str(response.get("ETag", ""))

    def get(self, relative: str) -> StoredObject | None:
        """The object at `relative`, or None when there is none."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.get_object(
                Bucket=self.location.bucket, Key=self.location.key(relative)
            )
            data = response["Body"].read()
        except ClientError as exc:
            if self._code(exc) in _MISSING:
                return None
            raise self.error(exc, "reading", relative) from None
        except BotoCoreError as exc:
            raise self.error(exc, "reading", relative) from None
        return StoredObject(bytes(data), _info(response))

    def head(self, relative: str) -> ObjectInfo | None:
        """What S3 says of the object at `relative`, or None when there is none."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.head_object(
                Bucket=self.location.bucket, Key=self.location.key(relative)
            )
        except ClientError as exc:
            if self._code(exc) in _MISSING:
                return None
            raise self.error(exc, "looking up", relative) from None
        except BotoCoreError as exc:
            raise self.error(exc, "looking up", relative) from None
        return _info(response)

    def list(
        self, relative_prefix: str, *, limit: int | None = None, after: str | None = None
    ) -> Iterator[tuple[str, int]]:
        """(ledger key, size) of every object whose key starts with `relative_prefix` (and
        sorts after `after`, when given), in key order, page by page (S3 returns at most 1,000
        a request); at most `limit` of them."""
        token: str | None = None
        seen = 0
        while True:
            extra: dict[str, Any] = {"ContinuationToken": token} if token else {}
            if after is not None and not token:
                extra["StartAfter"] = self.location.key(after)
            extra["MaxKeys"] = (
                self.page_size if limit is None else min(self.page_size, limit - seen)
            )
            page = self._call(
                "listing",
                relative_prefix,
                "list_objects_v2",
                Prefix=self.location.key(relative_prefix),
                **extra,
            )
            for item in page.get("Contents", []):
                yield self.location.relative(item["Key"]), int(item.get("Size", 0))
                seen += 1
                if limit is not None and seen >= limit:
                    return
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def delete(self, relatives: Iterable[str]) -> None:
        """Delete the objects at `relatives` (absent ones are no error), 1,000 a request."""
        keys = list(dict.fromkeys(relatives))
        for start in range(0, len(keys), _DELETE_BATCH):
            chunk = keys[start : start + _DELETE_BATCH]
            response = self._call(
                "deleting",
                chunk[0],
                "delete_objects",
                Delete={
                    "Objects": [{"Key": self.location.key(key)} for key in chunk],
                    "Quiet": True,
                },
            )
            errors = response.get("Errors") or []
            if errors:
                first = errors[0]
                raise WriteFailedError(
                    f"{self.location.describe(self.location.relative(first.get('Key', '')))}: "
                    f"deleting failed ({first.get('Code')}: {first.get('Message')})"
                )

    def copy(self, source: str, target: str, size: int) -> None:
        """Copy the object at `source` to `target` inside the bucket, on the server."""
        copy_source = {"Bucket": self.location.bucket, "Key": self.location.key(source)}
        if size < _COPY_LIMIT:
            self._call(
                "copying",
                target,
                "copy_object",
                Key=self.location.key(target),
                CopySource=copy_source,
            )
            return
        from botocore.exceptions import BotoCoreError, ClientError

        try:  # a multipart copy, managed by boto3
            self.client.copy(copy_source, self.location.bucket, self.location.key(target))
        except (ClientError, BotoCoreError) as exc:
            raise self.error(exc, "copying", target) from None

    def upload(self, relative: str, source: BinaryIO, limit: int) -> tuple[str | None, int]:
        """Stream `source` to `relative` (multipart past `PART_BYTES`), hashing it as it goes.

        (sha256 hex, size); (None, bytes read) and nothing left behind once more than `limit`
        bytes came.
        """
        digest = hashlib.sha256()
        first = _read_part(source)
        if len(first) > limit:
            return None, len(first)
        digest.update(first)
        if len(first) < PART_BYTES:
            self.put(relative, first)
            return digest.hexdigest(), len(first)
        key = self.location.key(relative)
        started = self._call("uploading", relative, "create_multipart_upload", Key=key)
        upload_id = started["UploadId"]
        parts: list[dict[str, Any]] = []
        size = 0
        try:
            part = first
            while part:
                size += len(part)
                if size > limit:
                    self._abort(key, upload_id)
                    return None, size
                done = self._call(
                    "uploading",
                    relative,
                    "upload_part",
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=len(parts) + 1,
                    Body=part,
                )
                parts.append({"ETag": done["ETag"], "PartNumber": len(parts) + 1})
                part = _read_part(source)
                digest.update(part)
            self._call(
                "uploading",
                relative,
                "complete_multipart_upload",
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
        except BaseException:
            self._abort(key, upload_id)
            raise
        return digest.hexdigest(), size

    def _abort(self, key: str, upload_id: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        # An upload never completed is not an object; a lifecycle rule ends what this misses.
        with contextlib.suppress(ClientError, BotoCoreError):
            self.client.abort_multipart_upload(
                Bucket=self.location.bucket, Key=key, UploadId=upload_id
            )


def read_up_to(source: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes from `source`: fewer only at its end (a pipe returns what it has)."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        chunk = source.read(size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_part(source: BinaryIO) -> bytes:
    return read_up_to(source, PART_BYTES)
