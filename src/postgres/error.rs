use super::classify::{self, Phase};
use crate::check::{CheckError, CheckErrorKind};
use crate::verdict::error::chain;

/// The error of a failed connection attempt through a bb8 manager: one
/// [`PostgresCheckManager`]'s connection attempt made, already sorted, or a manager of your
/// own whose errors carry tokio-postgres's (`bb8-postgres`'s do).
///
/// [`PostgresCheckManager`]: super::PostgresCheckManager
pub(super) fn connect_error(error: &(dyn std::error::Error + 'static)) -> CheckError {
    if let Some(sorted) = error.downcast_ref::<CheckError>() {
        return sorted.clone();
    }
    CheckError::from_error(connect_kind(error), error)
}

fn connect_kind(error: &(dyn std::error::Error + 'static)) -> CheckErrorKind {
    for link in chain(error) {
        if let Some(error) = link.downcast_ref::<tokio_postgres::Error>() {
            return classify::tokio_postgres(error, Phase::Connect);
        }
        if super::connector::is_tls_failure(link) {
            return CheckErrorKind::Tls;
        }
    }
    CheckErrorKind::from_io_chain(error).unwrap_or(CheckErrorKind::Other)
}

#[cfg(test)]
mod tests {
    use std::fmt;
    use std::io;

    use super::*;

    #[tokio::test]
    async fn connect_errors_by_category() {
        // `PostgresCheckManager`'s own, sorted where the attempt failed: passed on as it is.
        let timed_out = CheckError::new(CheckErrorKind::Timeout, "connection attempt timed out");
        assert_eq!(connect_error(&timed_out), timed_out);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let dsn = format!("host=127.0.0.1 port={port} user=postgres");
        let Err(refused) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls).await else {
            panic!("nothing listens there");
        };
        // bb8-postgres's manager fails with tokio-postgres's error itself.
        let error = connect_error(&refused);
        assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");
        assert!(error.message().contains("refused"), "{error}");
        assert_eq!(connect_error(&error), error, "sorted once");

        // A manager of one's own: its I/O errors, or nothing known.
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(connect_error(&reset).kind(), CheckErrorKind::Refused);
        assert_eq!(connect_error(&fmt::Error).kind(), CheckErrorKind::Other);
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn a_rustls_error_anywhere_in_the_chain_is_tls() {
        // tokio-rustls hands rustls's error over inside an I/O error.
        let untrusted = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let error = connect_error(&untrusted);
        assert_eq!(error.kind(), CheckErrorKind::Tls, "{error}");
    }
}
