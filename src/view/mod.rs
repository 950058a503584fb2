//! One read of a monitor's verdicts for every reader.
//!
//! The monitor publishes verdicts; what a probe answers also depends on the drain, an
//! operator's hold, whether the process has started, how old the verdict is, and whether
//! readiness is still waiting out its return after an outage. Those rules
//! live in one function here, and every reader applies it: the HTTP layers and the admin
//! server (per request, on the pre-rendered responses), metrics, your own code, and gRPC. So
//! two transports never disagree, and a drain reaches them all at the same instant.
//!
//! [`HealthHandle::view`](crate::HealthHandle::view) reads the [`View`] now;
//! [`HealthHandle::watch`](crate::HealthHandle::watch) returns a [`ViewWatch`] that wakes on
//! every change of it: each publication, the drain starting, a hold placed or released, the
//! start, a verdict going stale (found on time, without polling, even when the monitor
//! itself is stuck), a return's delay running out, and a failure lasting the
//! [debounce](crate::HealthConfig::debounce) (what a gRPC `Watch` stream and the HAProxy
//! agent then say).
//!
//! # Example
//!
//! ```
//! use tower_health::{HealthConfig, HealthMonitor, Probe};
//! use tower_health::view::Condition;
//!
//! # #[tokio::main]
//! # async fn main() {
//! let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
//! let mut watch = health.watch();
//! // No database configured: readiness passes with nothing to check once a round is done.
//! let view = loop {
//!     let view = watch.changed().await.expect("the monitor is running");
//!     if view.answer(Probe::Startup).passing {
//!         break view;
//!     }
//! };
//! let ready = view.answer(Probe::Ready);
//! assert!(ready.passing);
//! assert_eq!(ready.condition, Condition::Verdict);
//! assert_eq!(ready.status, "ready");
//! # }
//! ```

mod answer;
mod checks;
mod decide;
pub(crate) mod published;
pub(crate) mod reading;
mod snapshot;
mod startup;
mod store;
mod watch;

pub use self::answer::{Answer, Condition};
pub(crate) use self::checks::{Check, Checked, Mark, group_checks};
pub(crate) use self::decide::{alive, startup, verdict_answer};
pub(crate) use self::reading::{Judgement, PublishedVerdict, Reads};
pub use self::snapshot::View;
pub(crate) use self::snapshot::ViewInputs;
pub(crate) use self::startup::Phase as StartupPhase;
pub(crate) use self::store::{Intent, Known, Placeholders, Store};
pub use self::watch::ViewWatch;
