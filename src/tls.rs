//! TLS shared by every backend that speaks it (feature `rustls`): the crypto provider, the
//! roots a client trusts, and how a failed handshake is recognised.
//!
//! Each backend builds its own client from these: PostgreSQL keeps libpq's `sslmode`
//! meanings (`postgres`), `component::Http` verifies `https://` servers in full, and
//! Redis (`rediss://`) goes through the `redis` crate's own rustls support.

#[cfg(any(feature = "postgres", feature = "http-check"))]
use std::sync::Arc;

#[cfg(any(feature = "postgres", feature = "http-check"))]
use rustls::{
    RootCertStore,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, pem::PemObject},
};

// Each function is built where a backend uses it, so that `rustls` alone warns of nothing.

/// The crypto provider every client of the crate uses: ring, as the `rustls` dependency is
/// built with (no process-wide default is installed or read).
#[cfg(any(feature = "postgres", feature = "http-check"))]
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates a PEM file holds (an `sslrootcert`, a private CA), or else the Mozilla
/// roots (webpki-roots).
#[cfg(any(feature = "postgres", feature = "http-check"))]
pub(crate) fn roots(pem_file: Option<&str>) -> Result<RootCertStore, String> {
    let Some(path) = pem_file else {
        return Ok(RootCertStore::from_iter(
            webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
        ));
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| format!("cannot read {path:?}: {error}"))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(format!("{path:?} holds no usable certificate"));
    }
    Ok(roots)
}

/// Whether a failed TLS handshake (an untrusted certificate, a name it is not valid for, no
/// protocol in common) is `error` or anywhere in its chain: tokio-rustls hands rustls's error
/// over inside an I/O error, drivers inside theirs.
#[cfg(any(feature = "postgres", feature = "redis"))]
pub(crate) fn is_handshake_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<rustls::Error>() {
            return true;
        }
        // An I/O error's `source` skips the error it wraps: look inside it first.
        next = match error.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(feature = "postgres", feature = "redis"))]
    #[test]
    fn a_rustls_error_inside_an_io_error_is_a_handshake_failure() {
        use std::io;

        let untrusted = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(is_handshake_failure(&untrusted));
        assert!(!is_handshake_failure(&io::Error::from(
            io::ErrorKind::ConnectionReset
        )));
    }

    #[cfg(any(feature = "postgres", feature = "http-check"))]
    #[test]
    fn roots_default_to_mozillas_and_refuse_a_file_without_certificates() {
        assert!(!roots(None).unwrap().is_empty());
        let empty =
            std::env::temp_dir().join(format!("tower-health-empty-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = roots(Some(empty.to_str().unwrap())).unwrap_err();
        std::fs::remove_file(&empty).unwrap();
        assert!(error.contains("no usable certificate"), "{error}");
        assert!(
            roots(Some("/nonexistent/ca.pem"))
                .unwrap_err()
                .contains("cannot read")
        );
    }
}
