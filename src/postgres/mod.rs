//! PostgreSQL checks: through a `bb8` pool ([`PostgresCheck`], feature `postgres`, the
//! default), beside a `deadpool-postgres` pool ([`DeadpoolCheck`], feature `deadpool`), or
//! beside an sqlx `PgPool` ([`sqlx_0_8::SqlxCheck`], [`sqlx_0_9::SqlxCheck`], features
//! `sqlx-0-8` and `sqlx-0-9`). Each implements [`DatabaseCheck`](crate::check::DatabaseCheck),
//! and each sorts PostgreSQL's errors the same way.
//!
//! [`PostgresCheck`] runs one `SELECT 1` through a pool of its own, or beside your
//! application's pool on a connection reserved for it; [`PostgresCheckManager`] is the
//! connection manager of the small dedicated pools it builds from a connection string.
//! `DeadpoolCheck` and `SqlxCheck` keep a connection of their own beside your application's
//! pool, and report that pool's figures.
//!
//! # TLS
//!
//! A connection string's `sslmode` keeps libpq's meaning, with the `rustls` feature:
//!
#![doc = include_str!("../docs/sslmode.md")]
//!
//! # Versions
//!
//! A pool you hand to [`PostgresCheck::new`] must come from the same `bb8`, `bb8-postgres`
//! and `tokio-postgres` as this crate's (0.9, 0.9 and 0.7), or the compiler reports
//! "multiple different versions of crate `bb8`". Build it through the re-exports below to be
//! sure: `tower_health::postgres::bb8::Pool`. The other pools' versions are on their checks.
//!
// Without their features, the checks above link to the crate's feature table (a link
// reference definition, which must not follow a paragraph line: hence the `//!` above).
#![cfg_attr(
    not(feature = "postgres"),
    doc = "[`PostgresCheck`]: crate#feature-flags\n\
           [`PostgresCheck::new`]: crate#feature-flags\n\
           [`PostgresCheckManager`]: crate#feature-flags"
)]
#![cfg_attr(
    not(feature = "deadpool"),
    doc = "[`DeadpoolCheck`]: crate#feature-flags"
)]
#![cfg_attr(
    not(feature = "sqlx-0-8"),
    doc = "[`sqlx_0_8::SqlxCheck`]: crate#feature-flags"
)]
#![cfg_attr(
    not(feature = "sqlx-0-9"),
    doc = "[`sqlx_0_9::SqlxCheck`]: crate#feature-flags"
)]

// The bb8 check (feature `postgres`).
#[cfg(feature = "postgres")]
mod bb8_reserved;
#[cfg(feature = "postgres")]
mod check;
#[cfg(feature = "postgres")]
mod connector;
#[cfg(feature = "postgres")]
mod error;
#[cfg(feature = "postgres")]
mod manager;
#[cfg(feature = "postgres")]
mod own_pool;
#[cfg(feature = "postgres")]
mod recycle;
#[cfg(all(feature = "postgres", feature = "rustls"))]
mod rustls;
#[cfg(feature = "postgres")]
mod tls;

// What every PostgreSQL backend shares: what PostgreSQL's errors mean, and the connection
// each reserves beside the application's pool.
mod classify;
mod reserved;

#[cfg(feature = "deadpool")]
mod deadpool;
#[cfg(feature = "sqlx-0-8")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlx-0-8")))]
pub mod sqlx_0_8;
#[cfg(feature = "sqlx-0-9")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlx-0-9")))]
pub mod sqlx_0_9;

#[cfg(feature = "postgres")]
use std::time::Duration;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use bb8;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use bb8_postgres;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use tokio_postgres;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::check::PostgresCheck;
#[cfg(feature = "deadpool")]
#[cfg_attr(docsrs, doc(cfg(feature = "deadpool")))]
pub use self::deadpool::DeadpoolCheck;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::manager::{PostgresCheckManager, PostgresConnection};

/// How long [`PostgresCheckManager`] lets one connection attempt take, TCP connect and
/// PostgreSQL startup together.
#[cfg(feature = "postgres")]
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
