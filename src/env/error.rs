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
    pub(crate) fn new(variable: &str, value: &str, reason: impl Into<String>) -> Self {
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
