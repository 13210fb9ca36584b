//! Elliptic-curve key pairs as OpenSSF Model Signing uses them: NIST P-256, P-384 and
//! P-521 in PEM (private: SEC1 `EC PRIVATE KEY`, possibly after an `EC PARAMETERS`
//! block, or PKCS#8 `PRIVATE KEY`; public: SPKI `PUBLIC KEY`), ECDSA with the hash that
//! matches the curve (SHA-256, SHA-384, SHA-512), signatures in ASN.1 DER. Signing with
//! P-256 and P-384 is deterministic (RFC 6979): the same key and bytes give the same
//! signature; P-521 signatures use a random nonce (p521 0.13 offers no other).

use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey, LineEnding};
use sha2::{Digest, Sha256};

/// A curve model_signing accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// secp256r1 (prime256v1), ECDSA with SHA-256.
    P256,
    /// secp384r1, ECDSA with SHA-384.
    P384,
    /// secp521r1, ECDSA with SHA-512.
    P521,
}

impl Curve {
    /// The usual name (`P-256`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Curve::P256 => "P-256",
            Curve::P384 => "P-384",
            Curve::P521 => "P-521",
        }
    }
}

/// A private key that signs.
pub enum PrivateKey {
    /// P-256.
    P256(p256::ecdsa::SigningKey),
    /// P-384.
    P384(p384::ecdsa::SigningKey),
    /// P-521.
    P521(p521::ecdsa::SigningKey),
}

/// A public key that verifies.
#[derive(Clone, Debug)]
pub enum PublicKey {
    /// P-256.
    P256(p256::PublicKey),
    /// P-384.
    P384(p384::PublicKey),
    /// P-521.
    P521(p521::PublicKey),
}

/// The PEM blocks of a text: `(label, base64 body)`; headers (legacy encryption) are
/// reported through the label `ENCRYPTED`.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(label) = line
            .trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let mut body = String::new();
        let mut encrypted = false;
        for line in lines.by_ref() {
            let line = line.trim();
            if line.starts_with("-----END ") {
                break;
            }
            if line.contains(':') {
                encrypted |= line.starts_with("Proc-Type:") && line.contains("ENCRYPTED");
                continue;
            }
            body.push_str(line);
        }
        let label = if encrypted { "ENCRYPTED" } else { label };
        out.push((label.to_string(), body));
    }
    out
}

fn der(body: &str) -> Result<Vec<u8>, KeyError> {
    use base64::Engine as _;
    Ok(base64::engine::general_purpose::STANDARD.decode(body)?)
}

const CURVES: &str = "an elliptic-curve key on P-256, P-384 or P-521 (as model_signing accepts; e.g. `openssl ecparam -name prime256v1 -genkey -noout -out key.pem`)";

/// Why a PEM text is not a usable key: its Display says what the text holds instead,
/// worded to follow "key `PATH` " (the caller names the file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// No PEM block where a private key was expected.
    #[error("holds no PEM block; expected {}", CURVES)]
    NoBlock,
    /// No PEM block where a public key was expected.
    #[error("holds no PEM block; expected a `-----BEGIN PUBLIC KEY-----` file")]
    NoPublicBlock,
    /// A block whose body does not decode.
    #[error("its PEM body is not valid base64 ({0})")]
    Base64(#[from] base64::DecodeError),
    /// A P-521 key the signer refuses.
    #[error(transparent)]
    P521(p521::ecdsa::Error),
    /// A SEC1 key on a curve model_signing does not accept.
    #[error(
        "holds an EC private key on a curve other than P-256, P-384 or P-521; expected {}",
        CURVES
    )]
    OtherCurve,
    /// A PKCS#8 key that is not ECDSA on an accepted curve.
    #[error(
        "holds a PKCS#8 private key that is not ECDSA on P-256, P-384 or P-521 (RSA and Ed25519 keys are not accepted by model_signing); expected {}",
        CURVES
    )]
    NotEcdsa,
    /// An encrypted private key.
    #[error(
        "is encrypted; write a decrypted copy for signing (`openssl pkey -in KEY -out plain.pem`) and keep it safe"
    )]
    Encrypted,
    /// A public key given for signing.
    #[error("holds a public key; signing needs the private key")]
    PublicForSigning,
    /// A private key given for verification.
    #[error(
        "holds a private key; verification takes the public key (`openssl ec -in key.pem -pubout -out key.pub`)"
    )]
    PrivateForVerifying,
    /// A PEM block of another kind where a private key was expected.
    #[error("holds a `{0}` PEM block; expected {curves}", curves = CURVES)]
    OtherBlock(String),
    /// A PEM block of another kind where a public key was expected.
    #[error("holds a `{0}` PEM block, not a `PUBLIC KEY`")]
    NotPublicBlock(String),
    /// Only an `EC PARAMETERS` block.
    #[error("holds only EC parameters, no key; expected {}", CURVES)]
    OnlyParameters,
    /// A `PUBLIC KEY` block that no accepted curve reads.
    #[error("is not a public key of {}", CURVES)]
    NotAPublicKey,
}

impl PrivateKey {
    /// Reads a PEM private key; the error says what the text holds instead.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let blocks = blocks(text);
        if blocks.is_empty() {
            return Err(KeyError::NoBlock);
        }
        for (label, body) in &blocks {
            match label.as_str() {
                "EC PARAMETERS" => continue,
                "EC PRIVATE KEY" => {
                    let der = der(body)?;
                    if let Ok(k) = p256::SecretKey::from_sec1_der(&der) {
                        return Ok(PrivateKey::P256(k.into()));
                    }
                    if let Ok(k) = p384::SecretKey::from_sec1_der(&der) {
                        return Ok(PrivateKey::P384(k.into()));
                    }
                    if let Ok(k) = p521::SecretKey::from_sec1_der(&der) {
                        return p521::ecdsa::SigningKey::from_bytes(&k.to_bytes())
                            .map(PrivateKey::P521)
                            .map_err(KeyError::P521);
                    }
                    return Err(KeyError::OtherCurve);
                }
                "PRIVATE KEY" => {
                    let der = der(body)?;
                    if let Ok(k) = p256::SecretKey::from_pkcs8_der(&der) {
                        return Ok(PrivateKey::P256(k.into()));
                    }
                    if let Ok(k) = p384::SecretKey::from_pkcs8_der(&der) {
                        return Ok(PrivateKey::P384(k.into()));
                    }
                    if let Ok(k) = p521::SecretKey::from_pkcs8_der(&der) {
                        return p521::ecdsa::SigningKey::from_bytes(&k.to_bytes())
                            .map(PrivateKey::P521)
                            .map_err(KeyError::P521);
                    }
                    return Err(KeyError::NotEcdsa);
                }
                "ENCRYPTED PRIVATE KEY" | "ENCRYPTED" => {
                    return Err(KeyError::Encrypted);
                }
                "PUBLIC KEY" => {
                    return Err(KeyError::PublicForSigning);
                }
                other => {
                    return Err(KeyError::OtherBlock(other.to_string()));
                }
            }
        }
        Err(KeyError::OnlyParameters)
    }

    /// The curve.
    pub fn curve(&self) -> Curve {
        match self {
            PrivateKey::P256(_) => Curve::P256,
            PrivateKey::P384(_) => Curve::P384,
            PrivateKey::P521(_) => Curve::P521,
        }
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        match self {
            PrivateKey::P256(k) => PublicKey::P256(k.verifying_key().into()),
            PrivateKey::P384(k) => PublicKey::P384(k.verifying_key().into()),
            PrivateKey::P521(k) => PublicKey::P521(
                p521::PublicKey::from_affine(*p521::ecdsa::VerifyingKey::from(k).as_affine())
                    .expect("a signing key's point is valid"),
            ),
        }
    }

    /// ECDSA over `message` with the curve's hash, DER-encoded.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        use p256::ecdsa::signature::Signer as _;
        match self {
            PrivateKey::P256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(message);
                sig.to_der().as_bytes().to_vec()
            }
            PrivateKey::P384(k) => {
                let sig: p384::ecdsa::Signature = k.sign(message);
                sig.to_der().as_bytes().to_vec()
            }
            PrivateKey::P521(k) => {
                // p521 0.13 signs with a random nonce (as model_signing does on every
                // curve); P-256 and P-384 use RFC 6979.
                let sig: p521::ecdsa::Signature = k.sign(message);
                sig.to_der().as_bytes().to_vec()
            }
        }
    }
}

impl PublicKey {
    /// Reads a PEM public key (SPKI); the error says what the text holds instead.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let blocks = blocks(text);
        let Some((_, body)) = blocks.iter().find(|(label, _)| label == "PUBLIC KEY") else {
            return Err(match blocks.first() {
                Some((label, _)) if label.contains("PRIVATE") || label == "ENCRYPTED" => {
                    KeyError::PrivateForVerifying
                }
                Some((label, _)) => KeyError::NotPublicBlock(label.clone()),
                None => KeyError::NoPublicBlock,
            });
        };
        let der = der(body)?;
        if let Ok(k) = p256::PublicKey::from_public_key_der(&der) {
            return Ok(PublicKey::P256(k));
        }
        if let Ok(k) = p384::PublicKey::from_public_key_der(&der) {
            return Ok(PublicKey::P384(k));
        }
        if let Ok(k) = p521::PublicKey::from_public_key_der(&der) {
            return Ok(PublicKey::P521(k));
        }
        Err(KeyError::NotAPublicKey)
    }

    /// The curve.
    pub fn curve(&self) -> Curve {
        match self {
            PublicKey::P256(_) => Curve::P256,
            PublicKey::P384(_) => Curve::P384,
            PublicKey::P521(_) => Curve::P521,
        }
    }

    /// The key as SPKI PEM, LF line ends, 64-column base64: what `openssl ec -pubout`
    /// and pyca/cryptography write, whatever layout the key was read from.
    pub fn canonical_pem(&self) -> String {
        let pem = match self {
            PublicKey::P256(k) => k.to_public_key_pem(LineEnding::LF),
            PublicKey::P384(k) => k.to_public_key_pem(LineEnding::LF),
            PublicKey::P521(k) => k.to_public_key_pem(LineEnding::LF),
        };
        pem.expect("a valid public key encodes")
    }

    /// model_signing's key hint: SHA-256 of [`PublicKey::canonical_pem`], lowercase hex.
    pub fn hint(&self) -> String {
        shardsmith_manifest::hex(&Sha256::digest(self.canonical_pem().as_bytes()))
    }

    /// True when `der` is this key's ECDSA signature over `message` (high-S accepted, as
    /// OpenSSL does).
    pub fn verify(&self, message: &[u8], der: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        match self {
            PublicKey::P256(k) => p256::ecdsa::Signature::from_der(der).is_ok_and(|s| {
                p256::ecdsa::VerifyingKey::from(k)
                    .verify(message, &s)
                    .is_ok()
            }),
            PublicKey::P384(k) => p384::ecdsa::Signature::from_der(der).is_ok_and(|s| {
                p384::ecdsa::VerifyingKey::from(k)
                    .verify(message, &s)
                    .is_ok()
            }),
            PublicKey::P521(k) => p521::ecdsa::Signature::from_der(der).is_ok_and(|s| {
                p521::ecdsa::VerifyingKey::from_affine(*k.as_affine())
                    .is_ok_and(|v| v.verify(message, &s).is_ok())
            }),
        }
    }
}

#[cfg(test)]
mod tests;
