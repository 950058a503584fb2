//! What the monitor concludes each round: one verdict per question.
//!
//! Verdicts are immutable snapshots. [`HealthHandle`](crate::HealthHandle) hands out the latest
//! of each as an `Arc`; the probe endpoints answer from responses rendered from them once per
//! round.

mod cause;
mod component;
pub(crate) mod component_status;
pub(crate) mod error;
mod fleet;
mod group;
mod health;
mod outcome;
mod pool;
pub(crate) mod pool_stats;
mod readiness;
pub(crate) mod rules;
mod status;

pub(crate) use self::cause::Audience;
pub use self::cause::Cause;
pub use self::component::ComponentReport;
pub use self::fleet::FleetGuard;
#[cfg_attr(not(feature = "redis"), allow(unused_imports))]
pub(crate) use self::fleet::{Fraction, Member, Standing};
pub use self::group::GroupVerdict;
pub use self::health::HealthVerdict;
pub(crate) use self::outcome::TimeoutDetail;
pub use self::outcome::{CheckOutcome, CheckStatus};
pub use self::pool::PoolVerdict;
#[cfg(any(feature = "grpc", feature = "haproxy-agent", test))]
pub(crate) use self::readiness::Failing;
pub use self::readiness::ReadinessVerdict;
pub(crate) use self::readiness::Return;
pub(crate) use self::rules::ReadinessRules;
pub use self::status::Status;
// Public at the paths users meet them: `check::CheckError`, `check::CheckErrorKind`,
// `check::PoolStats`, `component::ComponentStatus`, `component::UnknownComponents`,
// `config::FailDirection`. Defined here, so that the vocabulary of verdicts imports nothing of
// the crate but `redact`.
pub(crate) use self::component_status::{ComponentStatus, UnknownComponents};
pub(crate) use self::error::{CheckError, CheckErrorKind};
pub(crate) use self::pool_stats::PoolStats;
#[cfg(feature = "grpc")]
pub(crate) use self::readiness::Streaks;
pub(crate) use self::rules::FailDirection;
