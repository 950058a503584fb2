//! The examples as an operator runs them: a child process, real HTTP, a real SIGTERM.

use crate::support;

use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use support::child::{Example, example};
use support::slow_reader::SlowReader;
use support::{Client, eventually, refused_addr};
use tokio::sync::Mutex;

#[derive(Debug, Default)]
struct Log {
    ok: usize,
    ok_during_drain: usize,
    closed_hints: usize,
    failures: Vec<String>,
}

/// SIGTERM while clients keep sending ordinary requests: every request succeeds, readiness
/// turns 503 while liveness stays 200, traffic keeps being served through the drain delay, and
/// the process exits cleanly.
async fn rolling_update(name: &str) {
    let addr = refused_addr().await;
    // Long enough that the clients stop well inside it even on a loaded machine: they stop
    // after a few answers during the drain, or one second, whichever comes first.
    let delay = Duration::from_secs(3);
    let child = Example::spawn(
        name,
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", String::new()),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
            ("TOWER_HEALTH_DRAIN_DELAY", "3s".into()),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "10s".into()),
        ],
    );
    let client = Client::new();
    let up = eventually(support::LIMIT, || async {
        matches!(
            try_get(&client, addr, "/health/ready").await,
            Some(StatusCode::OK)
        )
    })
    .await;
    assert!(up, "the {name} example did not become ready");

    // The "load balancer": clients send ordinary requests until they have seen the drain
    // (readiness 503, then a few answers with `Connection: close`), as a balancer polling
    // readiness would.
    let draining = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Log::default()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (draining, stop, log) = (draining.clone(), stop.clone(), log.clone());
            tokio::spawn(async move {
                let client = Client::new();
                while !stop.load(Ordering::SeqCst) {
                    let during_drain = draining.load(Ordering::SeqCst);
                    match client.try_get(addr, "/").await {
                        Ok(reply) if reply.status == StatusCode::OK => {
                            let mut log = log.lock().await;
                            log.ok += 1;
                            log.ok_during_drain += usize::from(during_drain);
                            log.closed_hints +=
                                usize::from(reply.header("connection") == Some("close"));
                        }
                        Ok(reply) => log
                            .lock()
                            .await
                            .failures
                            .push(format!("status {}", reply.status)),
                        Err(error) => log.lock().await.failures.push(error),
                    }
                }
            })
        })
        .collect();
    let sending = eventually(support::LIMIT, || async { log.lock().await.ok >= 4 }).await;
    assert!(sending, "the clients got no answers before the SIGTERM");

    let sent_at = Instant::now();
    child.sigterm();
    let depooled = eventually(support::LIMIT, || async {
        try_get(&client, addr, "/health/ready").await == Some(StatusCode::SERVICE_UNAVAILABLE)
    })
    .await;
    assert!(depooled, "readiness never turned 503");
    draining.store(true, Ordering::SeqCst);
    let seen_503_after = sent_at.elapsed();
    assert_eq!(
        try_get(&client, addr, "/health/live").await,
        Some(StatusCode::OK)
    );
    assert_eq!(
        try_get(&client, addr, "/health/ping").await,
        Some(StatusCode::OK)
    );
    // Not a bound that can fail: the assertions below check what was served meanwhile.
    let _ = eventually(Duration::from_secs(1), || async {
        let log = log.lock().await;
        log.ok_during_drain >= 5 && log.closed_hints >= 1
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(30), worker)
            .await
            .expect("a client stopped within 30 s")
            .unwrap();
    }

    let (status, stderr) = child.exit_within(Duration::from_secs(20)).await;
    let exited_after = sent_at.elapsed();
    let log = log.lock().await;
    eprintln!(
        "{name}: {} requests ok ({} during the drain, {} with Connection: close), readiness 503 after {seen_503_after:?}, exit after {exited_after:?}",
        log.ok, log.ok_during_drain, log.closed_hints
    );
    assert!(
        log.failures.is_empty(),
        "failed requests: {:?}",
        log.failures
    );
    assert!(
        log.ok_during_drain > 0,
        "no traffic was served during the drain"
    );
    assert!(
        log.closed_hints > 0,
        "no Connection: close hint during the drain"
    );
    assert!(
        exited_after >= delay,
        "exited before the drain delay: {exited_after:?}"
    );
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("drain started"), "{stderr}");
}

#[tokio::test]
async fn the_axum_example_drains_on_sigterm_without_failing_a_request() {
    rolling_update("server").await;
}

#[tokio::test]
async fn the_hyper_example_drains_on_sigterm_without_failing_a_request() {
    rolling_update("hyper").await;
}

#[tokio::test]
async fn the_hyper_example_closes_a_client_that_never_reads() {
    let addr = refused_addr().await;
    let _child = Example::spawn(
        "hyper",
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", String::new()),
            ("CLIENT_TIMEOUT", "1s".into()),
        ],
    );
    let client = Client::new();
    let up = eventually(support::LIMIT, || async {
        try_get(&client, addr, "/health/live").await == Some(StatusCode::OK)
    })
    .await;
    assert!(up, "the hyper example did not start");
    let mut slow = SlowReader::start(addr, "/health/live").await;
    slow.closed_by_server().await;
    assert_eq!(
        try_get(&client, addr, "/health/live").await,
        Some(StatusCode::OK)
    );
}

#[tokio::test]
async fn a_bad_setting_stops_the_example_at_start_naming_the_variable() {
    for (variable, value, reason) in [
        (
            "TOWER_HEALTH_READINESS_TIMEOUT",
            "-1s",
            "expected a positive duration",
        ),
        (
            "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
            "sideways",
            "expected not_ready or ready",
        ),
        // Read by `from_env` through the same capture as every `BALDUR_*` name.
        (
            "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
            "soon",
            "expected a positive number of seconds",
        ),
        // Would overflow the staleness bound (three intervals plus the timeout).
        (
            "TOWER_HEALTH_READINESS_INTERVAL",
            "1000000000000000s",
            "expected at most 1year",
        ),
        // A near-zero deadline, from a unit mistake.
        (
            "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
            "1e-10",
            "expected at least 1ms",
        ),
        (
            "TOWER_HEALTH_DRAIN_POLICY",
            "panic",
            "expected serve or reject",
        ),
        (
            "TOWER_HEALTH_STARTUP_WAITS_FOR_MARK",
            "perhaps",
            "expected true or false",
        ),
        (
            "DATABASE_URL",
            "postgres://app:hunter2@db:notaport/app",
            "invalid postgresql connection string",
        ),
        // A quote in the password: it must not end the masking.
        (
            "TOWER_HEALTH_DATABASE_URL",
            "postgres://app:it's@db:notaport/app",
            "invalid postgresql connection string",
        ),
        (
            "DATABASE_URL",
            "postgres://app:it's@db:notaport/app",
            "invalid postgresql connection string",
        ),
    ] {
        let child = Example::spawn(
            "server",
            &[
                (variable, value.to_owned()),
                ("LISTEN_ADDR", "127.0.0.1:0".into()),
            ],
        );
        let (status, stderr) = child.exit_within(Duration::from_secs(30)).await;
        assert!(!status.success(), "{variable}={value} was accepted");
        // As a person reads it, not a Debug dump: `error: NAME="value": what was expected`.
        let start = format!("error: {variable}=\"");
        let line = stderr.lines().find(|line| line.starts_with(&start));
        let line = line.unwrap_or_else(|| panic!("{variable}={value}: {stderr}"));
        assert!(line.contains(reason), "{variable}={value}: {line}");
        for secret in ["hunter2", "it's", "it'"] {
            assert!(!stderr.contains(secret), "{secret} leaked: {stderr}");
        }
    }
}

#[tokio::test]
async fn a_misspelt_variable_is_named_at_start_with_the_closest_name() {
    let child = Example::spawn(
        "server",
        &[
            ("TOWER_HEALTH_READINESS_TIMOUT", "300ms".into()),
            // Read by `DrainConfig` and `AdminConfig`, not by `HealthConfig`, whose
            // `from_env` runs first: still known.
            ("TOWER_HEALTH_DRAIN_DELAY", "1s".into()),
            ("TOWER_HEALTH_ADMIN_PORT", "9999".into()),
            // Stops the example once both `from_env` have run.
            ("TOWER_HEALTH_DRAIN_POLICY", "panic".into()),
            ("LISTEN_ADDR", "127.0.0.1:0".into()),
            ("NO_COLOR", "1".into()),
        ],
    );
    let (status, stderr) = child.exit_within(Duration::from_secs(30)).await;
    assert!(!status.success(), "{stderr}");
    let warning = "TOWER_HEALTH_READINESS_TIMOUT is not read by any setting; did you mean TOWER_HEALTH_READINESS_TIMEOUT?";
    assert_eq!(stderr.matches(warning).count(), 1, "once: {stderr}");
    assert!(!stderr.contains("TOWER_HEALTH_DRAIN_DELAY"), "{stderr}");
    let admin = stderr.contains(
        "TOWER_HEALTH_ADMIN_PORT is read by the admin server, which this build does not include (feature `admin`)",
    );
    assert_eq!(admin, !cfg!(feature = "admin"), "{stderr}");
    assert!(
        stderr.contains("error: TOWER_HEALTH_DRAIN_POLICY="),
        "{stderr}"
    );
}

async fn try_get(client: &Client, addr: std::net::SocketAddr, path: &str) -> Option<StatusCode> {
    client
        .try_get(addr, path)
        .await
        .ok()
        .map(|reply| reply.status)
}

/// `server --health-check` against a running instance, as a container runtime runs it.
fn health_check(env: &[(&str, String)]) -> ExitStatus {
    let mut command = Command::new(example("server"));
    command
        .arg("--health-check")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command.status().expect("run the health check")
}

/// Runs the blocking health check off the runtime, bounded by `support::LIMIT`.
async fn health_check_async(env: Vec<(&'static str, String)>) -> ExitStatus {
    let run = tokio::task::spawn_blocking(move || health_check(&env));
    support::bounded("the health check", run).await.unwrap()
}

#[tokio::test]
async fn the_health_check_mode_exits_0_when_ready_and_1_when_draining_refused_or_stalled() {
    let addr = refused_addr().await;
    let server = Example::spawn(
        "server",
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", String::new()),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
            ("TOWER_HEALTH_DRAIN_DELAY", "30s".into()),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "60s".into()),
        ],
    );
    let client = Client::new();
    let up = eventually(support::LIMIT, || async {
        matches!(
            try_get(&client, addr, "/health/ready").await,
            Some(StatusCode::OK)
        )
    })
    .await;
    assert!(up, "the server example did not become ready");
    let env = vec![("LISTEN_ADDR", addr.to_string())];
    assert!(health_check_async(env.clone()).await.success(), "ready");

    server.sigterm();
    let draining = eventually(support::LIMIT, || async {
        matches!(
            try_get(&client, addr, "/health/ready").await,
            Some(StatusCode::SERVICE_UNAVAILABLE)
        )
    })
    .await;
    assert!(draining, "readiness never turned 503 after SIGTERM");
    assert_eq!(health_check_async(env).await.code(), Some(1), "draining");

    let refused = refused_addr().await;
    let status = health_check_async(vec![("LISTEN_ADDR", refused.to_string())]).await;
    assert_eq!(status.code(), Some(1), "refused");

    // Accepts and never answers: the check gives up at its own timeout (2 s).
    let stalled = support::StalledListener::start().await;
    let status = health_check_async(vec![(
        "HEALTH_CHECK_URL",
        format!("http://{}/health/ready", stalled.addr),
    )])
    .await;
    assert_eq!(status.code(), Some(1), "stalled");
    assert_eq!(stalled.accepted(), 1);
}

/// One clock (issue 35 B): the example's database cut, `/health` says `unhealthy` in the
/// round readiness first answers 503 (the round publishes `/health` before readiness, so a
/// `/health` asked after readiness's 503 was seen must fail too), with the health interval at
/// its default of ten seconds; and once readiness passes again, `/health` passes. It used to
/// say `healthy` for up to a health interval over a refused database.
#[tokio::test]
async fn health_follows_a_database_cut_in_the_round_readiness_learns_it() {
    let database = support::fault_proxy::FaultProxy::postgres(support::pg_addr()).await;
    let addr = refused_addr().await;
    let _child = Example::spawn(
        "server",
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", database.pg_url("postgres", "", "postgres")),
            // An outage's return is not what this is about.
            ("TOWER_HEALTH_RETURN_JITTER", "0".into()),
        ],
    );
    let client = Client::new();
    let both = |expected: StatusCode| {
        let client = &client;
        async move {
            try_get(client, addr, "/health/ready").await == Some(expected)
                && try_get(client, addr, "/health").await == Some(expected)
        }
    };
    assert!(
        eventually(support::LIMIT, || both(StatusCode::OK)).await,
        "the example did not become ready and healthy"
    );

    database.refuse().await;
    database.cut();
    let health = health_once_readiness_is(&client, addr, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(
        health.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "/health passed after readiness failed on the cut: {}",
        health.text()
    );
    assert_eq!(health.json()["checks"]["database"], "unhealthy");

    database.pass().await;
    let health = health_once_readiness_is(&client, addr, StatusCode::OK).await;
    assert_eq!(
        health.status,
        StatusCode::OK,
        "/health failed after readiness passed again: {}",
        health.text()
    );
}

/// `/health`, asked as soon as `/health/ready` has answered `readiness` (asked every 20 ms).
async fn health_once_readiness_is(
    client: &Client,
    addr: std::net::SocketAddr,
    readiness: StatusCode,
) -> support::Reply {
    let deadline = Instant::now() + support::LIMIT;
    while try_get(client, addr, "/health/ready").await != Some(readiness) {
        assert!(
            Instant::now() < deadline,
            "readiness never answered {readiness}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.get(addr, "/health").await
}
