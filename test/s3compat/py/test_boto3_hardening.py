"""boto3 against a real `coffer serve`: refusals instead of wrong successes,
and ListObjectVersions as cleanup tools use it.

Run by hardening_test.go (TestBoto3Hardening) with the same environment as
test_boto3.py (COFFER_S3_ENDPOINT, COFFER_S3_ACCESS_KEY,
COFFER_S3_SECRET_KEY, COFFER_S3_BUCKET).
"""

import base64
import hashlib
import os

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["COFFER_S3_ENDPOINT"]
ACCESS_KEY = os.environ["COFFER_S3_ACCESS_KEY"]
SECRET_KEY = os.environ["COFFER_S3_SECRET_KEY"]
BUCKET = os.environ["COFFER_S3_BUCKET"]

CFG = Config(
    region_name="us-east-1",
    signature_version="s3v4",
    s3={"addressing_style": "path"},
    retries={"max_attempts": 1, "mode": "standard"},
)


def session_kwargs():
    return dict(
        endpoint_url=ENDPOINT,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=CFG,
    )


@pytest.fixture(scope="session")
def s3():
    return boto3.client("s3", **session_kwargs())


@pytest.fixture(scope="session")
def bucket(s3):
    s3.create_bucket(Bucket=BUCKET)
    return BUCKET


def err(exc_info):
    e = exc_info.value.response
    return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"]


def absent(s3, bucket, key):
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert err(ei)[1] == 404, ei.value.response


SSE_C_KEY = b"k" * 32
SSE_C = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=SSE_C_KEY)


# ---- encryption Coffer does not implement is refused, never ignored ----
# (SSE-S3, SSE-KMS and SSE-C are implemented: test_sse.py.)


@pytest.mark.parametrize(
    "extra",
    [
        dict(ServerSideEncryption="aws:kms:dsse"),
        dict(ServerSideEncryption="aws:kms", SSEKMSEncryptionContext="e30="),
    ],
    ids=["DSSE", "SSE-KMS-context"],
)
def test_put_object_encryption_refused(s3, bucket, extra):
    key = "sse/" + "-".join(sorted(extra))
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key=key, Body=b"secret plaintext", **extra)
    assert err(ei) == ("NotImplemented", 501), ei.value.response
    absent(s3, bucket, key)


def test_multipart_encryption_refused(s3, bucket):
    # SSE-S3, SSE-KMS and SSE-C multipart uploads are implemented
    # (test_sse.py); DSSE and encryption contexts are not.
    for extra in (dict(ServerSideEncryption="aws:kms:dsse"),
                  dict(ServerSideEncryption="aws:kms", SSEKMSEncryptionContext="e30=")):
        with pytest.raises(ClientError) as ei:
            s3.create_multipart_upload(Bucket=bucket, Key="sse/mp", **extra)
        assert err(ei) == ("NotImplemented", 501), ei.value.response
    ups = s3.list_multipart_uploads(Bucket=bucket, Prefix="sse/").get("Uploads", [])
    assert ups == [], ups


def test_get_with_sse_c_key_refused(s3, bucket):
    # A customer key for an object stored without one: refused as S3 does.
    s3.put_object(Bucket=bucket, Key="sse/plain", Body=b"plain")
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="sse/plain", **SSE_C)
    assert err(ei) == ("InvalidRequest", 400), ei.value.response
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="sse/plain", **SSE_C)
    assert err(ei)[1] == 400, ei.value.response


def test_other_unimplemented_refused(s3, bucket):
    for extra in (
        dict(StorageClass="GLACIER"),
        dict(WebsiteRedirectLocation="/elsewhere"),
    ):
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key="refused/k", Body=b"x", **extra)
        assert err(ei) == ("NotImplemented", 501), (extra, ei.value.response)
    # A lock in a bucket made without object lock: S3's InvalidRequest.
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="refused/k", Body=b"x", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate="2040-01-01T00:00:00Z")
    assert err(ei) == ("InvalidRequest", 400), ei.value.response
    assert "ObjectLockConfiguration" in ei.value.response["Error"]["Message"], ei.value.response
    absent(s3, bucket, "refused/k")
    # What Coffer does honour passes.
    s3.put_object(Bucket=bucket, Key="refused/ok", Body=b"x", StorageClass="STANDARD", ACL="private")
    s3.head_object(Bucket=bucket, Key="refused/ok")


# ---- versions of an unversioned bucket ----


def test_list_object_versions(s3, bucket):
    b = bucket + "-versions"
    s3.create_bucket(Bucket=b)
    keys = sorted("obj/%03d" % i for i in range(25)) + ["top.txt"]
    for k in keys:
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
    assert s3.get_bucket_versioning(Bucket=b).get("Status") is None

    r = s3.list_object_versions(Bucket=b, MaxKeys=10)
    assert r["IsTruncated"] is True and len(r["Versions"]) == 10, r
    assert r["NextKeyMarker"] == keys[9] and r["NextVersionIdMarker"] == "null", r
    assert "DeleteMarkers" not in r, r
    v = r["Versions"][0]
    assert v["VersionId"] == "null" and v["IsLatest"] is True, v
    assert v["StorageClass"] == "STANDARD" and v["Owner"]["ID"], v
    assert v["ETag"] == '"' + hashlib.md5(keys[0].encode()).hexdigest() + '"', v
    assert v["Size"] == len(keys[0]), v

    pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 7}))
    got = [v["Key"] for p in pages for v in p.get("Versions", [])]
    assert got == keys, got
    assert len(pages) == 4, [len(p.get("Versions", [])) for p in pages]

    r = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [v["Key"] for v in r["Versions"]] == ["top.txt"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["obj/"], r
    r = s3.list_object_versions(Bucket=b, Prefix="obj/02")
    assert [v["Key"] for v in r["Versions"]] == ["obj/020", "obj/021", "obj/022", "obj/023", "obj/024"], r

    # delete_object(VersionId="null") deletes the object (its only version).
    r = s3.delete_object(Bucket=b, Key="top.txt", VersionId="null")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r
    absent(s3, b, "top.txt")
    # A version ID Coffer never makes is malformed, as S3 says.
    with pytest.raises(ClientError) as ei:
        s3.delete_object(Bucket=b, Key="obj/000", VersionId="3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY")
    assert err(ei) == ("InvalidArgument", 400), ei.value.response
    s3.head_object(Bucket=b, Key="obj/000")
    assert s3.get_object(Bucket=b, Key="obj/000", VersionId="null")["Body"].read() == b"obj/000"

    # What cleanup tools do before deleting a bucket: delete every version,
    # then the bucket.
    res = boto3.resource("s3", **session_kwargs())
    res.Bucket(b).object_versions.delete()
    assert s3.list_object_versions(Bucket=b).get("Versions", []) == []
    r = s3.delete_bucket(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r


# ---- a versioned bucket ----


def test_versioned_bucket(s3, bucket):
    b = bucket + "-versioned"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    v1 = s3.put_object(Bucket=b, Key="doc", Body=b"first")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="doc", Body=b"second")["VersionId"]
    assert v1 != v2 and "null" not in (v1, v2)
    assert s3.get_object(Bucket=b, Key="doc", VersionId=v1)["Body"].read() == b"first"
    got = s3.get_object(Bucket=b, Key="doc")
    assert got["Body"].read() == b"second" and got["VersionId"] == v2, got

    d = s3.delete_object(Bucket=b, Key="doc")
    assert d["DeleteMarker"] is True and d["VersionId"], d
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=b, Key="doc")
    assert err(ei)[1] == 404
    assert ei.value.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true", ei.value.response
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=b, Key="doc", VersionId="0123456789abcdef0123456789abcdef")
    assert err(ei) == ("NoSuchVersion", 404), ei.value.response

    r = s3.list_object_versions(Bucket=b)
    assert [(v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [(v2, False), (v1, False)], r
    assert [(m["VersionId"], m["IsLatest"]) for m in r["DeleteMarkers"]] == [(d["VersionId"], True)], r
    pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 1}))
    assert len(pages) == 3, pages

    # Restoring the previous version: copy it onto its key.
    c = s3.copy_object(Bucket=b, Key="doc", CopySource={"Bucket": b, "Key": "doc", "VersionId": v1})
    assert c["CopySourceVersionId"] == v1 and c["VersionId"] not in (v1, v2), c
    assert s3.get_object(Bucket=b, Key="doc")["Body"].read() == b"first"

    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    # S3 names no version on a PUT into a suspended bucket; it is the null version.
    assert "VersionId" not in s3.put_object(Bucket=b, Key="doc", Body=b"null")
    assert s3.get_object(Bucket=b, Key="doc", VersionId="null")["Body"].read() == b"null"

    # A versioned bucket is emptied as cleanup tools do, markers included.
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=b)
    assert err(ei) == ("BucketNotEmpty", 409), ei.value.response
    res = boto3.resource("s3", **session_kwargs())
    res.Bucket(b).object_versions.delete()
    r = s3.list_object_versions(Bucket=b)
    assert r.get("Versions", []) == [] and r.get("DeleteMarkers", []) == [], r
    assert s3.delete_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204
