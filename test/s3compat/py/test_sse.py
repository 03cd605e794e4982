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


def test_sse_c_multipart_refused(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=bucket, Key="mp-c", **ssec(SSEC_KEY))
    assert err(e) == ("NotImplemented", 501)
