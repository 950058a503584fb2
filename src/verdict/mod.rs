//! What the monitor concludes each round: one verdict per question.
//!
//! Verdicts are immutable snapshots. [`HealthHandle`](crate::HealthHandle) hands out the latest
//! of each as an `Arc`; the probe endpoints answer from responses rendered from them once per
//! round.

mod cause;
mod component;
mod fleet;
mod group;
mod health;
mod outcome;
mod pool;
mod readiness;

pub(crate) use self::cause::Audience;
pub use self::cause::Cause;
pub use self::component::ComponentReport;
pub use self::fleet::FleetGuard;
#[cfg_attr(not(feature = "redis"), allow(unused_imports))]
pub(crate) use self::fleet::{Fraction, Member, Standing};
pub use self::group::{GroupMemberState, GroupVerdict};
pub use self::health::HealthVerdict;
pub use self::outcome::{CheckOutcome, CheckStatus, TimeoutDetail};
pub use self::pool::PoolVerdict;
#[cfg(any(feature = "grpc", feature = "haproxy-agent", test))]
pub(crate) use self::readiness::Failing;
pub(crate) use self::readiness::ReadinessRules;
pub use self::readiness::ReadinessVerdict;
#[cfg(feature = "grpc")]
pub(crate) use self::readiness::Streaks;
pub use crate::status::Status;
