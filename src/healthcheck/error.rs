//! Why a container health check did not pass.

use std::fmt;
use std::time::Duration;

#[cfg(feature = "grpc")]
use crate::grpc::pb::health_check_response::ServingStatus as WireStatus;

/// The forms a target may take, for the error that says it is none of them.
#[cfg(feature = "grpc")]
const TARGETS: &str = "an http://host:port/path or grpc://host:port/service target";
#[cfg(not(feature = "grpc"))]
const TARGETS: &str = "an http://host:port/path URL (grpc:// needs the feature `grpc`)";

/// Why a health check did not pass, for the line [`run`](super::run) writes.
#[derive(Debug)]
pub(crate) enum HealthcheckError {
    /// The target is not `http://host:port/path` or `grpc://host:port/service` (no TLS:
    /// probe loopback); the target as given, [redacted](crate::redact).
    Url(String),
    /// No answer within the timeout.
    TimedOut(Duration),
    /// The connection failed (refused, reset, closed early, or the server ended the call).
    Io(std::io::Error),
    /// The answer is not what the protocol says (not HTTP/1 or HTTP/2, no `grpc-status`, a
    /// message that is not one `HealthCheckResponse`, or longer than the check reads); what
    /// is wrong with it.
    Malformed(&'static str),
    /// The endpoint answered with an HTTP status that is not 2xx (for gRPC, not 200).
    Status(u16),
    /// The gRPC call ended with an error status: `NOT_FOUND` for a service the server does
    /// not know, `UNIMPLEMENTED` for a server without `grpc.health.v1`; the status's message,
    /// on one line and shortened.
    #[cfg(feature = "grpc")]
    GrpcStatus(tonic::Code, String),
    /// `grpc.health.v1.Health/Check` answered a status other than `SERVING`: `NOT_SERVING`,
    /// `UNKNOWN`, or `SERVICE_UNKNOWN` from a server that answers an unknown service so.
    #[cfg(feature = "grpc")]
    NotServing(WireStatus),
}

impl fmt::Display for HealthcheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(url) => write!(f, "not {TARGETS}: {url}"),
            Self::TimedOut(timeout) => {
                write!(
                    f,
                    "no answer within {}",
                    humantime::format_duration(*timeout)
                )
            }
            Self::Io(error) => write!(f, "connection failed: {error}"),
            Self::Malformed(why) => write!(f, "malformed answer: {why}"),
            Self::Status(status) => write!(f, "answered {status}"),
            // grpc_health_probe's words, so that an operator's searches still find them.
            #[cfg(feature = "grpc")]
            Self::GrpcStatus(tonic::Code::Unimplemented, _) => f.write_str(
                "this server does not implement the grpc health protocol (grpc.health.v1.Health)",
            ),
            #[cfg(feature = "grpc")]
            Self::GrpcStatus(code, message) => {
                write!(f, "health rpc failed: code = {code:?} desc = {message}")
            }
            #[cfg(feature = "grpc")]
            Self::NotServing(status) => write!(
                f,
                "service unhealthy (responded with {:?})",
                status.as_str_name()
            ),
        }
    }
}

impl std::error::Error for HealthcheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(error) => Some(error),
            Self::Url(_) | Self::TimedOut(_) | Self::Malformed(_) | Self::Status(_) => None,
            #[cfg(feature = "grpc")]
            Self::GrpcStatus(..) | Self::NotServing(_) => None,
        }
    }
}
