"""Creates a bucket in fake-gcs-server, or uploads a local directory to it, through the
GCS JSON API (the API gsutil and gcloud upload with; the emulator implements uploads on
it only, see tests/remote/gcs.rs).

    usage: python3 gcs_upload.py URL bucket NAME
           python3 gcs_upload.py URL upload BUCKET PREFIX DIR
"""
import json
import os
import sys
import urllib.parse
import urllib.request


def request(url, data, content_type):
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": content_type}
    )
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200, resp.status


def main(base, verb, *args):
    if verb == "bucket":
        (name,) = args
        body = json.dumps({"name": name}).encode()
        request(f"{base}/storage/v1/b?project=shardsmith", body, "application/json")
        return
    bucket, prefix, root = args
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            key = f"{prefix}/{rel}" if prefix else rel
            query = urllib.parse.urlencode({"uploadType": "media", "name": key})
            with open(path, "rb") as f:
                data = f.read()
            request(
                f"{base}/upload/storage/v1/b/{bucket}/o?{query}",
                data,
                "application/octet-stream",
            )


if __name__ == "__main__":
    main(*sys.argv[1:])
