//! A worker with no HTTP app of its own: the admin server and a database check, nothing else.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example admin --features admin
//! ```
//!
//! then `curl -i http://127.0.0.1:9090/readiness`.
//!
//! - `DATABASE_URL`, `DATABASE_URL_<NAME>`: the databases, as for the `server` example.
//! - `BALDUR_ADMIN_PORT` / `TOWER_HEALTH_ADMIN_PORT` (default 9090), `BALDUR_ADMIN_BIND` /
//!   `TOWER_HEALTH_ADMIN_BIND` (default 127.0.0.1), `BALDUR_ADMIN_KEY`,
//!   `BALDUR_ADMIN_READONLY_KEY` (and their `TOWER_HEALTH_ADMIN_*` names): see
//!   `AdminConfig::from_env`.
//! - everything else through `HealthConfig::from_env` (the drain's `TOWER_HEALTH_DRAIN_*` too).

mod common;

use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

use tower_health::HealthMonitor;
use tower_health::admin::{AdminConfig, AdminServer};

#[tokio::main]
async fn main() -> ExitCode {
    common::run(work()).await
}

async fn work() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let health = HealthMonitor::spawn(common::health_config()?)?;
    let drain = health.drain().clone();
    let admin = AdminServer::new(AdminConfig::from_env()?, &health)
        .start()
        .await?;
    tracing::info!("admin server on http://{}", admin.local_addr());

    // The worker's own job, until SIGTERM or Ctrl-C: readiness turns 503 at once, the job
    // stops after the drain delay, and the admin server closes when the drain is over.
    let work = async {
        let mut ticks = tokio::time::interval(Duration::from_secs(5));
        let mut done = 0_u64;
        loop {
            ticks.tick().await;
            done += 1;
            tracing::info!(done, "did a unit of work");
        }
    };
    tokio::select! {
        () = drain.shutdown_signal() => {}
        () = work => {}
    }
    let drained = drain.drained().await;
    tracing::info!(abandoned = drained.abandoned, "drain over");
    admin.closed().await;
    Ok(())
}
