//! Every value of the enums a metric reports one series per value of (`1` for the current
//! one, `0` for the others), so that a series never vanishes when the value changes.
//!
//! Each list is tied to an exhaustive `match`: a new variant fails to compile here until it
//! is placed in its list, and a compile-time check holds each list to its `match`.

use crate::component::ComponentStatus;
use crate::verdict::CheckStatus;
use crate::verdict::Status;
use crate::view::Condition;

/// Every [`Condition`], in the order of its declaration.
pub(super) const CONDITIONS: [Condition; 7] = [
    Condition::Verdict,
    Condition::Draining,
    Condition::Stale,
    Condition::Unavailable,
    Condition::Held,
    Condition::Starting,
    Condition::Returning,
];

/// Where `condition` is in [`CONDITIONS`].
const fn condition_index(condition: Condition) -> usize {
    match condition {
        Condition::Verdict => 0,
        Condition::Draining => 1,
        Condition::Stale => 2,
        Condition::Unavailable => 3,
        Condition::Held => 4,
        Condition::Starting => 5,
        Condition::Returning => 6,
    }
}

/// Every health [`Status`].
pub(super) const STATUSES: [Status; 5] = [
    Status::Healthy,
    Status::Degraded,
    Status::Unhealthy,
    Status::Error,
    Status::Unavailable,
];

const fn status_index(status: Status) -> usize {
    match status {
        Status::Healthy => 0,
        Status::Degraded => 1,
        Status::Unhealthy => 2,
        Status::Error => 3,
        Status::Unavailable => 4,
    }
}

/// Every [`CheckStatus`], each a `status` label of a database (`ready`, `not_ready`,
/// `timed_out`).
pub(super) const DATABASE_STATUSES: [CheckStatus; 3] = [
    CheckStatus::Passed,
    CheckStatus::Failed,
    CheckStatus::TimedOut,
];

const fn database_status_index(status: CheckStatus) -> usize {
    match status {
        CheckStatus::Passed => 0,
        CheckStatus::Failed => 1,
        CheckStatus::TimedOut => 2,
    }
}

/// Every [`ComponentStatus`].
pub(super) const COMPONENT_STATUSES: [ComponentStatus; 4] = [
    ComponentStatus::Unknown,
    ComponentStatus::Healthy,
    ComponentStatus::Degraded,
    ComponentStatus::Unhealthy,
];

const fn component_status_index(status: ComponentStatus) -> usize {
    match status {
        ComponentStatus::Unknown => 0,
        ComponentStatus::Healthy => 1,
        ComponentStatus::Degraded => 2,
        ComponentStatus::Unhealthy => 3,
    }
}

// The ties, checked at compile time: each list holds every value once, in the order of its
// `match`.
const _: () = {
    let mut index = 0;
    while index < CONDITIONS.len() {
        assert!(condition_index(CONDITIONS[index]) == index);
        index += 1;
    }
    let mut index = 0;
    while index < STATUSES.len() {
        assert!(status_index(STATUSES[index]) == index);
        index += 1;
    }
    let mut index = 0;
    while index < DATABASE_STATUSES.len() {
        assert!(database_status_index(DATABASE_STATUSES[index]) == index);
        index += 1;
    }
    let mut index = 0;
    while index < COMPONENT_STATUSES.len() {
        assert!(component_status_index(COMPONENT_STATUSES[index]) == index);
        index += 1;
    }
};
