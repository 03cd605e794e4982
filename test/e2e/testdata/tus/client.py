"""tuspy driver for test/e2e/tus_clients_test.go.

usage: client.py ENDPOINT TOKEN FILE BUCKET KEY CHUNK [URL]
Uploads FILE (resuming URL if given) in CHUNK-byte PATCHes with sha1
Upload-Checksum, and prints the upload URL.
"""
import sys

from tusclient import client

endpoint, token, path, bucket, key, chunk = sys.argv[1:7]
url = sys.argv[7] if len(sys.argv) > 7 else None
c = client.TusClient(endpoint, headers={"Authorization": "Bearer " + token})
up = c.uploader(
    file_path=path,
    url=url,
    chunk_size=int(chunk),
    metadata={"bucket": bucket, "key": key, "content-type": "application/x-tuspy"},
    upload_checksum=True,
)
if url:
    print("resumed at", up.offset, flush=True)
up.upload()
print(up.url, flush=True)
