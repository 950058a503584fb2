//! PostgreSQL checks through `bb8` pools (feature `postgres`).
//!
//! [`PostgresCheck`](super::PostgresCheck) runs one `SELECT 1` through a pool of its own, or beside your
//! application's pool on a connection reserved for it; [`PostgresCheckManager`] is the
//! connection manager of the small dedicated pools it builds from a connection string.
//!
//! # TLS
//!
//! A connection string's `sslmode` keeps libpq's meaning, with the `rustls` feature:
//!
#![doc = include_str!("../../docs/sslmode.md")]
//!
//! # Versions
//!
//! A pool you hand to [`PostgresCheck::new`](super::PostgresCheck::new) must come from the same `bb8`, `bb8-postgres`
//! and `tokio-postgres` as this crate's (0.9, 0.9 and 0.7), or the compiler reports
//! "multiple different versions of crate `bb8`". Build it through the re-exports below to be
//! sure: `tower_health::check::postgres::bb8::Pool`.

pub(super) mod check;
pub(super) mod error;
pub(super) mod manager;
mod own_pool;
mod recycle;
mod reserved;
#[cfg(feature = "rustls")]
mod rustls;
mod tls;

use std::time::Duration;

pub use bb8;
pub use bb8_postgres;
pub use tokio_postgres;

pub(crate) use self::error::PostgresConnectError;
pub(crate) use self::manager::{PostgresCheckManager, PostgresConnection};

/// How long [`PostgresCheckManager`] lets one connection attempt take, TCP connect and
/// PostgreSQL startup together.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
