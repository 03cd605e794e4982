"""Browser POST policy uploads (S3's PostObject) against a real `coffer serve`:
forms made by boto3's generate_presigned_post (SigV4, and the client's
default signature at a custom endpoint), and SigV2 forms made by hand as
boto2 made them (AWSAccessKeyId, policy, signature = base64 HMAC-SHA1 of the
policy), posted with requests as a browser posts a form.

Run by post_test.go (TestClients/post); environment: s3env.py.
"""

import base64
import datetime
import hashlib
import hmac
import json
import os
import urllib.parse
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from s3env import ACCESS_KEY, BUCKET, ENDPOINT, HTTP, SECRET_KEY, client


@pytest.fixture(scope="session")
def s3():
    return client(signature_version="s3v4")


@pytest.fixture(scope="session")
def bucket(s3):
    s3.create_bucket(Bucket=BUCKET)
    return BUCKET


def post(form, data, filename="upload.bin", extra=None, redirects=True):
    fields = dict(form["fields"])
    fields.update(extra or {})
    # The file last, as a browser sends it (requests puts files after data).
    return HTTP.post(form["url"], data=fields, files={"file": (filename, data)}, allow_redirects=redirects, timeout=60)


def error(r):
    root = ET.fromstring(r.content)
    return root.findtext("Code"), root.findtext("Message")


def absent(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    return e.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_presigned_post_sigv4(s3, bucket):
    data = os.urandom(3000)
    form = s3.generate_presigned_post(
        bucket, "post/v4.bin",
        Fields={"Content-Type": "image/png", "x-amz-meta-color": "red"},
        Conditions=[{"Content-Type": "image/png"}, {"x-amz-meta-color": "red"}, ["content-length-range", 1, 4096]],
        ExpiresIn=600,
    )
    assert "x-amz-signature" in form["fields"] and form["fields"]["x-amz-algorithm"] == "AWS4-HMAC-SHA256"
    r = post(form, data)
    assert r.status_code == 204, r.text
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert r.headers["Location"].endswith("/%s/post/v4.bin" % bucket)
    got = s3.get_object(Bucket=bucket, Key="post/v4.bin")
    assert got["Body"].read() == data
    assert got["ContentType"] == "image/png"
    assert got["Metadata"] == {"color": "red"}


def test_presigned_post_default_signature(bucket):
    # What a user writes: no Config. Whatever signature boto3 picks for a
    # custom endpoint, the form must work.
    s3 = client()
    form = s3.generate_presigned_post(bucket, "post/default.txt", ExpiresIn=600)
    r = post(form, b"default signature")
    assert r.status_code == 204, r.text
    assert client(signature_version="s3v4").get_object(Bucket=bucket, Key="post/default.txt")["Body"].read() == b"default signature"


def test_filename_key_and_201(s3, bucket):
    form = s3.generate_presigned_post(
        bucket, "post/files/${filename}",
        Fields={"success_action_status": "201"},
        Conditions=[{"success_action_status": "201"}],
        ExpiresIn=600,
    )
    r = post(form, b"photo bytes", filename="photo one.jpg")
    assert r.status_code == 201, r.text
    root = ET.fromstring(r.content)
    assert root.tag == "PostResponse"
    assert root.findtext("Bucket") == bucket and root.findtext("Key") == "post/files/photo one.jpg"
    assert root.findtext("ETag") == '"%s"' % hashlib.md5(b"photo bytes").hexdigest()
    assert s3.get_object(Bucket=bucket, Key="post/files/photo one.jpg")["Body"].read() == b"photo bytes"


def test_redirect(s3, bucket):
    to = "http://app.invalid/done"
    form = s3.generate_presigned_post(
        bucket, "post/redirect.txt",
        Fields={"success_action_redirect": to},
        Conditions=[{"success_action_redirect": to}],
        ExpiresIn=600,
    )
    r = post(form, b"r", redirects=False)
    assert r.status_code == 303, r.text
    u = urllib.parse.urlsplit(r.headers["Location"])
    q = urllib.parse.parse_qs(u.query)
    assert u.netloc == "app.invalid" and q["bucket"] == [bucket] and q["key"] == ["post/redirect.txt"]
    assert q["etag"] == ['"%s"' % hashlib.md5(b"r").hexdigest()]


def test_too_large_stores_nothing(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/big.bin", Conditions=[["content-length-range", 1, 1024]], ExpiresIn=600)
    r = post(form, os.urandom(256 * 1024))
    assert r.status_code == 400, r.text
    assert error(r)[0] == "EntityTooLarge"
    assert absent(s3, bucket, "post/big.bin")


def test_too_small_stores_nothing(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/small.bin", Conditions=[["content-length-range", 100, 1024]], ExpiresIn=600)
    r = post(form, b"tiny")
    assert r.status_code == 400 and error(r)[0] == "EntityTooSmall", r.text
    assert absent(s3, bucket, "post/small.bin")


def test_expired_policy(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/expired.txt", ExpiresIn=-60)
    r = post(form, b"late")
    assert r.status_code == 403, r.text
    assert error(r) == ("AccessDenied", "Invalid according to Policy: Policy expired.")
    assert absent(s3, bucket, "post/expired.txt")


def test_extra_field(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/extra.txt", ExpiresIn=600)
    r = post(form, b"extra", extra={"x-amz-meta-sneaky": "1"})
    assert r.status_code == 403, r.text
    assert error(r) == ("AccessDenied", "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
    assert absent(s3, bucket, "post/extra.txt")


def test_condition_failed(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/${filename}", ExpiresIn=600)
    form["fields"]["key"] = "elsewhere/x.txt"
    r = post(form, b"x")
    assert r.status_code == 403, r.text
    code, msg = error(r)
    assert code == "AccessDenied" and msg.startswith("Invalid according to Policy: Policy Condition failed: ")
    assert absent(s3, bucket, "elsewhere/x.txt")


def test_wrong_signature(s3, bucket):
    form = s3.generate_presigned_post(bucket, "post/forged.txt", ExpiresIn=600)
    form["fields"]["x-amz-signature"] = "0" * 64
    r = post(form, b"forged")
    assert r.status_code == 403 and error(r)[0] == "SignatureDoesNotMatch", r.text
    assert absent(s3, bucket, "post/forged.txt")


def sigv2_form(bucket, key, conditions, expires=600):
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=expires)
    doc = {"expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ"), "conditions": conditions}
    policy = base64.b64encode(json.dumps(doc).encode())
    sig = base64.b64encode(hmac.new(SECRET_KEY.encode(), policy, hashlib.sha1).digest())
    return {
        "url": "%s/%s" % (ENDPOINT, bucket),
        "fields": {"key": key, "AWSAccessKeyId": ACCESS_KEY, "policy": policy.decode(), "signature": sig.decode()},
    }


def test_sigv2(s3, bucket):
    form = sigv2_form(bucket, "post/v2.txt", [{"bucket": bucket}, ["starts-with", "$key", "post/"],
                                               {"acl": "private"}, ["content-length-range", 0, 1024]])
    form["fields"]["acl"] = "private"
    r = post(form, b"sigv2 form")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="post/v2.txt")["Body"].read() == b"sigv2 form"

    bad = sigv2_form(bucket, "post/v2-bad.txt", [{"bucket": bucket}, ["starts-with", "$key", "post/"]])
    bad["fields"]["signature"] = base64.b64encode(b"\0" * 20).decode()
    r = post(bad, b"nope")
    assert r.status_code == 403 and error(r)[0] == "SignatureDoesNotMatch", r.text
    assert absent(s3, bucket, "post/v2-bad.txt")


def test_anonymous_refused(s3, bucket):
    r = HTTP.post("%s/%s" % (ENDPOINT, bucket), data={"key": "post/anon.txt"}, files={"file": ("a", b"anon")}, timeout=60)
    assert r.status_code == 403 and error(r)[0] == "AccessDenied", r.text
    assert absent(s3, bucket, "post/anon.txt")
