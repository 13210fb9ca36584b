"""model_signing 1.1.1's shard serialization through its Python API: its CLI signs and
verifies one digest per file only (`verify key` always hashes per file, whatever the
bundle says), so bundles of shards are made and checked with the API, as its docs show.

Usage: model_signing_shards.py sign MODEL SIGNATURE PRIVATE_KEY SHARD_SIZE
       model_signing_shards.py verify MODEL SIGNATURE PUBLIC_KEY [SHARD_SIZE]

`sign` hashes MODEL with `use_shard_serialization(shard_size=SHARD_SIZE)` (the bundle
then says `"shard_size": SHARD_SIZE.0`: the payload goes through a protobuf Struct).
`verify` without SHARD_SIZE lets model_signing guess the hashing from the bundle (what
`verifying.Config().verify` does when no hashing config is set; it reads method and
shard_size from the bundle, but leaves allow_symlinks at False); with SHARD_SIZE it sets
the shard serialization and allows symlinks. Exit 0 and "Verification succeeded", or
exit 1 and model_signing's error on stderr, as its CLI prints them.
"""

import sys

import model_signing
from model_signing import hashing


def main(argv):
    command, model, signature, key = argv[1:5]
    if command == "sign":
        model_signing.signing.Config().use_elliptic_key_signer(
            private_key=key
        ).set_hashing_config(
            hashing.Config().use_shard_serialization(shard_size=int(argv[5]))
        ).sign(model, signature)
        return 0
    config = model_signing.verifying.Config().use_elliptic_key_verifier(public_key=key)
    if len(argv) > 5:
        config.set_hashing_config(
            hashing.Config()
            .use_shard_serialization(shard_size=int(argv[5]))
            .set_allow_symlinks(True)
        )
    try:
        config.verify(model, signature)
    except Exception as err:  # what model_signing's CLI catches and prints
        print(f"Verification failed with error: {err}", file=sys.stderr)
        return 1
    print("Verification succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
