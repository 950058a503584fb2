//! What the examples share: logging, the listen address, and the databases to check.
#![allow(dead_code)] // not every example uses every helper

use std::env;
use std::error::Error;
use std::future::Future;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use tower_health::HealthConfig;
use tower_health::postgres::PostgresCheck;
use tracing_subscriber::EnvFilter;

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Logs to stderr, filtered by `RUST_LOG` (default `info`); colours only on a terminal, so
/// that piped or collected logs carry no escape codes.
pub(crate) fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Runs an example's `main`, printing a start-up error as a person reads it (`error: ...`)
/// rather than as a `Debug` dump, and exiting non-zero.
pub(crate) async fn run(main: impl Future<Output = Result<(), Box<dyn Error>>>) -> ExitCode {
    match main.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// With `--health-check` on the command line, the exit code of a container health check
/// against this example's own server: `HEALTH_CHECK_URL`, default `default_target` of
/// `LISTEN_ADDR` (an unspecified address probed on loopback); `None` otherwise.
pub(crate) fn health_check_flag(default_target: fn(&str) -> String) -> Option<ExitCode> {
    if !env::args().skip(1).any(|arg| arg == "--health-check") {
        return None;
    }
    let target = env::var("HEALTH_CHECK_URL").unwrap_or_else(|_| {
        let addr = listen_addr()
            .replace("0.0.0.0:", "127.0.0.1:")
            .replace("[::]:", "[::1]:");
        default_target(&addr)
    });
    Some(tower_health::healthcheck::run(
        &target,
        Duration::from_secs(2),
    ))
}

/// `LISTEN_ADDR`, default `127.0.0.1:8080`.
pub(crate) fn listen_addr() -> String {
    env::var("LISTEN_ADDR").unwrap_or_else(|_| "127.0.0.1:8080".to_owned())
}

/// `HealthConfig::from_env()` plus the databases of `DATABASE_URL` (default the local
/// PostgreSQL; set but empty, no database at all) and `DATABASE_URL_<NAME>`.
pub(crate) fn health_config() -> Result<HealthConfig, Box<dyn Error>> {
    let mut config = HealthConfig::from_env()?;
    match env::var("DATABASE_URL") {
        Ok(url) if url.trim().is_empty() => return Ok(config.without_databases()),
        Ok(url) => config = config.database("default", connect("DATABASE_URL", &url)?),
        // `TOWER_HEALTH_DATABASE_URL` or `BALDUR_SQL_DSN` may have set one already.
        Err(_) if config.database_names().next().is_some() => {}
        Err(_) => config = config.database("default", connect("default", DEFAULT_DATABASE_URL)?),
    }
    let mut named: Vec<_> = env::vars()
        .filter_map(|(key, url)| {
            key.strip_prefix("DATABASE_URL_")
                .map(|name| (name.to_owned(), url))
        })
        .collect();
    named.sort();
    for (name, url) in named {
        let check = connect(&format!("DATABASE_URL_{name}"), &url)?;
        config = config.database(&name.to_ascii_lowercase(), check);
    }
    tracing::info!(databases = ?config.database_names().collect::<Vec<_>>(), "checking");
    Ok(config)
}

fn connect(variable: &str, url: &str) -> Result<PostgresCheck, Box<dyn Error>> {
    PostgresCheck::connect(url)
        .map_err(|error| format!("{variable}={:?}: {error}", tower_health::redact(url)).into())
}
