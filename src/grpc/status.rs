//! The serving status on the wire: the dialect's words ([`ServingStatus`], with how the
//! reading maps to them, is [`crate::dialect::grpc`]'s) as the generated types spell them.

use super::ServingStatus;
use super::pb::health_check_response::ServingStatus as WireStatus;

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
