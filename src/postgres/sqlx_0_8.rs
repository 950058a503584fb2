//! PostgreSQL beside an sqlx 0.8 `PgPool` (feature `sqlx-0-8`; Rust 1.88, the crate's own).
//!
//! [`SqlxCheck`] pings the database on a connection of its own kept beside your application's
//! pool, and reports that pool's figures (see its docs).
//!
//! # Versions
//!
// A docs.rs link and a plain `sqlx`: an intra-doc link to another crate's item renders as
// raw brackets when that crate's docs are not built beside (`cargo doc --no-deps`).
//! The pool must come from [sqlx 0.8](https://docs.rs/sqlx/0.8), the sqlx this module
//! re-exports as `sqlx`; a pool
//! from the other line fails to compile with "multiple different versions of crate
//! `sqlx_core`". With sqlx 0.9 in your `Cargo.toml`, use
//! `tower_health::postgres::sqlx_0_9` (feature `sqlx-0-9`) instead. Both lines
//! can be on at once, each check taking its own line's pools.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use tower_health::HealthConfig;
//! use tower_health::postgres::sqlx_0_8::{SqlxCheck, sqlx};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The application's own pool.
//! let pool = sqlx::postgres::PgPoolOptions::new()
//!     .max_connections(10)
//!     .acquire_timeout(Duration::from_secs(2))
//!     .connect_lazy("postgres://postgres@127.0.0.1/postgres")?;
//! let config = HealthConfig::new().database("default", SqlxCheck::new(pool.clone()));
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

/// The sqlx 0.8 this module is built on: build the pools you hand to [`SqlxCheck`] through
/// it, or depend on the same line.
pub use ::sqlx_0_8 as sqlx;

// The same file for both lines, on purpose: each compiles it against its own `sqlx` above.
#[allow(clippy::duplicate_mod)]
#[path = "sqlx_check.rs"]
mod check;

pub use self::check::SqlxCheck;
