use std::sync::Arc;

use tokio::net::TcpStream;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture};

/// A [`Component`] that opens a TCP connection to `host:port` and closes it: is the
/// dependency reachable?
///
/// The host is resolved on each check (a moved DNS name is followed). The connection is
/// bounded by the component's timeout and the round's deadline, like every check.
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
                    drop(stream);
                    Ok(())
                }
                Err(error) => Err(CheckError::new(
                    CheckErrorKind::Connect,
                    format!("connecting to {target}: {error}"),
                )),
            }
        })
    }

    fn target(&self) -> Option<String> {
        Some(crate::redact(&self.target))
    }
}
