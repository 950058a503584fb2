//! The return to rotation after an outage (`HealthConfig::return_jitter`): a database that
//! refuses (a closed port) and comes back (a listener on that port again, forwarding to
//! PostgreSQL). Readiness waits out a random delay before it passes again, the view, the JSON
//! body and Kubernetes' text saying so meanwhile, and a failure shorter than the debounce
//! comes back at once.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use support::tcp_proxy::TcpProxy;
use support::{Client, LIMIT, bounded, eventually, fast, pg_addr, postgres};
use tower_health::view::Condition;
use tower_health::{HealthConfig, HealthHandle, Probe};

/// The return's jitter of these tests: long enough that the readers are seen answering
/// while it holds (a draw below a millisecond, one in 4,000, would pass too soon to see).
const JITTER: Duration = Duration::from_secs(4);

/// The readiness cadences of the tests, with `debounce` and [`JITTER`], over the database at
/// `addr`.
fn config(addr: SocketAddr, debounce: Duration) -> HealthConfig {
    fast().debounce(debounce).return_jitter(JITTER).database(
        "default",
        postgres(&format!(
            "postgres://postgres@{addr}/postgres?sslmode=disable"
        )),
    )
}

/// Waits until readiness's answer passes (`true`) or fails (`false`).
async fn readiness_is(health: &HealthHandle, passing: bool) {
    let reached = eventually(LIMIT, || async {
        health.view().answer(Probe::Ready).passing == passing
    })
    .await;
    assert!(
        reached,
        "readiness never {}: {:?}",
        if passing { "passed" } else { "failed" },
        health.view().answer(Probe::Ready)
    );
}

/// What readiness answered, one entry per change, from the database's return on, until it
/// passes: its condition and whether it passed; while it is returning, what
/// `/health/ready` answers is checked too.
async fn until_ready(health: &HealthHandle, server: SocketAddr) -> Vec<(Condition, bool)> {
    let client = Client::new();
    let mut watch = health.watch();
    let mut seen = Vec::new();
    let mut asked = false;
    bounded("readiness passing again", async {
        loop {
            let view = watch.changed().await.expect("the monitor is running");
            let answer = view.answer(Probe::Ready);
            seen.push((answer.condition, answer.passing));
            if answer.passing {
                return;
            }
            if answer.condition == Condition::Returning && !asked {
                asked = true;
                let ready = client.get(server, "/health/ready").await;
                eprintln!(
                    "while returning, /health/ready: {} {}",
                    ready.status,
                    ready.text()
                );
                assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
                let body = ready.json();
                assert_eq!(body["status"], "not_ready");
                assert!(
                    body["reason"]
                        .as_str()
                        .unwrap()
                        .starts_with("returning after an outage"),
                    "{body}"
                );
                let jitter_ms = body["returning"]["jitter_ms"].as_u64().unwrap();
                assert!(jitter_ms < JITTER.as_millis() as u64, "{body}");
                assert!(body["returning"]["at"].is_string(), "{body}");
                assert_eq!(
                    body["checks"]["database_default"], "ready",
                    "the checks pass: only the return holds readiness out"
                );
                // Kubernetes' text says the same, and why, on a line of its own.
                let verbose = client.get(server, "/health/ready?verbose").await;
                eprintln!("while returning, ?verbose:\n{}", verbose.text());
                assert_eq!(verbose.status, StatusCode::SERVICE_UNAVAILABLE);
                let text = verbose.text();
                assert!(text.contains("[+]database/default ok\n"), "{text}");
                assert!(
                    text.contains("[-]return failed: returning after an outage"),
                    "{text}"
                );
                assert!(text.ends_with("readyz check failed\n"), "{text}");
            }
        }
    })
    .await;
    seen
}

/// A refused database for longer than the debounce is an outage: once it is back, readiness
/// first answers `Returning` (503, with why and until when), and passes only after it.
#[tokio::test]
async fn after_an_outage_readiness_returns_once_its_jitter_has_run_out() {
    require_postgres!();
    let addr = support::refused_addr().await;
    let proxy = TcpProxy::start_on(addr, pg_addr()).await;
    let debounce = Duration::from_millis(300);
    let (health, server) = support::health_server(config(addr, debounce)).await;
    // The start comes back at once: no jitter.
    readiness_is(&health, true).await;

    // The database goes away (its port closes, its connections with it) for longer than
    // the debounce.
    drop(proxy);
    readiness_is(&health, false).await;
    tokio::time::sleep(debounce * 3).await;
    assert!(!health.view().answer(Probe::Ready).passing);

    // It comes back on its address.
    let _proxy = TcpProxy::start_on(addr, pg_addr()).await;
    let seen = until_ready(&health, server.addr).await;
    eprintln!("readiness from the database's return on: {seen:?}");
    let returning = seen
        .iter()
        .position(|(condition, _)| *condition == Condition::Returning)
        .unwrap_or_else(|| panic!("readiness never waited out a return: {seen:?}"));
    let passed = seen.iter().position(|(_, passing)| *passing).unwrap();
    assert!(returning < passed, "{seen:?}");
    assert!(
        seen[returning..passed]
            .iter()
            .all(|answer| *answer == (Condition::Returning, false)),
        "from the return on, readiness waits and then passes: {seen:?}"
    );
    assert_eq!(seen[passed], (Condition::Verdict, true));
}

/// A refused database for less than the debounce is a blip: readiness fails while it does
/// (the HTTP probes answer at once), and passes again as soon as the database is back,
/// without a return's delay.
#[tokio::test]
async fn a_failure_shorter_than_the_debounce_comes_back_without_a_delay() {
    require_postgres!();
    let addr = support::refused_addr().await;
    let proxy = TcpProxy::start_on(addr, pg_addr()).await;
    // Longer than the test: every failure here is a blip.
    let (health, server) = support::health_server(config(addr, Duration::from_secs(3600))).await;
    readiness_is(&health, true).await;

    drop(proxy);
    readiness_is(&health, false).await;
    let _proxy = TcpProxy::start_on(addr, pg_addr()).await;
    let seen = until_ready(&health, server.addr).await;
    eprintln!("readiness from the database's return on: {seen:?}");
    assert!(
        seen.iter()
            .all(|(condition, _)| *condition == Condition::Verdict),
        "a blip is no return: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&(Condition::Verdict, true)));
}
