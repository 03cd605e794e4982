"""boto3 server-side encryption against a `coffer serve --encryption on`.

Run by sse_test.go (TestSSE) with the COFFER_S3_* variables of
test_boto3.py and COFFER_KMS_KEY, a key id the server's key provider
knows. Checks what AWS S3 answers: the SSE response headers on PUT, GET,
HEAD, copy and multipart; exact bytes and ranges; the errors for an
unknown KMS key, SSE-C with a missing or wrong key, and what Coffer does
not implement (DSSE).
"""

import os

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from test_boto3 import BUCKET, MiB, make_client, err

KMS_KEY = os.environ["COFFER_KMS_KEY"]
BODY = os.urandom(300_000)


@pytest.fixture(scope="module")
def s3():
    return make_client()


@pytest.fixture(scope="module")
def bucket(s3):
    name = BUCKET + "-sse"
    s3.create_bucket(Bucket=name)
    return name


def absent(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert err(e)[1] == 404, f"{key} exists after a refused request"


def test_sse_s3(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="sse-s3", Body=BODY, ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256", r
    h = s3.head_object(Bucket=bucket, Key="sse-s3")
    assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == len(BODY), h
    g = s3.get_object(Bucket=bucket, Key="sse-s3")
    assert g["ServerSideEncryption"] == "AES256"
    assert g["Body"].read() == BODY
    g = s3.get_object(Bucket=bucket, Key="sse-s3", Range="bytes=65530-65545")
    assert g["Body"].read() == BODY[65530:65546]


def test_default_encryption(s3, bucket):
    # --encryption on: every object is encrypted, asked or not.
    r = s3.put_object(Bucket=bucket, Key="default", Body=b"small object")
    assert r["ServerSideEncryption"] == "AES256", r
    assert s3.get_object(Bucket=bucket, Key="default")["Body"].read() == b"small object"


def test_sse_kms(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="sse-kms", Body=BODY, ServerSideEncryption="aws:kms", SSEKMSKeyId=KMS_KEY)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KMS_KEY, r
    assert r.get("BucketKeyEnabled") is True, r
    h = s3.head_object(Bucket=bucket, Key="sse-kms")
    assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == KMS_KEY, h
    assert s3.get_object(Bucket=bucket, Key="sse-kms")["Body"].read() == BODY
    g = s3.get_object(Bucket=bucket, Key="sse-kms", Range="bytes=-100")
    assert g["Body"].read() == BODY[-100:]


def test_sse_kms_unknown_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad-kms", Body=b"x", ServerSideEncryption="aws:kms", SSEKMSKeyId="no-such-key")
    assert err(e) == ("KMS.NotFoundException", 400)
    absent(s3, bucket, "bad-kms")


def test_copy_changes_encryption(s3, bucket):
    s3.put_object(Bucket=bucket, Key="copy-src", Body=BODY, ServerSideEncryption="AES256")
    r = s3.copy_object(Bucket=bucket, Key="copy-dst", CopySource={"Bucket": bucket, "Key": "copy-src"},
                       ServerSideEncryption="aws:kms", SSEKMSKeyId=KMS_KEY)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KMS_KEY, r
    assert s3.get_object(Bucket=bucket, Key="copy-dst")["Body"].read() == BODY


def test_multipart_encrypted(s3, bucket, tmp_path):
    data = os.urandom(12 * MiB + 123)
    src = tmp_path / "src"
    src.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    s3.upload_file(str(src), bucket, "mp", Config=cfg, ExtraArgs={"ServerSideEncryption": "AES256"})
    h = s3.head_object(Bucket=bucket, Key="mp")
    assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == len(data), h
    dst = tmp_path / "dst"
    s3.download_file(bucket, "mp", str(dst), Config=cfg)
    assert dst.read_bytes() == data
    g = s3.get_object(Bucket=bucket, Key="mp", Range=f"bytes={5 * MiB - 5}-{5 * MiB + 4}")
    assert g["Body"].read() == data[5 * MiB - 5:5 * MiB + 5]


@pytest.mark.parametrize("kw", [
    {"ServerSideEncryption": "aws:kms:dsse"},
], ids=["dsse"])
def test_not_implemented(s3, bucket, kw):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="refused", Body=b"x", **kw)
    assert err(e) == ("NotImplemented", 501)
    absent(s3, bucket, "refused")


def test_bucket_encryption(s3):
    name = BUCKET + "-sse-default"
    s3.create_bucket(Bucket=name)
    # --encryption on: every bucket's default is SSE-S3 (as AWS answers).
    c = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]
    assert c["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256", c
    s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": [{
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KMS_KEY},
        "BucketKeyEnabled": True}]})
    c = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]
    d = c["Rules"][0]["ApplyServerSideEncryptionByDefault"]
    assert d["SSEAlgorithm"] == "aws:kms" and d["KMSMasterKeyID"] == KMS_KEY, c
    r = s3.put_object(Bucket=name, Key="k", Body=b"by the bucket default")
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KMS_KEY, r
    # A request's own choice wins over the bucket's.
    r = s3.put_object(Bucket=name, Key="own", Body=b"x", ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256", r
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": [{
            "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "no-such-key"}}]})
    assert err(e) == ("KMS.NotFoundException", 400)
    s3.delete_bucket_encryption(Bucket=name)
    c = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]
    assert c["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256", c
    r = s3.put_object(Bucket=name, Key="k2", Body=b"x")
    assert r["ServerSideEncryption"] == "AES256", r
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == b"by the bucket default"


SSEC_KEY = os.urandom(32)
OTHER_KEY = os.urandom(32)


def ssec(key):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def test_sse_c(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="sse-c", Body=BODY, **ssec(SSEC_KEY))
    assert r["SSECustomerAlgorithm"] == "AES256" and r["SSECustomerKeyMD5"], r
    assert "ServerSideEncryption" not in r, r
    g = s3.get_object(Bucket=bucket, Key="sse-c", **ssec(SSEC_KEY))
    assert g["SSECustomerAlgorithm"] == "AES256" and g["SSECustomerKeyMD5"] == r["SSECustomerKeyMD5"]
    assert g["Body"].read() == BODY
    g = s3.get_object(Bucket=bucket, Key="sse-c", Range="bytes=100000-100099", **ssec(SSEC_KEY))
    assert g["Body"].read() == BODY[100000:100100]
    h = s3.head_object(Bucket=bucket, Key="sse-c", **ssec(SSEC_KEY))
    assert h["ContentLength"] == len(BODY) and h["SSECustomerAlgorithm"] == "AES256", h


def test_sse_c_missing_or_wrong_key(s3, bucket):
    s3.put_object(Bucket=bucket, Key="sse-c-2", Body=BODY, **ssec(SSEC_KEY))
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="sse-c-2")
    assert err(e) == ("InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="sse-c-2")
    assert err(e)[1] == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="sse-c-2", **ssec(OTHER_KEY))
    assert err(e) == ("AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="sse-c-2", **ssec(OTHER_KEY))
    assert err(e)[1] == 403
    # A customer key for an object stored without one.
    s3.put_object(Bucket=bucket, Key="not-sse-c", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="not-sse-c", **ssec(SSEC_KEY))
    assert err(e) == ("InvalidRequest", 400)


def test_sse_c_copy(s3, bucket):
    s3.put_object(Bucket=bucket, Key="sse-c-src", Body=BODY, **ssec(SSEC_KEY))
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="sse-c-dst", CopySource={"Bucket": bucket, "Key": "sse-c-src"})
    assert err(e) == ("InvalidRequest", 400)
    absent(s3, bucket, "sse-c-dst")
    # Source key given; the copy is stored SSE-S3, then SSE-C under another key.
    r = s3.copy_object(Bucket=bucket, Key="sse-c-dst", CopySource={"Bucket": bucket, "Key": "sse-c-src"},
                       CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=SSEC_KEY,
                       ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256", r
    assert s3.get_object(Bucket=bucket, Key="sse-c-dst")["Body"].read() == BODY
    r = s3.copy_object(Bucket=bucket, Key="sse-c-dst2", CopySource={"Bucket": bucket, "Key": "sse-c-dst"}, **ssec(OTHER_KEY))
    assert r["SSECustomerAlgorithm"] == "AES256", r
    assert s3.get_object(Bucket=bucket, Key="sse-c-dst2", **ssec(OTHER_KEY))["Body"].read() == BODY


def test_multipart_dsse_refused(s3, bucket):
    # What stays refused on multipart uploads: DSSE, encryption contexts.
    for extra in ({"ServerSideEncryption": "aws:kms:dsse"},
                  {"ServerSideEncryption": "aws:kms", "SSEKMSEncryptionContext": "e30="}):
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket=bucket, Key="mp-refused", **extra)
        assert err(e) == ("NotImplemented", 501), extra
    ups = s3.list_multipart_uploads(Bucket=bucket, Prefix="mp-refused").get("Uploads", [])
    assert ups == [], ups


MP_DATA = os.urandom(11 * MiB + 77)
MP_CFG = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)


def test_multipart_sse_kms(s3, bucket, tmp_path):
    src = tmp_path / "src"
    src.write_bytes(MP_DATA)
    s3.upload_file(str(src), bucket, "mp-kms", Config=MP_CFG,
                   ExtraArgs={"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": KMS_KEY})
    for kw in ({}, {"PartNumber": 2}):
        h = s3.head_object(Bucket=bucket, Key="mp-kms", **kw)
        assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == KMS_KEY, h
    assert h["ContentLength"] == 5 * MiB and h["PartsCount"] == 3, h
    dst = tmp_path / "dst"
    s3.download_file(bucket, "mp-kms", str(dst), Config=MP_CFG)
    assert dst.read_bytes() == MP_DATA
    g = s3.get_object(Bucket=bucket, Key="mp-kms", Range=f"bytes={10 * MiB - 3}-{10 * MiB + 2}")
    assert g["Body"].read() == MP_DATA[10 * MiB - 3:10 * MiB + 3]
    # An unknown key: refused at creation, no upload left.
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=bucket, Key="mp-bad-kms", ServerSideEncryption="aws:kms", SSEKMSKeyId="no-such-key")
    assert err(e) == ("KMS.NotFoundException", 400)
    assert s3.list_multipart_uploads(Bucket=bucket, Prefix="mp-bad-kms").get("Uploads", []) == []
    # Explicit calls: every response names the encryption.
    c = s3.create_multipart_upload(Bucket=bucket, Key="mp-kms2", ServerSideEncryption="aws:kms", SSEKMSKeyId=KMS_KEY)
    assert c["ServerSideEncryption"] == "aws:kms" and c["SSEKMSKeyId"] == KMS_KEY, c
    p = s3.upload_part(Bucket=bucket, Key="mp-kms2", UploadId=c["UploadId"], PartNumber=1, Body=b"one part")
    assert p["ServerSideEncryption"] == "aws:kms" and p["SSEKMSKeyId"] == KMS_KEY, p
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mp-kms2", UploadId=c["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KMS_KEY, r
    assert s3.get_object(Bucket=bucket, Key="mp-kms2")["Body"].read() == b"one part"


def test_multipart_sse_c(s3, bucket, tmp_path):
    # s3transfer: create, parts, complete and the ranged GETs of the
    # download all carry the key.
    src = tmp_path / "src"
    src.write_bytes(MP_DATA)
    s3.upload_file(str(src), bucket, "mp-c", Config=MP_CFG, ExtraArgs=ssec(SSEC_KEY))
    dst = tmp_path / "dst"
    s3.download_file(bucket, "mp-c", str(dst), Config=MP_CFG, ExtraArgs=ssec(SSEC_KEY))
    assert dst.read_bytes() == MP_DATA
    h = s3.head_object(Bucket=bucket, Key="mp-c", PartNumber=3, **ssec(SSEC_KEY))
    assert h["SSECustomerAlgorithm"] == "AES256" and h["ContentLength"] == len(MP_DATA) - 10 * MiB, h
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="mp-c")
    assert err(e) == ("InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="mp-c", **ssec(OTHER_KEY))
    assert err(e) == ("AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="mp-c", PartNumber=1)
    assert err(e)[1] == 400

    # Explicit calls: a part without the key, or with another, is refused.
    c = s3.create_multipart_upload(Bucket=bucket, Key="mp-c2", **ssec(SSEC_KEY))
    assert c["SSECustomerAlgorithm"] == "AES256" and c["SSECustomerKeyMD5"], c
    uid = c["UploadId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp-c2", UploadId=uid, PartNumber=1, Body=b"x")
    assert err(e) == ("InvalidRequest", 400)
    assert "Subsequent part requests must include the appropriate encryption parameters" in str(e.value)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp-c2", UploadId=uid, PartNumber=1, Body=b"x", **ssec(OTHER_KEY))
    assert err(e) == ("InvalidRequest", 400)
    assert "did not match the ones used originally" in str(e.value)
    assert s3.list_parts(Bucket=bucket, Key="mp-c2", UploadId=uid).get("Parts", []) == []
    p1 = s3.upload_part(Bucket=bucket, Key="mp-c2", UploadId=uid, PartNumber=1, Body=MP_DATA[:5 * MiB], **ssec(SSEC_KEY))
    assert p1["SSECustomerAlgorithm"] == "AES256" and p1["SSECustomerKeyMD5"] == c["SSECustomerKeyMD5"], p1
    p2 = s3.upload_part(Bucket=bucket, Key="mp-c2", UploadId=uid, PartNumber=2, Body=b"tail", **ssec(SSEC_KEY))
    parts = {"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]}
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp-c2", UploadId=uid, MultipartUpload=parts, **ssec(OTHER_KEY))
    assert err(e) == ("InvalidRequest", 400)
    s3.complete_multipart_upload(Bucket=bucket, Key="mp-c2", UploadId=uid, MultipartUpload=parts)
    g = s3.get_object(Bucket=bucket, Key="mp-c2", Range=f"bytes={5 * MiB - 2}-", **ssec(SSEC_KEY))
    assert g["Body"].read() == MP_DATA[5 * MiB - 2:5 * MiB] + b"tail"

    # A customer key for an upload started without one.
    c = s3.create_multipart_upload(Bucket=bucket, Key="mp-plain", ServerSideEncryption="AES256")
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp-plain", UploadId=c["UploadId"], PartNumber=1, Body=b"x", **ssec(SSEC_KEY))
    assert err(e) == ("InvalidRequest", 400)
    s3.abort_multipart_upload(Bucket=bucket, Key="mp-plain", UploadId=c["UploadId"])


def test_upload_part_copy_across_modes(s3, bucket):
    # Unencrypted with --encryption on is not possible: the "plain" source
    # is the server's default (SSE-S3), copied into an SSE-C upload.
    s3.put_object(Bucket=bucket, Key="upc-src", Body=BODY)
    c = s3.create_multipart_upload(Bucket=bucket, Key="upc-c", **ssec(SSEC_KEY))
    with pytest.raises(ClientError) as e:  # the destination's key is missing
        s3.upload_part_copy(Bucket=bucket, Key="upc-c", UploadId=c["UploadId"], PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "upc-src"})
    assert err(e) == ("InvalidRequest", 400)
    p = s3.upload_part_copy(Bucket=bucket, Key="upc-c", UploadId=c["UploadId"], PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "upc-src"}, **ssec(SSEC_KEY))
    assert p["SSECustomerAlgorithm"] == "AES256", p
    s3.complete_multipart_upload(Bucket=bucket, Key="upc-c", UploadId=c["UploadId"], **ssec(SSEC_KEY),
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="upc-c", **ssec(SSEC_KEY))["Body"].read() == BODY

    # SSE-C source into an SSE-KMS upload: the source's key is needed.
    c = s3.create_multipart_upload(Bucket=bucket, Key="upc-kms", ServerSideEncryption="aws:kms", SSEKMSKeyId=KMS_KEY)
    src = {"Bucket": bucket, "Key": "upc-c"}
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="upc-kms", UploadId=c["UploadId"], PartNumber=1, CopySource=src)
    assert err(e) == ("InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="upc-kms", UploadId=c["UploadId"], PartNumber=1, CopySource=src,
                            CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=OTHER_KEY)
    assert err(e) == ("AccessDenied", 403)
    p = s3.upload_part_copy(Bucket=bucket, Key="upc-kms", UploadId=c["UploadId"], PartNumber=1, CopySource=src,
                            CopySourceRange="bytes=1000-199999",
                            CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=SSEC_KEY)
    assert p["ServerSideEncryption"] == "aws:kms" and p["SSEKMSKeyId"] == KMS_KEY, p
    r = s3.complete_multipart_upload(Bucket=bucket, Key="upc-kms", UploadId=c["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["CopyPartResult"]["ETag"]}]})
    assert r["ServerSideEncryption"] == "aws:kms", r
    g = s3.get_object(Bucket=bucket, Key="upc-kms")
    assert g["ServerSideEncryption"] == "aws:kms" and g["Body"].read() == BODY[1000:200000]
