use std::fmt;

use crate::check::CheckFuture;
use crate::env::ConfigError;

/// A check of your own that the health round runs: one question, "is this subsystem fine
/// right now?".
///
/// [`from_fn`](super::from_fn) turns a closure into one. Like a
/// [`DatabaseCheck`](crate::check::DatabaseCheck), a component does not bound itself: the
/// monitor runs it in a task of its own, waits for it at most until its timeout (never past
/// the round's deadline), and drops it past the
/// [check limit](crate::HealthConfig::check_limit).
///
/// See the [module docs](super) for an example.
pub trait Component: fmt::Debug + Send + Sync + 'static {
    /// Checks the subsystem once: a [`CheckReport`](crate::check::CheckReport) when it is
    /// fine (`CheckReport::default()` to say nothing more; a target and details, such as a
    /// latency or a server version, to say what it saw), the reason otherwise (redacted when
    /// the [`CheckError`](crate::check::CheckError) is built).
    fn check(&self) -> CheckFuture;

    /// What the component checks, for the health body's `target` (a `host:port`, a URL);
    /// it must never carry a password (the monitor passes it through
    /// [`redact`](crate::redact) anyway). Asked once, when the monitor starts; shown for every
    /// result, unless a passing check's
    /// [`CheckReport::target`](crate::check::CheckReport::target) names another for its own.
    /// `None` leaves the key out.
    ///
    /// Defaults to `None`.
    fn target(&self) -> Option<String> {
        None
    }

    /// The component's own settings, checked once:
    /// [`ComponentSpec::new`](super::ComponentSpec::new) asks, and
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) returns the error, as it does for a
    /// bad value given to any other setter. A component whose setters never fail
    /// (`DiskSpace`'s, [`RuntimeWatcher`](super::RuntimeWatcher)'s) keeps the first value it
    /// could not take and returns it here, naming the setter.
    ///
    /// Defaults to accepting.
    ///
    /// # Errors
    ///
    /// The setting the component cannot run with.
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }
}
