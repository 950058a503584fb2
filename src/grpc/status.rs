//! The serving status of one gRPC health service, and how the view's answers map to it.

use std::fmt;

use super::pb::health_check_response::ServingStatus as WireStatus;
use crate::component::ComponentStatus;
use crate::view::Condition;

/// The serving status of one service of `grpc.health.v1`.
///
/// `SERVICE_UNKNOWN` is not here: it is what [`Watch`](super::pb::health_server::Health::watch)
/// sends for a name no service has, never a status a service is in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServingStatus {
    /// No verdict yet: the first round has not completed.
    Unknown,
    /// The service is up and serving.
    Serving,
    /// The service is down, or the process is draining.
    NotServing,
}

impl ServingStatus {
    /// `"UNKNOWN"`, `"SERVING"` or `"NOT_SERVING"`: the names of the proto.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Serving => "SERVING",
            Self::NotServing => "NOT_SERVING",
        }
    }

    /// `Serving` when `passing`, `NotServing` otherwise.
    pub(crate) const fn from_passing(passing: bool) -> Self {
        if passing {
            Self::Serving
        } else {
            Self::NotServing
        }
    }

    /// What a probe's answer is on the wire, from what decided it and whether it passes:
    /// `Unknown` while no verdict exists and the monitor is running (before the first round).
    /// A monitor that is not running is a failure, as over HTTP.
    pub(crate) fn of_judged(condition: Condition, passing: bool, monitor_running: bool) -> Self {
        match condition {
            Condition::Unavailable if monitor_running => Self::Unknown,
            _ => Self::from_passing(passing),
        }
    }

    /// A component's status: healthy and degraded serve (degraded never depools), unhealthy
    /// does not, unknown is unknown.
    pub(crate) const fn of_component(status: ComponentStatus) -> Self {
        match status {
            ComponentStatus::Healthy | ComponentStatus::Degraded => Self::Serving,
            ComponentStatus::Unhealthy => Self::NotServing,
            ComponentStatus::Unknown => Self::Unknown,
        }
    }
}

impl fmt::Display for ServingStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ServingStatus> for WireStatus {
    fn from(status: ServingStatus) -> Self {
        match status {
            ServingStatus::Unknown => Self::Unknown,
            ServingStatus::Serving => Self::Serving,
            ServingStatus::NotServing => Self::NotServing,
        }
    }
}

impl From<ServingStatus> for super::pb::HealthCheckResponse {
    fn from(status: ServingStatus) -> Self {
        Self {
            status: WireStatus::from(status).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_serve_unless_unhealthy() {
        for (component, expected) in [
            (ComponentStatus::Healthy, ServingStatus::Serving),
            (ComponentStatus::Degraded, ServingStatus::Serving),
            (ComponentStatus::Unhealthy, ServingStatus::NotServing),
            (ComponentStatus::Unknown, ServingStatus::Unknown),
        ] {
            assert_eq!(
                ServingStatus::of_component(component),
                expected,
                "{component}"
            );
        }
    }

    #[test]
    fn the_wire_names_are_the_protos() {
        for status in [
            ServingStatus::Unknown,
            ServingStatus::Serving,
            ServingStatus::NotServing,
        ] {
            assert_eq!(WireStatus::from(status).as_str_name(), status.as_str());
            assert_eq!(status.to_string(), status.as_str());
        }
    }
}
