"""Tiny boto3 CLI for the cross-API checks in crossapi_test.go.

  xapi.py get BUCKET KEY OUTFILE
  xapi.py put BUCKET KEY INFILE CONTENT-TYPE
  xapi.py upload BUCKET KEY INFILE      (multipart upload_file, 5 MiB parts)

Endpoint and keys come from COFFER_S3_ENDPOINT, COFFER_S3_ACCESS_KEY and
COFFER_S3_SECRET_KEY.
"""

import os
import sys

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config


def main(argv):
    s3 = boto3.client(
        "s3",
        endpoint_url=os.environ["COFFER_S3_ENDPOINT"],
        aws_access_key_id=os.environ["COFFER_S3_ACCESS_KEY"],
        aws_secret_access_key=os.environ["COFFER_S3_SECRET_KEY"],
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2, "mode": "standard"}),
    )
    op, bucket, key, path = argv[1:5]
    if op == "get":
        r = s3.get_object(Bucket=bucket, Key=key)
        with open(path, "wb") as f:
            for chunk in r["Body"].iter_chunks(1 << 20):
                f.write(chunk)
        print(r["ETag"], r["ContentLength"], r["ContentType"])
    elif op == "put":
        with open(path, "rb") as f:
            r = s3.put_object(Bucket=bucket, Key=key, Body=f, ContentType=argv[5])
        print(r["ETag"])
    elif op == "upload":
        mib = 1 << 20
        s3.upload_file(path, bucket, key, Config=TransferConfig(multipart_threshold=5 * mib, multipart_chunksize=5 * mib))
        print(s3.head_object(Bucket=bucket, Key=key)["ETag"])
    else:
        sys.exit("unknown op " + op)


if __name__ == "__main__":
    main(sys.argv)
