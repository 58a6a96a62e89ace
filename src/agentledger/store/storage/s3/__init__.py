"""The S3-compatible storage backend (AWS S3, MinIO, Ceph, R2, ...): ``s3://bucket/prefix``.

Needs the ``s3`` extra (boto3): ``pip install 'agentledger[s3]'``. See docs/scale.md.
"""

from agentledger.store.storage.s3.client import S3Location, parse_location
from agentledger.store.storage.s3.storage import S3Storage

__all__ = ["S3Location", "S3Storage", "parse_location"]
