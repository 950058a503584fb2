//! Settings' vocabulary, below every module that has settings: reading variables ([`Env`]),
//! the one configuration error, the duration limits, the settings' values, the list of
//! variables each settings type reads and the warnings about the others. A leaf: it imports
//! nothing of the crate but `redact`, so that the backends, the access keys and the
//! configuration all build on it without a cycle. Its public types are public at
//! [`config`](crate::config) only.

mod error;
mod known;
mod limits;
mod names;
mod read;
mod unknown;
mod values;
mod warning;

pub use self::error::ConfigError;
pub(crate) use self::error::FirstError;
#[cfg(test)]
pub(crate) use self::known::READERS;
pub(crate) use self::limits::{Zero, check_in_range};
// The bounds themselves, for the shared entry's own checks (and the tests that reach them);
// the docs state their values.
#[cfg(any(feature = "postgres", feature = "admin", feature = "haproxy-agent"))]
pub(crate) use self::limits::saturate;
#[cfg(any(feature = "redis", test))]
pub(crate) use self::limits::{MAX_DURATION, MIN_DURATION};
pub(crate) use self::names::{is_valid_check_name, validate_key_prefix};
pub(crate) use self::read::Env;
pub(crate) use self::unknown::{misspelt_key, refuse_unread_if_strict, unread_warnings};
pub(crate) use self::values::not_a_name;
pub use self::values::{Details, FailDirection, NoCache};
pub use self::warning::ConfigWarning;
pub(crate) use self::warning::log_warnings;
