//! A fleet of separate OS processes (the example server, one per port) on one PostgreSQL and
//! one Redis: how many database queries the health rounds cost per window, with and without
//! the shared cache, for 1, 4 and 8 processes. A measurement, run by hand:
//!
//! ```text
//! cargo build --all-features --example server
//! cargo test --all-features --test it fleet:: -- --ignored --nocapture
//! ```
//!
//! Every process reaches PostgreSQL through one proxy of this test that counts the queries
//! (`Q` messages). Readiness runs once, at start (`TOWER_HEALTH_READINESS_INTERVAL=1h`), so
//! that every query counted afterwards is a health round's; a second run with the default
//! readiness cadence (1 s) shows what the shared cache does not save.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::child::example;
use support::redis_server::{redis_url, unique_prefix};
use support::{Client, LIMIT, PgProxy, eventually, pg_addr, refused_addr};

/// How long each configuration is measured, in health rounds of one second.
const WINDOWS: u64 = 15;

/// The example server processes of one run; killed when dropped.
struct Fleet(Vec<Child>);

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `size` servers on `proxy`, sharing through Redis when `shared`, and waits until
/// each answers `/health` with a round's verdict.
async fn start(size: usize, proxy: &PgProxy, shared: bool, readiness: &str) -> Fleet {
    let prefix = unique_prefix("fleet");
    let mut fleet = Fleet(Vec::new());
    let mut addrs = Vec::new();
    for index in 0..size {
        let addr = refused_addr().await;
        let mut command = Command::new(example("server"));
        command
            .env_clear()
            .env("LISTEN_ADDR", addr.to_string())
            .env(
                "DATABASE_URL",
                format!("{}&application_name=fleet-{index}", proxy.url()),
            )
            .env("TOWER_HEALTH_READINESS_INTERVAL", readiness)
            .env("TOWER_HEALTH_HEALTH_INTERVAL", "1s")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if shared {
            command
                .env("TOWER_HEALTH_REDIS_URL", redis_url())
                .env("TOWER_HEALTH_SHARED_KEY_PREFIX", &prefix);
        }
        fleet
            .0
            .push(command.spawn().expect("start the example server"));
        addrs.push(addr);
    }
    let client = Client::new();
    for addr in addrs {
        let up = eventually(LIMIT, || async {
            client
                .try_get(addr, "/health")
                .await
                .is_ok_and(|reply| reply.status == 200)
        })
        .await;
        assert!(up, "the server on {addr} did not answer 200 on /health");
    }
    fleet
}

/// Database queries per one-second window, over [`WINDOWS`] windows.
async fn queries_per_window(size: usize, shared: bool, readiness: &str) -> f64 {
    let proxy = PgProxy::start(pg_addr()).await;
    let fleet = start(size, &proxy, shared, readiness).await;
    // Past the processes' first rounds, which all compute.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = proxy.queries();
    tokio::time::sleep(Duration::from_secs(WINDOWS)).await;
    let sent = proxy.queries() - before;
    drop(fleet);
    sent as f64 / WINDOWS as f64
}

#[tokio::test]
#[ignore = "a measurement of a few minutes, run by hand"]
async fn database_queries_per_window_for_1_4_and_8_processes() {
    require_postgres!();
    require_redis!();
    println!(
        "| processes | health-round queries/s, own verdicts | with Redis | all queries/s (readiness 1s), own | with Redis |"
    );
    println!("|---|---|---|---|---|");
    for size in [1, 4, 8] {
        let alone = queries_per_window(size, false, "1h").await;
        let shared = queries_per_window(size, true, "1h").await;
        let alone_all = queries_per_window(size, false, "1s").await;
        let shared_all = queries_per_window(size, true, "1s").await;
        println!("| {size} | {alone:.2} | {shared:.2} | {alone_all:.2} | {shared_all:.2} |");
        assert!(
            shared < 2.0,
            "{size} processes: {shared} health-round queries per window"
        );
    }
}
