//! The one error of every setting, whether read from a variable or given to a builder: a
//! leaf, so that the backends' constructors return it too.

use std::fmt;

use crate::redact::redact;

/// A setting that could not be used: names the variable (or setting), the offending value
/// (redacted) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    variable: String,
    value: String,
    reason: String,
}

impl ConfigError {
    /// The error of `variable` (an environment variable, or a setter such as
    /// `DiskSpace::min_available_percent`) given `value` (redacted here), and what was
    /// expected: for a [`Component::validate`](crate::component::Component::validate) of
    /// your own, say.
    ///
    /// ```
    /// use tower_health::config::ConfigError;
    ///
    /// let error = ConfigError::new("Queue::depth", "0", "a depth must be at least 1");
    /// assert_eq!(error.to_string(), r#"Queue::depth="0": a depth must be at least 1"#);
    /// ```
    #[must_use]
    pub fn new(variable: &str, value: &str, reason: impl Into<String>) -> Self {
        Self {
            variable: variable.to_owned(),
            value: redact(value),
            reason: reason.into(),
        }
    }

    /// The same error, charged to `variable`: a builder's error, met while reading that
    /// variable. (Only the backends' builders fail this way.)
    #[cfg(any(feature = "postgres", feature = "http-check", feature = "redis"))]
    pub(crate) fn for_variable(mut self, variable: &str) -> Self {
        variable.clone_into(&mut self.variable);
        self
    }

    /// The environment variable (or setting) at fault.
    #[must_use]
    pub fn variable(&self) -> &str {
        &self.variable
    }

    /// The value it had, with any password masked.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What was expected instead.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.variable, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// The first invalid value a configuration's setters were given. The setters never fail:
/// they record the error here, leave the setting as it was, and the configuration's one
/// fallible point (`HealthMonitor::new`, `AdminServer::start`) returns it.
#[derive(Clone, Debug, Default)]
pub(crate) struct FirstError(Option<ConfigError>);

impl FirstError {
    /// Whether `check` passed; if not, its error is recorded unless one already is.
    pub(crate) fn passes(&mut self, check: Result<(), ConfigError>) -> bool {
        match check {
            Ok(()) => true,
            Err(error) => {
                self.0.get_or_insert(error);
                false
            }
        }
    }

    /// Records `other`'s error (a part's, such as a component's), unless one already is.
    pub(crate) fn absorb(&mut self, other: &Self) {
        if let (None, Some(error)) = (&self.0, &other.0) {
            self.0 = Some(error.clone());
        }
    }

    /// The recorded error, if any.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        self.0.clone().map_or(Ok(()), Err)
    }
}
