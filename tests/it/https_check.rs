//! `component::Http` over `https://`: the server's certificate is verified (chain and host
//! name), against the Mozilla roots or a PEM file of one's own. The server here is a real TLS
//! server on 127.0.0.1 with the machine's self-signed `localhost` certificate (the one the
//! local PostgreSQL serves), skipped with a message where its key cannot be read.

use crate::support;

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tower_health::check::CheckErrorKind;
use tower_health::component::{Component, Http};

const CERTIFICATE: &str = "/etc/ssl/certs/ssl-cert-snakeoil.pem";
const KEY: &str = "/etc/ssl/private/ssl-cert-snakeoil.key";

/// A TLS server answering 200 to everything; its port. `None` (with a message) where the
/// machine's certificate or key cannot be read.
async fn tls_server() -> Option<u16> {
    let certificates: Vec<CertificateDer<'static>> =
        match CertificateDer::pem_file_iter(CERTIFICATE)
            .and_then(|certificates| certificates.collect::<Result<_, _>>())
        {
            Ok(certificates) => certificates,
            Err(error) => return skip(&format!("{CERTIFICATE}: {error}")),
        };
    let key = match PrivateKeyDer::from_pem_file(KEY) {
        Ok(key) => key,
        Err(error) => return skip(&format!("{KEY}: {error}")),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_| async {
                    Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from("ok"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Some(port)
}

fn skip(why: &str) -> Option<u16> {
    // Past the harness's capture: a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
    None
}

async fn check(
    http: &Http,
) -> Result<tower_health::check::CheckReport, tower_health::check::CheckError> {
    support::bounded("the https check", http.check()).await
}

#[tokio::test]
async fn a_trusted_certificate_for_the_host_name_is_healthy() {
    let Some(port) = tls_server().await else {
        return;
    };
    let http = Http::new(&format!("https://localhost:{port}/health"))
        .unwrap()
        .root_certificates(CERTIFICATE)
        .unwrap();
    let passed = check(&http)
        .await
        .expect("the server is trusted for localhost");
    assert_eq!(passed.details()["status_code"], 200, "{passed:?}");
}

#[tokio::test]
async fn an_untrusted_or_misnamed_certificate_is_tls_trouble() {
    let Some(port) = tls_server().await else {
        return;
    };
    // The Mozilla roots do not include a machine's self-signed certificate.
    let untrusted = Http::new(&format!("https://localhost:{port}/")).unwrap();
    let error = check(&untrusted).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Tls, "{error}");
    // Trusted, but issued for `localhost`, not for `127.0.0.1`.
    let misnamed = Http::new(&format!("https://127.0.0.1:{port}/"))
        .unwrap()
        .root_certificates(CERTIFICATE)
        .unwrap();
    let error = check(&misnamed).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Tls, "{error}");
    assert!(!error.message().contains("BEGIN CERTIFICATE"), "{error}");
}

#[test]
fn root_certificates_are_for_https_and_must_be_readable() {
    assert!(
        Http::new("http://localhost/")
            .unwrap()
            .root_certificates(CERTIFICATE)
            .is_err()
    );
    let error = Http::new("https://localhost/")
        .unwrap()
        .root_certificates("/nonexistent/ca.pem")
        .unwrap_err();
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
}

/// A plain HTTP server on 127.0.0.1 that answers every request with `answer` (the whole
/// response, written as is) and closes; an empty `answer` closes without answering. Its port.
async fn plain_server(answer: &'static [u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0; 1024];
            let _ = stream.read(&mut request).await;
            let _ = stream.write_all(answer).await;
        }
    });
    port
}

#[tokio::test]
async fn http_failures_by_category() {
    let kind = |url: String| async move {
        let http = Http::new(&url).unwrap();
        check(&http).await.expect_err(&url).kind()
    };
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    assert_eq!(
        kind(format!("http://127.0.0.1:{closed_port}/")).await,
        CheckErrorKind::Refused
    );
    // Reached, and it said no: the dependency's own answer.
    let unavailable =
        plain_server(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n").await;
    assert_eq!(
        kind(format!("http://127.0.0.1:{unavailable}/")).await,
        CheckErrorKind::Other
    );
    let hangs_up = plain_server(b"").await;
    assert_eq!(
        kind(format!("http://127.0.0.1:{hangs_up}/")).await,
        CheckErrorKind::Closed
    );
    // `.invalid` never resolves (RFC 6761); the resolver says so at once.
    assert_eq!(
        kind("http://no-such-host.invalid/".to_owned()).await,
        CheckErrorKind::Dns
    );
}
