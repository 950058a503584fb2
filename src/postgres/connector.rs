//! The TLS connector of the pools this crate builds, as the `rustls` feature decides: what a
//! connection string's TLS settings ([`TlsSettings`]) connect with, and how its handshake
//! fails.

use super::tls::TlsSettings;

/// The TLS connector of the pools this crate builds.
#[cfg(feature = "rustls")]
pub(crate) type Connector = tokio_postgres_rustls::MakeRustlsConnect;
/// The TLS connector of the pools this crate builds (none without the `rustls` feature).
#[cfg(not(feature = "rustls"))]
pub(crate) type Connector = tokio_postgres::NoTls;

/// The connector `settings` ask for.
#[cfg(feature = "rustls")]
pub(crate) fn connector(settings: &TlsSettings) -> Result<Connector, String> {
    super::rustls::connector(settings)
}

/// The connector `settings` ask for: a connection string that asks for TLS is refused rather
/// than connected in the clear, or never connected at all.
#[cfg(not(feature = "rustls"))]
pub(crate) fn connector(settings: &TlsSettings) -> Result<Connector, String> {
    if settings.mode.requires_tls() || settings.root_cert.is_some() {
        return Err(format!(
            "sslmode={} asks for TLS, which needs tower-health's `rustls` feature",
            settings.mode
        ));
    }
    Ok(tokio_postgres::NoTls)
}

/// Whether `error` is a failed TLS handshake of the connector this crate builds.
#[cfg(feature = "rustls")]
pub(crate) fn is_tls_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    crate::tls::is_handshake_failure(error)
}

/// Whether `error` is a failed TLS handshake: never, without a TLS connector.
#[cfg(not(feature = "rustls"))]
pub(crate) fn is_tls_failure(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}
