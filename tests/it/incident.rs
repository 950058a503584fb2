//! The incident guide's sample log (`src/docs/incident.md`, "The log lines") held to a real
//! run of what the guide says it comes from: `examples/admin.rs` with an optional `replica`
//! behind a TCP proxy that goes away for a while, then SIGTERM. Each line of the sample
//! (level, target, message and the names of its fields) is in the run's log, in the sample's
//! order, so that a `RUST_LOG` filter copied from it selects what it shows; when one is not,
//! the test prints the run's lines to copy from.

use crate::support;

use std::time::Duration;

use http::StatusCode;
use support::child::Example;
use support::logs::Line;
use support::tcp_proxy::TcpProxy;
use support::{Client, LIMIT, eventually, pg_addr, pg_url, refused_addr};

const GUIDE: &str = include_str!("../../src/docs/incident.md");

/// The guide's sample: the first `text` block after "# The log lines".
fn sample() -> Vec<Line> {
    Line::block(GUIDE, "# The log lines", 0)
}

#[test]
fn the_sample_s_lines_parse() {
    let lines = sample();
    assert!(lines.len() >= 5, "{lines:?}");
    let line = Line::parse(
        r#"WARN  tower_health::monitor::transitions: health status changed question="health" from=healthy to=degraded reason=optional database replica is not_ready (refused) subject=replica causes=1"#,
    )
    .unwrap();
    assert_eq!(line.level, "WARN");
    assert_eq!(line.target, "tower_health::monitor::transitions");
    assert_eq!(line.message, "health status changed");
    assert_eq!(
        line.fields,
        ["question", "from", "to", "reason", "subject", "causes"]
    );
}

#[tokio::test]
async fn the_incident_guide_s_sample_log_is_what_a_run_logs() {
    require_postgres!();
    let replica_addr = refused_addr().await;
    let replica = TcpProxy::start_on(replica_addr, pg_addr()).await;
    let admin = refused_addr().await;
    // The guide's command, on ports of the test's own.
    let example = Example::spawn(
        "admin",
        &[
            ("DATABASE_URL", pg_url()),
            (
                "DATABASE_URL_REPLICA",
                format!("postgres://postgres@{replica_addr}/postgres?sslmode=disable"),
            ),
            ("TOWER_HEALTH_OPTIONAL", "replica".into()),
            ("TOWER_HEALTH_HEALTH_INTERVAL", "2s".into()),
            ("TOWER_HEALTH_ADMIN_PORT", admin.port().to_string()),
            ("RUST_LOG", "info".into()),
        ],
    );
    let client = Client::new();
    let health_is = |word: &'static str| {
        let client = &client;
        async move {
            let reached = eventually(LIMIT, || async {
                client.try_get(admin, "/health").await.is_ok_and(|reply| {
                    reply.status == StatusCode::OK && reply.json()["status"] == word
                })
            })
            .await;
            assert!(reached, "/health never said {word}");
        }
    };
    health_is("healthy").await;
    // The replica goes away (its port refuses), and comes back.
    drop(replica);
    health_is("degraded").await;
    let _replica = TcpProxy::start_on(replica_addr, pg_addr()).await;
    health_is("healthy").await;
    example.sigterm();
    let (status, log) = example.exit_within(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}: {log}");

    // Each line with when it was logged, in seconds of the day.
    let logged: Vec<(f64, Line)> = log
        .lines()
        .filter_map(|line| {
            let (at, rest) = line.split_once(' ')?;
            Some((seconds_of_day(at)?, Line::parse(rest)?))
        })
        .collect();
    // In the guide's order, but two tasks log in either order what they did at about the same
    // time (the first readiness and health rounds, both run at the start; the drain delay's
    // end and the admin server's close): a line may also be found among the lines before the
    // last one matched, if it was logged within a second of it.
    let mut from = 0;
    let mut last: Option<usize> = None;
    for line in sample() {
        let found = logged[from..]
            .iter()
            .position(|(_, logged)| *logged == line)
            .map(|found| from + found)
            .or_else(|| {
                let last = last?;
                let at = logged[last].0;
                (0..last)
                    .rev()
                    .take_while(|&before| at - logged[before].0 <= 1.0)
                    .find(|&before| logged[before].1 == line)
            });
        assert!(
            found.is_some(),
            "the guide's line {line:?} is not in the run's log (after the lines matched before it); \
             the run logged:\n{log}"
        );
        last = found.max(last);
        from = last.unwrap() + 1;
    }
}

/// `2026-12-06T07:38:49.214229Z` as seconds since that day's midnight.
fn seconds_of_day(at: &str) -> Option<f64> {
    let time = at.split_once('T')?.1.strip_suffix('Z')?;
    let mut parts = time.split(':');
    let (hours, minutes, seconds) = (parts.next()?, parts.next()?, parts.next()?);
    let number = |text: &str| text.parse::<f64>().ok();
    Some(number(hours)? * 3600.0 + number(minutes)? * 60.0 + number(seconds)?)
}
