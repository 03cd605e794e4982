"""boto3 with its defaults (no signature_version configured) against a real
`coffer serve`: against a custom endpoint, generate_presigned_url signs with
AWS Signature Version 2 (AWSAccessKeyId, Signature, Expires), and the URLs
are used with plain HTTP, as a browser or curl would. Also boto3 with
signature_version "s3" (SigV2 Authorization headers) for a whole object
life cycle.

Run by sigv2_test.go (TestClients/sigv2); environment: s3env.py.
"""

import io
import os
import time
import urllib.parse

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from s3env import ACCESS_KEY, BUCKET, ENDPOINT, HTTP, SECRET_KEY, client


@pytest.fixture(scope="session")
def s3():
    # What a user writes: no Config, so botocore's defaults apply.
    return client()


@pytest.fixture(scope="session")
def bucket(s3):
    s3.create_bucket(Bucket=BUCKET)
    return BUCKET


def is_v2(url):
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    return "AWSAccessKeyId" in q and "Signature" in q and "Expires" in q and not any(k.startswith("X-Amz-") for k in q)


def test_default_presigned_get(s3, bucket):
    data = os.urandom(300 * 1024)
    key = "pre/get me ü+€ (1).bin"
    s3.put_object(Bucket=bucket, Key=key, Body=data)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key})
    assert is_v2(url), url
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 200, (url, r.status_code, r.text[:500])
    assert r.content == data
    # A range and a HEAD through the same URL (headers are not signed).
    r = HTTP.get(url, headers={"Range": "bytes=10-19"}, timeout=60)
    assert r.status_code == 206 and r.content == data[10:20], (r.status_code, r.text[:500])
    url = s3.generate_presigned_url("head_object", Params={"Bucket": bucket, "Key": key})
    r = HTTP.head(url, timeout=60)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(data), (r.status_code, r.headers)


def test_default_presigned_put(s3, bucket):
    body = os.urandom(200 * 1024)
    key = "pre/put ü.bin"
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key})
    assert is_v2(url), url
    r = HTTP.put(url, data=body, timeout=60)
    assert r.status_code == 200, (url, r.status_code, r.text[:500])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body


def test_default_presigned_put_with_type_and_metadata(s3, bucket):
    # botocore puts content-type and x-amz-meta-* into the query string: they
    # are signed and must take effect whether or not the uploader also sends
    # them as headers.
    key = "pre/typed.txt"
    params = {"Bucket": bucket, "Key": key, "ContentType": "text/plain", "Metadata": {"origin": "presigned"}}
    url = s3.generate_presigned_url("put_object", Params=params)
    assert is_v2(url) and "x-amz-meta-origin=presigned" in url, url
    r = HTTP.put(url, data=b"typed", timeout=60)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    h = s3.head_object(Bucket=bucket, Key=key)
    assert h["ContentType"] == "text/plain" and h["Metadata"] == {"origin": "presigned"}, h
    r = HTTP.put(url, data=b"typed", headers={"Content-Type": "text/plain"}, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    # Another type than the signed one is refused and changes nothing.
    r = HTTP.put(url, data=b"other", headers={"Content-Type": "text/html"}, timeout=60)
    assert r.status_code == 403 and "SignatureDoesNotMatch" in r.text, (r.status_code, r.text[:500])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"typed"


def test_default_presigned_get_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre/override", Body=b"x")
    params = {
        "Bucket": bucket,
        "Key": "pre/override",
        "ResponseContentType": "text/x-override; charset=utf-8",
        "ResponseContentDisposition": 'attachment; filename="a b.txt"',
    }
    url = s3.generate_presigned_url("get_object", Params=params)
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    assert r.headers["Content-Type"] == params["ResponseContentType"], r.headers
    assert r.headers["Content-Disposition"] == params["ResponseContentDisposition"], r.headers


def test_default_presigned_tampered_and_expired(s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre/t", Body=b"t")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/t"}, ExpiresIn=300)
    parts = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(parts.query)

    def with_query(**changes):
        qq = dict(q)
        qq.update({k: [v] for k, v in changes.items()})
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(qq, doseq=True)))

    sig = q["Signature"][0]
    bad_sig = ("A" if sig[0] != "A" else "B") + sig[1:]
    for bad, code in [
        (with_query(Signature=bad_sig), "SignatureDoesNotMatch"),
        (with_query(Expires=str(int(q["Expires"][0]) + 60)), "SignatureDoesNotMatch"),
        (with_query(AWSAccessKeyId="AKIDUNKNOWN"), "InvalidAccessKeyId"),
        (with_query(**{"response-content-type": "text/html"}), "SignatureDoesNotMatch"),
        (url.replace("/pre/t?", "/pre/u?"), "SignatureDoesNotMatch"),
    ]:
        r = HTTP.get(bad, timeout=60)
        assert r.status_code == 403 and code in r.text, (bad, r.status_code, r.text[:500])
    r = HTTP.put(url, data=b"overwrite", timeout=60)
    assert r.status_code == 403 and "SignatureDoesNotMatch" in r.text, (r.status_code, r.text[:500])
    assert s3.get_object(Bucket=bucket, Key="pre/t")["Body"].read() == b"t"

    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/t"}, ExpiresIn=1)
    time.sleep(2.2)
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 403 and "AccessDenied" in r.text and "expired" in r.text, (r.status_code, r.text[:500])
    # More than seven days ahead is refused, as for SigV4.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/t"}, ExpiresIn=8 * 24 * 3600)
    r = HTTP.get(url, timeout=60)
    assert r.status_code == 403 and "AccessDenied" in r.text, (r.status_code, r.text[:500])


def test_header_signature_v2(bucket):
    # signature_version "s3" is botocore's HmacV1Auth: every request carries
    # "Authorization: AWS key:signature".
    v2 = boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(signature_version="s3", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    seen = []
    v2.meta.events.register("before-send", lambda request, **kw: seen.append(request.headers.get("Authorization")))
    data = os.urandom(100 * 1024)
    key = "v2/obj ü+.bin"
    v2.put_object(Bucket=bucket, Key=key, Body=data, ContentType="application/x-v2", Metadata={"k": "v"})
    h = v2.head_object(Bucket=bucket, Key=key)
    assert h["ContentLength"] == len(data) and h["ContentType"] == "application/x-v2" and h["Metadata"] == {"k": "v"}, h
    assert v2.get_object(Bucket=bucket, Key=key)["Body"].read() == data
    assert v2.get_object(Bucket=bucket, Key=key, Range="bytes=0-4")["Body"].read() == data[:5]
    keys = [o["Key"] for o in v2.list_objects_v2(Bucket=bucket, Prefix="v2/")["Contents"]]
    assert keys == [key], keys
    v2.head_bucket(Bucket=bucket)
    v2.copy_object(Bucket=bucket, Key="v2/copy", CopySource={"Bucket": bucket, "Key": key})
    # Multipart through the transfer manager.
    big = os.urandom(12 * 1024 * 1024)
    cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
    v2.upload_fileobj(io.BytesIO(big), bucket, "v2/big", Config=cfg)
    assert v2.get_object(Bucket=bucket, Key="v2/big")["Body"].read() == big
    r = v2.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "v2/copy"}, {"Key": "v2/big"}]})
    assert len(r.get("Deleted", [])) == 2, r
    v2.delete_object(Bucket=bucket, Key=key)
    with pytest.raises(ClientError) as ei:
        v2.head_object(Bucket=bucket, Key=key)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert seen and all(a and a.startswith(b"AWS " if isinstance(a, bytes) else "AWS ") for a in seen), seen[:3]

    bad = boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY + "x",
        region_name="us-east-1",
        config=Config(signature_version="s3", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    with pytest.raises(ClientError) as ei:
        bad.put_object(Bucket=bucket, Key="v2/denied", Body=b"x")
    assert ei.value.response["Error"]["Code"] == "SignatureDoesNotMatch", ei.value.response
    with pytest.raises(ClientError):
        v2.head_object(Bucket=bucket, Key="v2/denied")
