"""boto3 against a real `coffer serve`.

Run by compat_test.go (TestClients/boto3) with:
  COFFER_S3_ENDPOINT   http://127.0.0.1:PORT of the S3 API
  COFFER_S3_ACCESS_KEY / COFFER_S3_SECRET_KEY
  COFFER_S3_BUCKET     a bucket name prefix owned by this run (buckets made
                       here are COFFER_S3_BUCKET and COFFER_S3_BUCKET-*)
Each test checks status codes and contents; a failure names the request.
"""

import base64
import concurrent.futures
import datetime
import hashlib
import os
import pprint
import time
import urllib.parse
import zlib

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from s3env import ACCESS_KEY, BUCKET, ENDPOINT, HTTP, SECRET_KEY, client

MiB = 1 << 20


def make_client(**extra):
    return client(
        region_name="us-east-1",
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"max_attempts": 2, "mode": "standard"},
        max_pool_connections=32,
        connect_timeout=10,
        read_timeout=120,
        **extra,
    )


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def md5_etag(b):
    return '"' + hashlib.md5(b).hexdigest() + '"'


def err(exc_info):
    """(code, http status) of a botocore ClientError."""
    e = exc_info.value.response
    return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture(scope="session")
def s3():
    return make_client()


@pytest.fixture(scope="session")
def bucket(s3):
    r = s3.create_bucket(Bucket=BUCKET)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200, r
    return BUCKET


def put(s3, bucket, key, body, **kw):
    r = s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200, r
    return r


# ---- buckets ----


def test_buckets(s3, bucket):
    other = BUCKET + "-b"
    s3.create_bucket(Bucket=other)
    s3.head_bucket(Bucket=other)
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket in names and other in names, names
    loc = s3.get_bucket_location(Bucket=other)
    assert loc.get("LocationConstraint") in (None, "", "us-east-1"), loc
    # Creating a bucket you already own: 200 (us-east-1 legacy) or BucketAlreadyOwnedByYou.
    try:
        s3.create_bucket(Bucket=other)
    except ClientError as e:
        assert e.response["Error"]["Code"] == "BucketAlreadyOwnedByYou", e.response
    # Non-empty bucket cannot be deleted.
    put(s3, other, "x", b"x")
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=other)
    assert err(ei) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=other, Key="x")
    r = s3.delete_bucket(Bucket=other)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=other)
    assert err(ei)[1] == 404
    with pytest.raises(ClientError) as ei:
        s3.create_bucket(Bucket="Bad_Bucket_Name")
    assert err(ei) == ("InvalidBucketName", 400)


# ---- objects ----


def test_put_get_head_roundtrip(s3, bucket):
    data = os.urandom(MiB + 123)
    key = "rt/data file.bin"
    r = put(
        s3,
        bucket,
        key,
        data,
        ContentType="application/x-coffer-test",
        Metadata={"color": "blue", "Mixed-Case": "Value 1"},
    )
    assert r["ETag"] == md5_etag(data), r
    g = s3.get_object(Bucket=bucket, Key=key)
    body = g["Body"].read()
    assert len(body) == len(data) and sha256(body) == sha256(data)
    assert g["ContentLength"] == len(data)
    assert g["ContentType"] == "application/x-coffer-test"
    assert g["Metadata"] == {"color": "blue", "mixed-case": "Value 1"}, g["Metadata"]
    assert g["ETag"] == md5_etag(data)
    h = s3.head_object(Bucket=bucket, Key=key)
    assert h["ContentLength"] == len(data)
    assert h["ContentType"] == "application/x-coffer-test"
    assert h["Metadata"] == {"color": "blue", "mixed-case": "Value 1"}, h["Metadata"]
    assert h["ETag"] == md5_etag(data)
    assert isinstance(h["LastModified"], datetime.datetime)
    # Empty object, overwrite.
    put(s3, bucket, "rt/empty", b"")
    assert s3.get_object(Bucket=bucket, Key="rt/empty")["Body"].read() == b""
    put(s3, bucket, "rt/empty", b"now not empty")
    assert s3.get_object(Bucket=bucket, Key="rt/empty")["Body"].read() == b"now not empty"
    # Delete.
    r = s3.delete_object(Bucket=bucket, Key="rt/empty")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="rt/empty")
    assert err(ei) == ("NoSuchKey", 404)
    # Deleting a missing key succeeds, as on S3.
    r = s3.delete_object(Bucket=bucket, Key="rt/never-existed")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r


def test_errors(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="no/such/key")
    assert err(ei) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="no/such/key")
    assert err(ei)[1] == 404
    missing = BUCKET + "-missing"
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=missing, Key="k")
    assert err(ei) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as ei:
        s3.list_objects_v2(Bucket=missing)
    assert err(ei) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=missing, Key="k", Body=b"x")
    assert err(ei) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=missing)
    assert err(ei)[1] == 404
    # Wrong secret → SignatureDoesNotMatch; unknown key id → InvalidAccessKeyId.
    bad = boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key="x" * 40,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    with pytest.raises(ClientError) as ei:
        bad.list_objects_v2(Bucket=bucket)
    assert err(ei) == ("SignatureDoesNotMatch", 403)
    unknown = boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id="AKIAUNKNOWNKEY000000",
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    with pytest.raises(ClientError) as ei:
        unknown.list_objects_v2(Bucket=bucket)
    assert err(ei) == ("InvalidAccessKeyId", 403)


# ---- listing ----


def test_list_delimiter(s3, bucket):
    keys = ["delim/a.txt", "delim/b.txt", "delim/dir1/c", "delim/dir1/d/e", "delim/dir2/f", "delimx"]
    for k in keys:
        put(s3, bucket, k, k.encode())
    r = s3.list_objects_v2(Bucket=bucket, Prefix="delim/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["delim/a.txt", "delim/b.txt"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["delim/dir1/", "delim/dir2/"], r
    assert r["KeyCount"] == 4, r
    assert r["IsTruncated"] is False
    assert r["Prefix"] == "delim/" and r["Delimiter"] == "/"
    for o in r["Contents"]:
        assert o["Size"] == len(o["Key"]) and o["ETag"] == md5_etag(o["Key"].encode())
    r = s3.list_objects_v2(Bucket=bucket, Prefix="delim/dir1/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["delim/dir1/c"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["delim/dir1/d/"], r
    # Paging through a mix of keys and prefixes, one entry per page.
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, Prefix="delim/", Delimiter="/", MaxKeys=1, **kw)
        seen += [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert seen == ["delim/a.txt", "delim/b.txt", "delim/dir1/", "delim/dir2/"], seen


N_PAGED = 2500


@pytest.fixture(scope="module")
def paged_keys(s3, bucket):
    keys = ["page/k%05d" % i for i in range(N_PAGED)]

    def up(k):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())

    with concurrent.futures.ThreadPoolExecutor(max_workers=24) as ex:
        list(ex.map(up, keys))  # re-raises the first failure
    return keys


def test_list_paging_paginator(s3, bucket, paged_keys):
    got, pages = [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="page/", PaginationConfig={"PageSize": 1000}
    ):
        pages += 1
        assert page["KeyCount"] == len(page.get("Contents", [])), page["KeyCount"]
        assert page["KeyCount"] <= 1000
        got += [o["Key"] for o in page.get("Contents", [])]
    assert pages == 3, pages
    assert len(got) == len(set(got)) == N_PAGED, (len(got), len(set(got)))
    assert got == paged_keys  # byte order, every key exactly once


def test_list_paging_manual(s3, bucket, paged_keys):
    got, token, calls = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, Prefix="page/", MaxKeys=700, **kw)
        calls += 1
        assert r["MaxKeys"] == 700
        if token:
            assert r["ContinuationToken"] == token
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            assert "NextContinuationToken" not in r
            break
        assert r["KeyCount"] == 700
        token = r["NextContinuationToken"]
        assert calls < 20
    assert calls == 4, calls
    assert got == paged_keys
    # Default MaxKeys is 1000.
    r = s3.list_objects_v2(Bucket=bucket, Prefix="page/")
    assert r["KeyCount"] == 1000 and r["IsTruncated"] is True
    # StartAfter.
    got = []
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="page/", StartAfter="page/k01234"
    ):
        got += [o["Key"] for o in page.get("Contents", [])]
    assert got == paged_keys[1235:], (len(got), got[:2])
    # Prefix.
    r = s3.list_objects_v2(Bucket=bucket, Prefix="page/k024")
    assert [o["Key"] for o in r["Contents"]] == paged_keys[2400:2500]
    assert r["IsTruncated"] is False
    # ListObjects v1 with Marker.
    r = s3.list_objects(Bucket=bucket, Prefix="page/", Marker="page/k02490")
    assert [o["Key"] for o in r["Contents"]] == paged_keys[2491:]


ODD_KEYS = [
    "enc/with space.txt",
    "enc/plus+sign=eq&amp.txt",
    "enc/ünïcödé/日本語 ファイル.txt",
    "enc/percent%20literal~tilde",
    "enc/dir with space/x'quote\"(1).txt",
    "enc/a//double/slash",
]


def test_list_encoding_url(s3, bucket):
    for k in ODD_KEYS:
        put(s3, bucket, k, k.encode())
    want = sorted(ODD_KEYS, key=lambda k: k.encode())
    # Explicit EncodingType=url: botocore leaves the keys encoded.
    r = s3.list_objects_v2(Bucket=bucket, Prefix="enc/", EncodingType="url")
    assert r.get("EncodingType") == "url", r
    raw = [o["Key"] for o in r["Contents"]]
    assert [urllib.parse.unquote_plus(k) for k in raw] == want, raw
    for k in raw:
        assert " " not in k and all(ord(c) < 128 for c in k), k
    # Implicit (botocore asks for url encoding and decodes it itself).
    r = s3.list_objects_v2(Bucket=bucket, Prefix="enc/")
    assert [o["Key"] for o in r["Contents"]] == want
    # Delimiter with encoded prefixes.
    r = s3.list_objects_v2(Bucket=bucket, Prefix="enc/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["enc/a/", "enc/dir with space/", "enc/ünïcödé/"], r
    # Prefix and StartAfter with odd characters.
    r = s3.list_objects_v2(Bucket=bucket, Prefix="enc/ünïcödé/日本")
    assert [o["Key"] for o in r["Contents"]] == ["enc/ünïcödé/日本語 ファイル.txt"], r
    r = s3.list_objects_v2(Bucket=bucket, Prefix="enc/", StartAfter="enc/plus+sign=eq&amp.txt")
    assert [o["Key"] for o in r["Contents"]] == want[want.index("enc/plus+sign=eq&amp.txt") + 1 :]
    # Each key round-trips through GET.
    for k in ODD_KEYS:
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode(), k


# ---- copy, delete ----


def test_copy_object(s3, bucket):
    data = os.urandom(300 * 1024)
    src = "copy/src ü+.bin"
    r = put(s3, bucket, src, data, ContentType="text/x-src", Metadata={"origin": "src"})
    etag = r["ETag"]
    # COPY directive (default): metadata and content type follow.
    c = s3.copy_object(Bucket=bucket, Key="copy/dst1", CopySource={"Bucket": bucket, "Key": src})
    assert c["CopyObjectResult"]["ETag"] == etag, c
    g = s3.get_object(Bucket=bucket, Key="copy/dst1")
    assert sha256(g["Body"].read()) == sha256(data)
    assert g["ContentType"] == "text/x-src" and g["Metadata"] == {"origin": "src"}, g
    # REPLACE directive.
    s3.copy_object(
        Bucket=bucket,
        Key="copy/dst2",
        CopySource={"Bucket": bucket, "Key": src},
        MetadataDirective="REPLACE",
        Metadata={"new": "yes"},
        ContentType="application/json",
    )
    h = s3.head_object(Bucket=bucket, Key="copy/dst2")
    assert h["Metadata"] == {"new": "yes"} and h["ContentType"] == "application/json", h
    assert h["ETag"] == etag and h["ContentLength"] == len(data)
    # Copy onto itself with REPLACE updates metadata only.
    s3.copy_object(
        Bucket=bucket,
        Key=src,
        CopySource={"Bucket": bucket, "Key": src},
        MetadataDirective="REPLACE",
        Metadata={"origin": "updated"},
        ContentType="text/x-src",
    )
    h = s3.head_object(Bucket=bucket, Key=src)
    assert h["Metadata"] == {"origin": "updated"} and h["ETag"] == etag, h
    # CopySourceIfMatch: right ETag copies, wrong one → 412.
    s3.copy_object(Bucket=bucket, Key="copy/dst3", CopySource={"Bucket": bucket, "Key": src}, CopySourceIfMatch=etag)
    with pytest.raises(ClientError) as ei:
        s3.copy_object(
            Bucket=bucket,
            Key="copy/dst4",
            CopySource={"Bucket": bucket, "Key": src},
            CopySourceIfMatch='"00000000000000000000000000000000"',
        )
    assert err(ei) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="copy/dst4")
    assert err(ei)[1] == 404
    # Missing source.
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="copy/dst5", CopySource={"Bucket": bucket, "Key": "copy/none"})
    assert err(ei) == ("NoSuchKey", 404)


def test_delete_objects(s3, bucket):
    keys = ["del/%d" % i for i in range(8)]
    for k in keys:
        put(s3, bucket, k, b"x")
    r = s3.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:4]] + [{"Key": "del/missing"}]}
    )
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(keys[:4] + ["del/missing"]), r
    assert not r.get("Errors"), r
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[4:]], "Quiet": True})
    assert not r.get("Deleted") and not r.get("Errors"), r
    r = s3.list_objects_v2(Bucket=bucket, Prefix="del/")
    assert r["KeyCount"] == 0, r


# ---- multipart ----


def test_multipart_upload_file_50mib(s3, bucket, tmp_path):
    src = tmp_path / "big.bin"
    with open(src, "wb") as f:
        for _ in range(50):
            f.write(os.urandom(MiB))
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
    s3.upload_file(str(src), bucket, "mp/big.bin", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="mp/big.bin")
    assert h["ContentLength"] == 50 * MiB
    assert h["ETag"].endswith('-7"'), h["ETag"]  # ceil(50/8) parts
    dst = tmp_path / "big.out"
    s3.download_file(bucket, "mp/big.bin", str(dst), Config=cfg)
    assert file_sha256(dst) == file_sha256(src)
    # The full-object checksum boto3 asked for, if the server reports one.
    h = s3.head_object(Bucket=bucket, Key="mp/big.bin", ChecksumMode="ENABLED")
    if h.get("ChecksumType") == "FULL_OBJECT" and "ChecksumCRC32" in h:
        crc = 0
        with open(src, "rb") as f:
            for chunk in iter(lambda: f.read(MiB), b""):
                crc = zlib.crc32(chunk, crc)
        assert h["ChecksumCRC32"] == base64.b64encode(crc.to_bytes(4, "big")).decode(), h


def test_multipart_manual(s3, bucket):
    key = "mp/manual.bin"
    parts_data = {1: os.urandom(5 * MiB), 2: os.urandom(5 * MiB + 17), 3: os.urandom(MiB // 3)}
    up = s3.create_multipart_upload(
        Bucket=bucket, Key=key, ContentType="application/x-manual", Metadata={"kind": "manual"}
    )
    uid = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == key and uid
    etags = {}
    for n in (2, 1, 3):  # out of order
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=parts_data[n])
        assert r["ETag"] == md5_etag(parts_data[n]), (n, r)
        etags[n] = r["ETag"]
    # Re-uploading a part replaces it.
    parts_data[3] = os.urandom(MiB // 2)
    etags[3] = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=3, Body=parts_data[3])["ETag"]
    lp = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in lp["Parts"]] == [
        (n, len(parts_data[n]), etags[n]) for n in (1, 2, 3)
    ], lp["Parts"]
    # Paged list_parts.
    lp = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, MaxParts=2)
    assert [p["PartNumber"] for p in lp["Parts"]] == [1, 2] and lp["IsTruncated"] is True, lp
    lp = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, PartNumberMarker=lp["NextPartNumberMarker"])
    assert [p["PartNumber"] for p in lp["Parts"]] == [3], lp
    # Not visible before completion.
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert err(ei)[1] == 404
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2, 3)]},
    )
    want_etag = '"%s-3"' % hashlib.md5(b"".join(hashlib.md5(parts_data[n]).digest() for n in (1, 2, 3))).hexdigest()
    assert done["ETag"] == want_etag, done
    whole = b"".join(parts_data[n] for n in (1, 2, 3))
    g = s3.get_object(Bucket=bucket, Key=key)
    assert sha256(g["Body"].read()) == sha256(whole)
    assert g["ContentType"] == "application/x-manual" and g["Metadata"] == {"kind": "manual"}, g
    assert g["ETag"] == want_etag and g["ContentLength"] == len(whole)
    # Part ranges via PartNumber.
    g = s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
    assert sha256(g["Body"].read()) == sha256(parts_data[2])
    # Completing again / a too-small non-last part.
    up2 = s3.create_multipart_upload(Bucket=bucket, Key="mp/small-parts")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp/small-parts", UploadId=up2, PartNumber=1, Body=b"a" * 100)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp/small-parts", UploadId=up2, PartNumber=2, Body=b"b" * 100)["ETag"]
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key="mp/small-parts",
            UploadId=up2,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]},
        )
    assert err(ei) == ("EntityTooSmall", 400)
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key="mp/small-parts",
            UploadId=up2,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}]},
        )
    assert err(ei) == ("InvalidPart", 400)
    s3.abort_multipart_upload(Bucket=bucket, Key="mp/small-parts", UploadId=up2)


def test_multipart_full_object_checksum(s3, bucket):
    """ChecksumType FULL_OBJECT: the object's CRC32 is the CRC of its bytes
    (combined from the parts'), not a checksum of checksums; combinations S3
    does not allow are refused before anything is uploaded."""
    key = "mp/full-object.bin"
    parts_data = {1: os.urandom(5 * MiB + 3), 2: os.urandom(123_457)}
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    assert up.get("ChecksumType") == "FULL_OBJECT", up
    uid = up["UploadId"]
    etags = {}
    for n, data in parts_data.items():
        etags[n] = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=data, ChecksumAlgorithm="CRC32")["ETag"]
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2)]},
    )
    whole = parts_data[1] + parts_data[2]
    want = base64.b64encode(zlib.crc32(whole).to_bytes(4, "big")).decode()
    assert done.get("ChecksumType") == "FULL_OBJECT" and done.get("ChecksumCRC32") == want, done
    h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert h.get("ChecksumType") == "FULL_OBJECT" and h.get("ChecksumCRC32") == want, h
    for alg, typ in (("SHA256", "FULL_OBJECT"), ("CRC32", "NOT_A_TYPE")):
        with pytest.raises(ClientError) as ei:
            s3.create_multipart_upload(Bucket=bucket, Key="mp/refused", ChecksumAlgorithm=alg, ChecksumType=typ)
        assert err(ei) == ("InvalidRequest", 400), (alg, typ)
    assert not [u for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) if u["Key"] == "mp/refused"]


def test_abort_and_list_multipart_uploads(s3, bucket):
    a = s3.create_multipart_upload(Bucket=bucket, Key="mpu/a")["UploadId"]
    b = s3.create_multipart_upload(Bucket=bucket, Key="mpu/b")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="mpu/a", UploadId=a, PartNumber=1, Body=b"part one")
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="mpu/")
    got = sorted((u["Key"], u["UploadId"]) for u in r.get("Uploads", []))
    assert got == sorted([("mpu/a", a), ("mpu/b", b)]), r
    r = s3.abort_multipart_upload(Bucket=bucket, Key="mpu/a", UploadId=a)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="mpu/")
    assert [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])] == [("mpu/b", b)], r
    with pytest.raises(ClientError) as ei:
        s3.list_parts(Bucket=bucket, Key="mpu/a", UploadId=a)
    assert err(ei) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as ei:
        s3.upload_part(Bucket=bucket, Key="mpu/a", UploadId=a, PartNumber=2, Body=b"late")
    assert err(ei) == ("NoSuchUpload", 404)
    s3.abort_multipart_upload(Bucket=bucket, Key="mpu/b", UploadId=b)
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="mpu/")
    assert not r.get("Uploads"), r
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="mpu/a")
    assert err(ei)[1] == 404


# ---- presigned URLs ----


def test_presigned_get_put(s3, bucket):
    data = os.urandom(64 * 1024)
    put(s3, bucket, "pre/get me.bin", data)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/get me.bin"}, ExpiresIn=300)
    assert "X-Amz-Signature=" in url, url
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    assert r.content == data
    # Presigned PUT.
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre/put ü.bin"}, ExpiresIn=300)
    body = os.urandom(100 * 1024)
    r = HTTP.put(url, data=body, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    assert s3.get_object(Bucket=bucket, Key="pre/put ü.bin")["Body"].read() == body
    # Tampered signature, tampered key, tampered expiry → 403.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/get me.bin"}, ExpiresIn=300)
    parts = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(parts.query)
    sig = q["X-Amz-Signature"][0]
    q["X-Amz-Signature"] = [("0" if sig[0] != "0" else "1") + sig[1:]]
    bad = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(q, doseq=True)))
    r = HTTP.get(bad, timeout=60)
    assert r.status_code == 403 and "SignatureDoesNotMatch" in r.text, (r.status_code, r.text[:500])
    q["X-Amz-Signature"] = [sig]
    q["X-Amz-Expires"] = ["600"]
    bad = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(q, doseq=True)))
    r = HTTP.get(bad, timeout=60)
    assert r.status_code == 403, (r.status_code, r.text[:500])
    bad = url.replace("get%20me.bin", "get%20me.bim")
    assert bad != url
    r = HTTP.get(bad, timeout=60)
    assert r.status_code == 403, (r.status_code, r.text[:500])
    # Expired.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/get me.bin"}, ExpiresIn=1)
    time.sleep(2.2)
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 403 and "AccessDenied" in r.text, (r.status_code, r.text[:500])
    # An unsigned request to a private bucket.
    r = HTTP.get(ENDPOINT + "/" + bucket + "/pre/get%20me.bin", timeout=60)
    assert r.status_code == 403, (r.status_code, r.text[:500])


# ---- conditional and range GET ----


def test_conditional_get(s3, bucket):
    data = b"conditional body " * 10
    put(s3, bucket, "cond/obj", data)
    h = s3.head_object(Bucket=bucket, Key="cond/obj")
    etag, lm = h["ETag"], h["LastModified"]
    assert etag == md5_etag(data)
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="cond/obj", IfNoneMatch=etag)
    assert err(ei)[1] == 304 and err(ei)[0] == "304", ei.value.response
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="cond/obj", IfNoneMatch=etag)
    assert err(ei)[1] == 304
    assert s3.get_object(Bucket=bucket, Key="cond/obj", IfNoneMatch='"other"')["Body"].read() == data
    assert s3.get_object(Bucket=bucket, Key="cond/obj", IfMatch=etag)["Body"].read() == data
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="cond/obj", IfMatch='"00000000000000000000000000000000"')
    assert err(ei) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="cond/obj", IfModifiedSince=lm)
    assert err(ei)[1] == 304
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="cond/obj", IfModifiedSince=lm + datetime.timedelta(hours=1))
    assert err(ei)[1] == 304
    g = s3.get_object(Bucket=bucket, Key="cond/obj", IfModifiedSince=lm - datetime.timedelta(days=1))
    assert g["Body"].read() == data
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="cond/obj", IfUnmodifiedSince=lm - datetime.timedelta(days=1))
    assert err(ei) == ("PreconditionFailed", 412)
    g = s3.get_object(Bucket=bucket, Key="cond/obj", IfUnmodifiedSince=lm + datetime.timedelta(days=1))
    assert g["Body"].read() == data


def test_range_get(s3, bucket):
    data = bytes(range(100))
    put(s3, bucket, "range/obj", data)
    g = s3.get_object(Bucket=bucket, Key="range/obj", Range="bytes=10-19")
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert g["Body"].read() == data[10:20]
    assert g["ContentRange"] == "bytes 10-19/100" and g["ContentLength"] == 10, g
    g = s3.get_object(Bucket=bucket, Key="range/obj", Range="bytes=-7")
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert g["Body"].read() == data[-7:]
    assert g["ContentRange"] == "bytes 93-99/100", g
    g = s3.get_object(Bucket=bucket, Key="range/obj", Range="bytes=90-")
    assert g["Body"].read() == data[90:]
    g = s3.get_object(Bucket=bucket, Key="range/obj", Range="bytes=95-1000")
    assert g["Body"].read() == data[95:] and g["ContentRange"] == "bytes 95-99/100", g
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="range/obj", Range="bytes=200-300")
    assert err(ei) == ("InvalidRange", 416)


# ---- checksums ----


def test_checksums(s3, bucket):
    data = os.urandom(200 * 1024 + 3)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    sha = base64.b64encode(hashlib.sha256(data).digest()).decode()

    r = put(s3, bucket, "ck/crc32", data, ChecksumAlgorithm="CRC32")
    assert r.get("ChecksumCRC32") == crc, r
    g = s3.get_object(Bucket=bucket, Key="ck/crc32", ChecksumMode="ENABLED")
    assert g.get("ChecksumCRC32") == crc, g
    assert sha256(g["Body"].read()) == sha256(data)  # botocore also validates the checksum on read
    h = s3.head_object(Bucket=bucket, Key="ck/crc32", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32") == crc, h

    r = put(s3, bucket, "ck/sha256", data, ChecksumAlgorithm="SHA256")
    assert r.get("ChecksumSHA256") == sha, r
    g = s3.get_object(Bucket=bucket, Key="ck/sha256", ChecksumMode="ENABLED")
    assert g.get("ChecksumSHA256") == sha, g
    assert sha256(g["Body"].read()) == sha256(data)

    # Content-MD5.
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    put(s3, bucket, "ck/md5", data, ContentMD5=md5)
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="ck/md5bad", Body=data, ContentMD5=base64.b64encode(b"\0" * 16).decode())
    assert err(ei) == ("BadDigest", 400)


# Kept last: with -x a failure here does not hide the tests above.
@pytest.mark.parametrize("alg,nbytes", [("CRC32", 4), ("SHA256", 32)])
def test_wrong_checksum_refused(s3, bucket, alg, nbytes):
    """A wrong x-amz-checksum-* header is refused with BadDigest (what S3
    answers) and nothing is stored. botocore sends the correct payload hash
    in x-amz-content-sha256 here, so that header is not the one at fault."""
    data = os.urandom(10 * 1024)
    key = "ck/bad-" + alg
    c = make_client()
    sent = {}

    def capture(request, **_):
        sent.update({k: v for k, v in request.headers.items() if k.lower().startswith("x-amz-c")})

    c.meta.events.register("before-send.s3.PutObject", capture)
    with pytest.raises(ClientError) as ei:
        c.put_object(Bucket=bucket, Key=key, Body=data, **{"Checksum" + alg: base64.b64encode(b"\0" * nbytes).decode()})
    with pytest.raises(ClientError) as ei2:
        s3.head_object(Bucket=bucket, Key=key)
    assert err(ei2)[1] == 404
    evidence = {
        "sent headers": sent,
        "sha256 of the body sent": sha256(data),
        "answer": ei.value.response["Error"],
        "request id": ei.value.response["ResponseMetadata"].get("RequestId"),
    }
    if err(ei) != ("BadDigest", 400):
        pytest.fail("want BadDigest 400, got %s %s\n%s" % (*err(ei), pprint.pformat(evidence, width=100)), pytrace=False)
