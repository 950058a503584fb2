//! The serving status of one gRPC health service (how the reading maps to it is
//! [`crate::dialect::grpc`]'s).

use std::fmt;

use super::pb::health_check_response::ServingStatus as WireStatus;

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
