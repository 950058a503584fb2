//! Components: checks of your own (a cache, a queue, a downstream service) that move the
//! health verdict.
//!
//! A [`Component`] answers "is this subsystem fine right now?". Register one on the
//! [`HealthConfig`](crate::HealthConfig) with a [`ComponentSpec`]: its name, whether it is
//! critical, whether it also gates readiness, its timeout, its cadence and its hysteresis.
//! Components run in the health round, in parallel with the default database's check and
//! under the round's deadline; they change what the round renders, never what a probe costs.
//!
//! - A **non-critical** component in trouble makes `/health` answer 200 `degraded`: keep
//!   serving, but look into it.
//! - A **critical** one makes it 503 `unhealthy`.
//! - Readiness ignores components unless one is declared to
//!   [gate readiness](ComponentSpec::gates_readiness).
//!
//! A component is a dependency the application can degrade around; a store its requests
//! cannot do without is a database: see [below](#a-database-or-a-component), the same words
//! as in [`check`](crate::check#a-database-or-a-component).
//!
//! A component that panics is reported `error` and one that has not answered by its timeout
//! `timed_out`, for that component alone: the monitor and the other checks go on. A check
//! still running from an earlier round is joined, never started a second time.
//!
//! A component that passes may say what it checked and what it saw: a
//! [`CheckReport`](crate::check::CheckReport) with a `target` and `details` (a latency, a
//! server version), shown under the component in `/health` where targets are shown.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use tower_health::component::{self, ComponentSpec};
//! use tower_health::HealthConfig;
//!
//! let config = HealthConfig::new().component(
//!     ComponentSpec::new(
//!         "cache",
//!         component::from_fn(|| async {
//!             // Ask the cache whether it answers; an `Err(CheckError)` reports trouble, and
//!             // `Ok(())` that it is fine, with nothing more to say.
//!             Ok(())
//!         }),
//!     )
//!     .critical(false)
//!     .timeout(Duration::from_millis(200))
//!     .failures_before_trouble(3),
//! );
//! # let _ = config;
//! ```
//!
#![doc = include_str!("../docs/database_or_component.md")]
//!
//! # Ready-made components
//!
//! - [`Tcp`] (feature `tcp`): is `host:port` reachable? Also from the environment:
//!   `TOWER_HEALTH_TCP_<NAME>=host:port`.
//! - [`Http`] (feature `http-check`): does an HTTP dependency answer `GET <url>` with a 2xx?
//!   Also from the environment: `TOWER_HEALTH_HTTP_<NAME>=url`.
//! - [`Redis`] (feature `redis`): does Redis answer `PING`? Through the application's own
//!   connection or one of its own. Also from the environment:
//!   `TOWER_HEALTH_REDIS_<NAME>=redis://...`.
//! - [`DiskSpace`] (feature `disk`): is there enough free space where the application
//!   writes?
//! - [`RuntimeWatcher`]: is the Tokio runtime starved (a timer firing late because a task
//!   blocks a worker thread)?
//!
//! # States
//!
//! Each component is `unknown` until its first conclusive result, then `healthy`, or
//! (`degraded` when non-critical, `unhealthy` when critical) once it has failed
//! [`failures_before_trouble`](ComponentSpec::failures_before_trouble) checks in a row, and
//! `healthy` again after
//! [`successes_before_recovery`](ComponentSpec::successes_before_recovery) successes in a
//! row. How `unknown` counts toward the overall status is
//! [`HealthConfig::unknown_components`](crate::HealthConfig::unknown_components).
//!
// Without their features, the ready-made components above link to the crate's feature table
// (a link reference definition, which must not follow a paragraph line: hence the `//!` above).
#![cfg_attr(not(feature = "tcp"), doc = "[`Tcp`]: crate#feature-flags")]
#![cfg_attr(not(feature = "http-check"), doc = "[`Http`]: crate#feature-flags")]
#![cfg_attr(feature = "redis", doc = "[`Redis`]: crate::redis::Redis")]
#![cfg_attr(not(feature = "redis"), doc = "[`Redis`]: crate#feature-flags")]
#![cfg_attr(not(feature = "disk"), doc = "[`DiskSpace`]: crate#feature-flags")]

mod check;
#[cfg(feature = "disk")]
mod disk;
mod from_fn;
#[cfg(feature = "http-check")]
mod http;
mod runtime;
mod spec;
#[cfg(feature = "tcp")]
mod tcp;

pub use self::check::Component;
#[cfg(feature = "disk")]
#[cfg_attr(docsrs, doc(cfg(feature = "disk")))]
pub use self::disk::DiskSpace;
pub use self::from_fn::from_fn;
#[cfg(feature = "http-check")]
#[cfg_attr(docsrs, doc(cfg(feature = "http-check")))]
pub use self::http::Http;
pub use self::runtime::RuntimeWatcher;
pub use self::spec::ComponentSpec;
#[cfg(feature = "tcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "tcp")))]
pub use self::tcp::Tcp;
pub use crate::verdict::component_status::{ComponentStatus, UnknownComponents};
