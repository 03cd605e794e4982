"""boto3 against gateway buckets of a real `coffer serve` fronting MinIO.

Run by gateway_test.go (TestBoto3Gateway): COFFER_S3_ENDPOINT,
COFFER_S3_ACCESS_KEY, COFFER_S3_SECRET_KEY name Coffer's S3 API and the
owner's key; COFFER_GW_RO and COFFER_GW_RW the gateway buckets (ro over the
whole MinIO bucket, rw under its rw/ prefix); MINIO_ENDPOINT,
MINIO_ACCESS_KEY, MINIO_SECRET_KEY, MINIO_BUCKET the backend, which this
test also writes directly, behind Coffer's back.
"""

import io
import os

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

CFG = Config(
    region_name="us-east-1",
    signature_version="s3v4",
    s3={"addressing_style": "path"},
    retries={"max_attempts": 1, "mode": "standard"},
)
RO = os.environ["COFFER_GW_RO"]
RW = os.environ["COFFER_GW_RW"]
MB = os.environ["MINIO_BUCKET"]


@pytest.fixture(scope="module")
def coffer():
    return boto3.client("s3", endpoint_url=os.environ["COFFER_S3_ENDPOINT"],
                        aws_access_key_id=os.environ["COFFER_S3_ACCESS_KEY"],
                        aws_secret_access_key=os.environ["COFFER_S3_SECRET_KEY"], config=CFG)


@pytest.fixture(scope="module")
def minio():
    return boto3.client("s3", endpoint_url=os.environ["MINIO_ENDPOINT"],
                        aws_access_key_id=os.environ["MINIO_ACCESS_KEY"],
                        aws_secret_access_key=os.environ["MINIO_SECRET_KEY"], config=CFG)


def test_list_pages_like_the_backend(coffer, minio):
    for i in range(7):
        minio.put_object(Bucket=MB, Key=f"list/k{i}", Body=b"x")
    minio.put_object(Bucket=MB, Key="list/sub/deep", Body=b"y")
    keys, prefixes = [], []
    for page in coffer.get_paginator("list_objects_v2").paginate(
            Bucket=RO, Prefix="list/", Delimiter="/", PaginationConfig={"PageSize": 3}):
        keys += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    assert keys == [f"list/k{i}" for i in range(7)]
    assert prefixes == ["list/sub/"]
    # v1 listing with markers too.
    v1 = coffer.list_objects(Bucket=RO, Prefix="list/", MaxKeys=2)
    assert [o["Key"] for o in v1["Contents"]] == ["list/k0", "list/k1"] and v1["IsTruncated"]


def test_written_behind_the_back_appears_at_once(coffer, minio):
    put = minio.put_object(Bucket=MB, Key="live.txt", Body=b"first")
    got = coffer.get_object(Bucket=RO, Key="live.txt")
    assert got["Body"].read() == b"first" and got["ETag"] == put["ETag"]
    put2 = minio.put_object(Bucket=MB, Key="live.txt", Body=b"second version")
    head = coffer.head_object(Bucket=RO, Key="live.txt")
    assert head["ETag"] == put2["ETag"] and head["ContentLength"] == 14
    assert coffer.get_object(Bucket=RO, Key="live.txt", Range="bytes=-7")["Body"].read() == b"version"
    with pytest.raises(ClientError) as e:
        coffer.get_object(Bucket=RO, Key="live.txt", IfNoneMatch=put2["ETag"])
    assert e.value.response["Error"]["Code"] in ("304", "NotModified")
    minio.delete_object(Bucket=MB, Key="live.txt")
    with pytest.raises(ClientError) as e:
        coffer.head_object(Bucket=RO, Key="live.txt")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_read_only_refuses_writes(coffer, minio):
    for call in (lambda: coffer.put_object(Bucket=RO, Key="nope", Body=b"x"),
                 lambda: coffer.delete_object(Bucket=RO, Key="list/k0"),
                 lambda: coffer.copy_object(Bucket=RO, Key="copy", CopySource={"Bucket": RO, "Key": "list/k0"})):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert minio.get_object(Bucket=MB, Key="list/k0")["Body"].read() == b"x"


def test_read_write(coffer, minio):
    out = coffer.put_object(Bucket=RW, Key="boto.txt", Body=b"from boto3", Metadata={"who": "boto"})
    back = minio.get_object(Bucket=MB, Key="rw/boto.txt")
    assert back["Body"].read() == b"from boto3" and back["Metadata"]["who"] == "boto"
    assert back["ETag"] == out["ETag"]
    # boto3 goes multipart above 8 MiB, which a gateway refuses clearly,
    # storing nothing.
    with pytest.raises(Exception) as e:
        coffer.upload_fileobj(io.BytesIO(b"z" * (9 << 20)), RW, "big.bin")
    assert "NotImplemented" in str(e.value)
    with pytest.raises(ClientError):
        minio.head_object(Bucket=MB, Key="rw/big.bin")
