use std::path::{Path, PathBuf};

use super::*;

fn key(name: &str) -> String {
    let dir: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/model_signing/keys");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn every_encoding_model_signing_accepts_loads() {
    for (name, curve) in [
        ("p256-private.pem", Curve::P256),
        ("p256-private.pkcs8.pem", Curve::P256),
        ("p384-private.pem", Curve::P384),
        ("p521-private.pem", Curve::P521),
    ] {
        assert_eq!(
            PrivateKey::from_pem(&key(name)).unwrap().curve(),
            curve,
            "{name}"
        );
    }
    // `openssl ecparam -genkey` without -noout writes the parameters first.
    let with_params = format!(
        "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{}",
        key("p256-private.pem")
    );
    assert_eq!(
        PrivateKey::from_pem(&with_params).unwrap().curve(),
        Curve::P256
    );
    for (name, curve) in [
        ("p256-public.pem", Curve::P256),
        ("p384-public.pem", Curve::P384),
        ("p521-public.pem", Curve::P521),
    ] {
        let public = PublicKey::from_pem(&key(name)).unwrap();
        assert_eq!(public.curve(), curve);
        assert_eq!(
            public.canonical_pem(),
            key(name),
            "{name}: openssl's layout"
        );
    }
}

#[test]
fn unusable_keys_say_what_they_are() {
    let err = |text: &str| PrivateKey::from_pem(text).err().unwrap().to_string();
    assert!(err(&key("p256-private.encrypted-pkcs8.pem")).starts_with("is encrypted"));
    assert!(err(&key("p256-public.pem")).starts_with("holds a public key"));
    assert!(err("hello").starts_with("holds no PEM block"));
    assert!(
        err("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
            .contains("`RSA PRIVATE KEY`")
    );
    assert!(
        PublicKey::from_pem(&key("p256-private.pem"))
            .unwrap_err()
            .to_string()
            .starts_with("holds a private key")
    );
}

#[test]
fn signatures_verify_only_with_the_matching_key_and_message() {
    for (private, public) in [
        ("p256-private.pem", "p256-public.pem"),
        ("p384-private.pem", "p384-public.pem"),
        ("p521-private.pem", "p521-public.pem"),
    ] {
        let k = PrivateKey::from_pem(&key(private)).unwrap();
        let p = PublicKey::from_pem(&key(public)).unwrap();
        let sig = k.sign(b"message");
        assert_eq!(sig[0], 0x30, "DER SEQUENCE");
        assert!(p.verify(b"message", &sig));
        assert!(!p.verify(b"messagf", &sig));
        let other = PublicKey::from_pem(&key("other-p256-public.pem")).unwrap();
        assert!(!other.verify(b"message", &sig));
    }
}
