//! Database checks: what the monitor runs against each configured database.
//!
//! A [`DatabaseCheck`] answers one question, "can I use this database right now?", as fast as
//! the database allows. The monitor (not the check) owns the deadlines: it runs every check in
//! its own task, waits for it at most until the round's deadline, and never starts a second
//! check on a database while the first is still running. A check that runs past the
//! [check limit](crate::HealthConfig::check_limit) (10 s by default) is dropped, and the
//! next round starts a new one; a check should therefore release what it holds when dropped
//! (the [PostgreSQL checks] close the connection they were using).
//!
#![doc = include_str!("../docs/database_or_component.md")]
//!
//! The PostgreSQL checks (through `bb8`, `deadpool-postgres` or sqlx) are in
//! [`postgres`]. Other databases or pools implement [`DatabaseCheck`]
//! themselves:
//!
//! ```
//! use tower_health::check::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck};
//!
//! #[derive(Debug)]
//! struct AlwaysDown;
//!
//! impl DatabaseCheck for AlwaysDown {
//!     fn vendor(&self) -> &'static str {
//!         "example"
//!     }
//!
//!     fn check(&self) -> CheckFuture {
//!         Box::pin(async { Err(CheckError::new(CheckErrorKind::Refused, "connection refused")) })
//!     }
//! }
//! ```
//!
// Without a PostgreSQL feature, the links above go to the crate's feature table (a link
// reference definition, which must not follow a paragraph line: hence the `//!` above).
#![cfg_attr(
    any(
        feature = "postgres",
        feature = "deadpool",
        feature = "sqlx-0-8",
        feature = "sqlx-0-9"
    ),
    doc = "[PostgreSQL checks]: crate::postgres\n[`postgres`]: crate::postgres"
)]
#![cfg_attr(
    not(any(
        feature = "postgres",
        feature = "deadpool",
        feature = "sqlx-0-8",
        feature = "sqlx-0-9"
    )),
    doc = "[PostgreSQL checks]: crate#feature-flags\n[`postgres`]: crate#feature-flags"
)]

// `pub(crate)`: the PostgreSQL backends read an error's chain of sources as the checks here do.
pub(crate) mod report;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

pub use self::report::CheckReport;
pub use crate::verdict::error::{CheckError, CheckErrorKind};
pub use crate::verdict::pool_stats::PoolStats;

/// The future a [`DatabaseCheck`] or a [`Component`](crate::component::Component) returns:
/// `'static` so that the monitor can run it in a task of its own and leave it running past a
/// round's deadline. It passes with a [`CheckReport`] (`CheckReport::default()` reports
/// nothing) or fails with a [`CheckError`].
pub type CheckFuture =
    Pin<Box<dyn Future<Output = Result<CheckReport, CheckError>> + Send + 'static>>;

/// One database the monitor checks.
///
/// See the [module docs](self) for an example.
pub trait DatabaseCheck: fmt::Debug + Send + Sync + 'static {
    /// The database vendor, reported as `pool_info.vendor` (for example `"postgresql"`).
    fn vendor(&self) -> &'static str;

    /// Checks the database once: a [`CheckReport`] when it is usable (with what the check
    /// saw, if it says), the reason otherwise.
    ///
    /// The monitor bounds the wait and drops the future past the check limit; it is never
    /// started again while a previous one is still running.
    fn check(&self) -> CheckFuture;

    /// Statistics of the pool the check goes through, if there is one.
    ///
    /// Called once per round, right after the check; it must not block.
    fn pool_stats(&self) -> Option<PoolStats> {
        None
    }

    /// What the check connects to, for the health body's `target` (host, port, database
    /// name); it must never carry a password (the monitor passes it through
    /// [`redact`](crate::redact) anyway). Asked once, when the monitor starts; shown for every
    /// result, unless a passing check's [`CheckReport::target`] names another for its own.
    /// `None` leaves the key out.
    ///
    /// Defaults to `None`.
    fn target(&self) -> Option<String> {
        None
    }
}
