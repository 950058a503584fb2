//! TLS to the real PostgreSQL (it runs with `ssl = on` and a self-signed certificate for
//! `localhost`), with libpq's meanings of `sslmode`.

use crate::support;

use std::io::Write;
use std::time::Duration;

use support::{eventually, fast, pg_client};
use tower_health::HealthMonitor;
use tower_health::check::CheckErrorKind;
use tower_health::postgres::PostgresCheck;
use tower_health::verdict::CheckStatus;

const LIMIT: Duration = Duration::from_secs(10);

/// A certificate authority that signed nothing this server has.
const UNRELATED_CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/unrelated-ca.pem");

/// The test database's URL with `query` appended (the server's address stays as the tests
/// know it, unless `host` replaces it).
fn url(host: Option<&str>, query: &str) -> String {
    let url = support::pg_url_with(query);
    match host {
        Some(host) => url.replace("127.0.0.1", host),
        None => url,
    }
}

/// The first verdict of a monitor checking `dsn`: whether the default database is ready and,
/// if not, the error kind.
async fn first_outcome(dsn: &str) -> (CheckStatus, Option<CheckErrorKind>) {
    let (status, error, _monitor) = first_outcome_kept(dsn).await;
    (status, error)
}

/// [`first_outcome`], with the monitor (and its pooled connection) kept alive.
async fn first_outcome_kept(
    dsn: &str,
) -> (
    CheckStatus,
    Option<CheckErrorKind>,
    tower_health::HealthHandle,
) {
    let check = PostgresCheck::connect(dsn).expect("the connection string is accepted");
    let health = HealthMonitor::spawn(
        fast()
            .readiness_timeout(Duration::from_secs(5))
            .database("default", check),
    )
    .unwrap();
    let checked = eventually(LIMIT, || async {
        health.view().readiness.checked_at.is_some()
    })
    .await;
    assert!(checked, "no readiness round within {LIMIT:?}");
    let readiness = health.view().readiness;
    let outcome = &readiness.databases[0];
    let kind = outcome.error.as_ref().map(|error| error.kind());
    (outcome.status, kind, health)
}

/// The server's own certificate, which is its own CA (self-signed): `SHOW ssl_cert_file`.
async fn server_certificate() -> Option<String> {
    let client = pg_client().await;
    let row = client.query_one("SHOW ssl_cert_file", &[]).await.ok()?;
    let path: String = row.get(0);
    if std::fs::read(&path).is_err() {
        // Past the harness's capture: a skip must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the server's certificate {path} cannot be read here"
        );
        return None;
    }
    Some(path)
}

#[tokio::test]
async fn require_encrypts_without_verifying() {
    require_postgres!();
    let name = "th_tls_require";
    let (status, error, _monitor) = first_outcome_kept(&url(
        None,
        &format!("sslmode=require&application_name={name}"),
    ))
    .await;
    assert_eq!((status, error), (CheckStatus::Passed, None));
    // The check's own connection is encrypted.
    let client = pg_client().await;
    let rows = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
            &[&name],
        )
        .await
        .unwrap();
    assert!(
        !rows.is_empty(),
        "the check's connection is not in pg_stat_activity"
    );
    assert!(
        rows.iter().all(|row| row.get::<_, bool>(0)),
        "a check connection is not TLS"
    );
}

#[tokio::test]
async fn verify_full_trusts_the_given_certificate_for_its_host_name() {
    require_postgres!();
    let Some(certificate) = server_certificate().await else {
        return;
    };
    let query = format!("sslmode=verify-full&sslrootcert={certificate}");
    assert_eq!(
        first_outcome(&url(Some("localhost"), &query)).await,
        (CheckStatus::Passed, None)
    );
    // The certificate is for `localhost`, not for `127.0.0.1`: verify-full refuses that name,
    // verify-ca does not check it.
    assert_eq!(
        first_outcome(&url(Some("127.0.0.1"), &query)).await,
        (CheckStatus::Failed, Some(CheckErrorKind::Tls))
    );
    let query = format!("sslmode=verify-ca&sslrootcert={certificate}");
    assert_eq!(
        first_outcome(&url(Some("127.0.0.1"), &query)).await,
        (CheckStatus::Passed, None)
    );
}

#[tokio::test]
async fn an_untrusted_certificate_fails_as_tls_without_the_chain() {
    require_postgres!();
    let dsn = url(
        Some("localhost"),
        &format!("sslmode=verify-full&sslrootcert={UNRELATED_CA}"),
    );
    let (status, _, health) = first_outcome_kept(&dsn).await;
    assert_eq!(status, CheckStatus::Failed);
    let readiness = health.view().readiness;
    let error = readiness.databases[0]
        .error
        .clone()
        .expect("the check failed");
    assert_eq!(error.kind(), CheckErrorKind::Tls, "{error}");
    assert!(error.message().contains("certificate"), "{error}");
    assert!(!error.message().contains("BEGIN CERTIFICATE"), "{error}");
}

#[test]
fn an_unreadable_root_certificate_is_refused_at_start() {
    let error = PostgresCheck::connect(
        "postgres://db/app?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
    )
    .unwrap_err();
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
}
