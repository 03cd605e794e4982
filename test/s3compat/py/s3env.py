"""What the pytest files of test/s3compat share: the environment the Go
test that runs them sets, and clients for it.

  COFFER_S3_ENDPOINT, COFFER_S3_ACCESS_KEY, COFFER_S3_SECRET_KEY,
  COFFER_S3_BUCKET (a bucket name the run owns; the tests create it).
"""

import os

import boto3
import requests
from botocore.config import Config

ENDPOINT = os.environ["COFFER_S3_ENDPOINT"]
ACCESS_KEY = os.environ["COFFER_S3_ACCESS_KEY"]
SECRET_KEY = os.environ["COFFER_S3_SECRET_KEY"]
BUCKET = os.environ["COFFER_S3_BUCKET"]

# Plain HTTP as a browser or curl sends it (no proxy from the environment).
HTTP = requests.Session()
HTTP.trust_env = False


def client(**config):
    """A boto3 S3 client for the server; config: botocore Config fields
    (none: botocore's defaults, what a user writes)."""
    return boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(**config) if config else None,
    )
