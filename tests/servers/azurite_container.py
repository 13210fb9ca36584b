"""Creates a blob container in Azurite (object_store cannot: containers are the
account's business). Signed with the emulator's well-known account key (Shared Key).

    usage: python3 azurite_container.py BLOB_URL CONTAINER
"""
import base64
import datetime
import hashlib
import hmac
import sys
import urllib.request

ACCOUNT = "devstoreaccount1"
# The public, documented key of Azurite's default account.
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
VERSION = "2021-08-06"


def main(blob_url, container):
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
    to_sign = (
        "PUT\n" + "\n" * 11
        + f"x-ms-date:{date}\nx-ms-version:{VERSION}\n"
        + f"/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container"
    )
    sig = base64.b64encode(
        hmac.new(base64.b64decode(KEY), to_sign.encode(), hashlib.sha256).digest()
    ).decode()
    req = urllib.request.Request(
        f"{blob_url}/{ACCOUNT}/{container}?restype=container",
        method="PUT",
        headers={
            "x-ms-date": date,
            "x-ms-version": VERSION,
            "Authorization": f"SharedKey {ACCOUNT}:{sig}",
            "Content-Length": "0",
        },
    )
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 201, resp.status


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
