//! The signature file: a Sigstore bundle v0.3 holding a DSSE envelope around the
//! statement, as model_signing's key-pair method writes it (compact JSON, fixed key
//! order, the public key named only by its hint, no transparency-log entries).
//!
//! Keyless (Sigstore) signing fills the same bundle differently: the verification
//! material is a Fulcio certificate instead of a key hint, and `tlogEntries` holds the
//! Rekor inclusion proof. [`Bundle::parse`] says so when it meets one.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

/// The bundle media type model_signing writes and requires.
pub const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The DSSE pre-authentication encoding: what is actually signed.
pub fn pae(payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {PAYLOAD_TYPE} {} ",
        PAYLOAD_TYPE.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A parsed bundle: what verification needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    /// The key hint (SHA-256 of the public key's PEM), if the bundle has one.
    pub hint: Option<String>,
    /// The statement bytes, exactly as signed.
    pub payload: Vec<u8>,
    /// The first signature, DER.
    pub signature: Vec<u8>,
    /// The envelope's payload type.
    pub payload_type: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Out<'a> {
    media_type: &'a str,
    verification_material: Material<'a>,
    dsse_envelope: Envelope<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Material<'a> {
    public_key: Hint<'a>,
    tlog_entries: [(); 0],
}

#[derive(Serialize)]
struct Hint<'a> {
    hint: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    payload: String,
    payload_type: &'a str,
    signatures: [Sig; 1],
}

#[derive(Serialize)]
struct Sig {
    sig: String,
    keyid: &'static str,
}

impl Bundle {
    /// The bundle file's bytes (compact JSON, no trailing newline, as model_signing).
    pub fn to_json(hint: &str, payload: &[u8], signature: &[u8]) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD;
        serde_json::to_vec(&Out {
            media_type: MEDIA_TYPE,
            verification_material: Material {
                public_key: Hint { hint },
                tlog_entries: [],
            },
            dsse_envelope: Envelope {
                payload: b64.encode(payload),
                payload_type: PAYLOAD_TYPE,
                signatures: [Sig {
                    sig: b64.encode(signature),
                    keyid: "",
                }],
            },
        })
        .expect("a bundle always serializes")
    }

    /// Reads a bundle; the error says what is wrong with it.
    pub fn parse(bytes: &[u8]) -> Result<Self, BundleError> {
        let v: Value = serde_json::from_slice(bytes).map_err(BundleError::NotJson)?;
        let media = v["mediaType"].as_str().unwrap_or_default();
        if media != MEDIA_TYPE {
            return Err(BundleError::MediaType(media.to_string()));
        }
        let material = &v["verificationMaterial"];
        if material.get("certificate").is_some() || material.get("x509CertificateChain").is_some() {
            return Err(BundleError::Keyless);
        }
        if material.get("publicKey").is_none() {
            return Err(BundleError::NoPublicKey);
        }
        let hint = material["publicKey"]["hint"]
            .as_str()
            .filter(|h| !h.is_empty())
            .map(str::to_string);
        let envelope = &v["dsseEnvelope"];
        if envelope.is_null() {
            return Err(BundleError::NoEnvelope);
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let field = |value: &Value, what: &'static str| -> Result<Vec<u8>, BundleError> {
            let text = value.as_str().ok_or(BundleError::NoField(what))?;
            b64.decode(text)
                .map_err(|source| BundleError::NotBase64 { what, source })
        };
        let payload = field(&envelope["payload"], "payload")?;
        let signature = match envelope["signatures"].as_array().and_then(|s| s.first()) {
            Some(first) => field(&first["sig"], "signatures[0].sig")?,
            None => return Err(BundleError::NoSignature),
        };
        Ok(Bundle {
            hint,
            payload,
            signature,
            payload_type: envelope["payloadType"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        })
    }
}

/// Why a file is not a usable bundle; its Display follows "is not a usable signature: ".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The file does not parse as JSON.
    #[error("it is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// Another media type.
    #[error(
        "its media type is `{0}`, not `{media}`: not a model_signing bundle",
        media = MEDIA_TYPE
    )]
    MediaType(String),
    /// A Sigstore (certificate) bundle.
    #[error(
        "it was signed keyless (Sigstore certificate); shardsmith checks key-pair signatures (`--public-key`); use `model_signing verify sigstore` for it"
    )]
    Keyless,
    /// No public-key verification material.
    #[error("it has no verificationMaterial.publicKey")]
    NoPublicKey,
    /// No DSSE envelope.
    #[error("it holds no DSSE envelope (a message signature bundle?)")]
    NoEnvelope,
    /// An envelope field that is missing or not a string.
    #[error("its envelope has no `{0}`")]
    NoField(&'static str),
    /// An envelope field that does not decode.
    #[error("its envelope's `{what}` is not base64 ({source})")]
    NotBase64 {
        /// The field.
        what: &'static str,
        /// The decoder's complaint.
        source: base64::DecodeError,
    },
    /// An envelope without signatures.
    #[error("its envelope holds no signature")]
    NoSignature,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_and_bundle_layout() {
        assert_eq!(
            pae(b"{}"),
            b"DSSEv1 28 application/vnd.in-toto+json 2 {}".to_vec()
        );
        let json = Bundle::to_json("ab", b"{}", b"\x30\x00");
        assert_eq!(
            String::from_utf8(json.clone()).unwrap(),
            r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"ab"},"tlogEntries":[]},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"MAA=","keyid":""}]}}"#
        );
        let back = Bundle::parse(&json).unwrap();
        assert_eq!(back.hint.as_deref(), Some("ab"));
        assert_eq!(back.payload, b"{}");
        assert_eq!(back.signature, b"\x30\x00");
        assert!(
            Bundle::parse(br#"{"mediaType":"x"}"#)
                .unwrap_err()
                .to_string()
                .contains("not a model_signing bundle")
        );
        assert!(
            Bundle::parse(b"\x00")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
    }
}
