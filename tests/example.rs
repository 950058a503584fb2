//! The examples as an operator runs them: a child process, real HTTP, a real SIGTERM.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use support::{Client, eventually, refused_addr};
use tokio::sync::Mutex;

/// The example binaries `cargo test` builds beside the test binaries.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --all-features`",
        path.display()
    );
    path
}

fn spawn(name: &str, env: &[(&str, String)]) -> Child {
    let mut command = Command::new(example(name));
    command
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("start the example")
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

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
    let delay = Duration::from_secs(2);
    let mut child = spawn(
        name,
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", String::new()),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
            ("TOWER_HEALTH_DRAIN_DELAY", "2s".into()),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "10s".into()),
        ],
    );
    let client = Client::new();
    let up = eventually(Duration::from_secs(30), || async {
        matches!(
            try_get(&client, addr, "/health/ready").await,
            Some(StatusCode::OK)
        )
    })
    .await;
    assert!(up, "the {name} example did not become ready");

    // The "load balancer": clients send ordinary requests until readiness has been 503 for
    // one second (less than the drain delay), as a balancer polling readiness would.
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
    tokio::time::sleep(Duration::from_millis(300)).await;

    let sent_at = Instant::now();
    sigterm(&child);
    let depooled = eventually(Duration::from_secs(5), || async {
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
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }

    let status = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        (status, stderr)
    });
    let (status, stderr) = tokio::time::timeout(Duration::from_secs(20), status)
        .await
        .unwrap()
        .unwrap();
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
async fn a_bad_setting_stops_the_example_at_start_naming_the_variable() {
    for (variable, value) in [
        ("TOWER_HEALTH_READINESS_TIMEOUT", "-1s"),
        (
            "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
            "sideways",
        ),
        // Read by `from_env` through the same capture as every `BALDUR_*` name.
        (
            "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
            "soon",
        ),
        ("TOWER_HEALTH_DRAIN_POLICY", "panic"),
        ("TOWER_HEALTH_STARTUP_WAITS_FOR_MARK", "perhaps"),
        ("DATABASE_URL", "postgres://app:hunter2@db:notaport/app"),
    ] {
        let child = spawn(
            "server",
            &[
                (variable, value.to_owned()),
                ("LISTEN_ADDR", "127.0.0.1:0".into()),
            ],
        );
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{variable}={value} was accepted");
        // As a person reads it, not a Debug dump: `error: NAME="value": what was expected`.
        let line = format!("error: {variable}=\"");
        assert!(
            stderr.lines().any(|error| error.starts_with(&line)),
            "{variable}: {stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{stderr}");
    }
}

async fn try_get(client: &Client, addr: std::net::SocketAddr, path: &str) -> Option<StatusCode> {
    client
        .try_get(addr, path)
        .await
        .ok()
        .map(|reply| reply.status)
}
