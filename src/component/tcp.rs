use std::sync::Arc;

use tokio::net::TcpStream;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};

/// A [`Component`] that opens a TCP connection to `host:port` and closes it: is the
/// dependency reachable?
///
/// The host is resolved on each check (a moved DNS name is followed), and a check that
/// passes reports the address it reached (`details.address`, such as `10.0.3.7:6379`). The
/// connection is
/// bounded by the component's timeout and the round's deadline, like every check. A failure
/// is of kind `refused` (refused, reset, unreachable), `dns` (the name did not resolve),
/// `timeout` (the operating system gave up connecting) or `other` (a target that is not a
/// `host:port`, say).
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{ComponentSpec, Tcp};
///
/// let config = HealthConfig::new()
///     .component(ComponentSpec::new("cache", Tcp::new("127.0.0.1:6379")).critical(true));
/// # let _ = config;
/// ```
///
/// Operators can declare one without code: `TOWER_HEALTH_TCP_<NAME>=host:port` adds a
/// non-critical component `<name>` (lower-cased); see [`crate::config`].
#[derive(Clone, Debug)]
pub struct Tcp {
    target: Arc<str>,
}

impl Tcp {
    /// Checks `target`, a `host:port` (`[::1]:6379` for an IPv6 address).
    #[must_use]
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into().into(),
        }
    }
}

impl Component for Tcp {
    fn check(&self) -> CheckFuture {
        let target = self.target.clone();
        Box::pin(async move {
            match TcpStream::connect(&*target).await {
                Ok(stream) => {
                    let reached = stream.peer_addr();
                    drop(stream);
                    Ok(match reached {
                        Ok(address) => CheckReport::new().detail("address", address.to_string()),
                        // Connected, then reset before the question: it was reachable.
                        Err(_) => CheckReport::new(),
                    })
                }
                Err(error) => Err(CheckError::new(
                    connect_error_kind(&error),
                    format!("connecting to {target}: {error}"),
                )),
            }
        })
    }

    fn target(&self) -> Option<String> {
        Some(crate::redact(&self.target))
    }
}

/// The category of a failed connection attempt (name resolution included).
fn connect_error_kind(error: &std::io::Error) -> CheckErrorKind {
    CheckErrorKind::from_io_chain(error).unwrap_or(CheckErrorKind::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn kind_of(target: &str) -> CheckErrorKind {
        Tcp::new(target).check().await.expect_err(target).kind()
    }

    #[tokio::test]
    async fn a_reachable_port_reports_the_address_it_reached() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let report = Tcp::new(format!("localhost:{}", address.port()))
            .check()
            .await
            .unwrap();
        let reached = report.details()["address"].as_str().unwrap().to_owned();
        let reached: std::net::SocketAddr = reached.parse().unwrap();
        assert_eq!(reached.port(), address.port());
        assert!(reached.ip().is_loopback(), "{reached}");
    }

    #[tokio::test]
    async fn a_closed_port_is_refused_and_a_bad_target_other() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed = listener.local_addr().unwrap();
        drop(listener);
        assert_eq!(kind_of(&closed.to_string()).await, CheckErrorKind::Refused);
        assert_eq!(kind_of("no port here").await, CheckErrorKind::Other);
    }

    #[test]
    fn io_errors_are_sorted() {
        use std::io::{Error, ErrorKind};
        for (kind, expected) in [
            (ErrorKind::ConnectionRefused, CheckErrorKind::Refused),
            (ErrorKind::HostUnreachable, CheckErrorKind::Refused),
            (ErrorKind::TimedOut, CheckErrorKind::Timeout),
            (ErrorKind::InvalidInput, CheckErrorKind::Other),
        ] {
            assert_eq!(connect_error_kind(&Error::from(kind)), expected, "{kind:?}");
        }
        let dns = Error::other("failed to lookup address information: Name or service not known");
        assert_eq!(connect_error_kind(&dns), CheckErrorKind::Dns);
    }
}
