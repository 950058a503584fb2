//! Configuration: [`HealthConfig`] for the monitor and the probe endpoints.
//!
//! Every setting has a builder setter that documents its default, and every setting can come
//! from the environment through [`HealthConfig::from_env`]. A value that cannot be used is an
//! error at start that names the variable and the value; nothing falls back silently.
//!
#![doc = include_str!("../docs/environment.md")]
//!
//! Booleans take `true` or `false`, and also `1`/`0`, `yes`/`no`, `on`/`off`, in any case.
//!
//! # Durations
//!
//! Durations of the `TOWER_HEALTH_` variables take a unit (`500ms`, `2s`, `1m`). Every duration,
//! from a variable or a builder setter, lies between 1 ms (Tokio's timers count milliseconds)
//! and 1 year (365.25 days, humantime's `1y`), or is zero where the setting allows it: a
//! mistaken unit stops the program at start instead of making a timer spin or a sum overflow
//! later.
//!
//! # Variables that no setting reads
//!
//! A set `TOWER_HEALTH_*` variable that no setting reads (a misspelt name, or one read by a
//! feature this build leaves out) is a [warning](ConfigWarning) naming the closest known name:
//! [`HealthConfig::warnings`] returns it, `from_env` logs it if a `tracing` subscriber is
//! installed, and the monitor logs it when it starts (each warning once per process), so it
//! is not lost when `from_env` runs before the subscriber. `BALDUR_*` names are left alone:
//! a carried-over manifest sets many that this crate has no use for.
//!
//! Two cases are errors at start instead:
//!
//! - A variable close to an admin key variable (`TOWER_HEALTH_ADMIN_KYE`, `BALDUR_ADMIN_KYE`):
//!   read as no key, it would start the admin server, and a layer with
//!   [`Details::Authorized`], without keys. Always, wherever the keys are read
//!   ([`HealthConfig`], `AdminConfig`, [`AccessKeys`](crate::access::AccessKeys)). A
//!   `BALDUR_*` name counts when it is a typo away (two edits), so that names a carried-over
//!   manifest sets for other uses (`BALDUR_API_KEY`) do not.
//! - In strict mode (`TOWER_HEALTH_STRICT_ENV=true`), every set `TOWER_HEALTH_*` or `BALDUR_*`
//!   variable that no setting of this build reads, named with the closest known name. Every
//!   `from_env` (and `from_vars`) checks. Strict mode is opt-in because it refuses `BALDUR_*`
//!   names too: a carried-over manifest sets many that this crate does not read,
//!   and must be cleared of them first.
//!
//! A Redis URL in a build without the `redis` feature (or a `rediss://` one without `rustls`)
//! is an error at start naming the variable, like a database without `postgres`.

mod components;
mod databases;
mod groups;
pub(crate) mod health;
mod health_env;
mod load;
#[cfg(test)]
mod proptests;
mod reader_defaults;
pub(crate) mod readers;
mod registry;
mod shared;
mod timing;

pub(crate) use self::databases::DatabaseEntry;
pub use self::groups::HealthGroup;
pub(crate) use self::health::HealthConfig;
pub(crate) use self::reader_defaults::validate_prefix;
pub(crate) use self::timing::stale_bound;
// Defined in the settings' leaf (`crate::env`), public here only.
pub use crate::env::{ConfigError, ConfigWarning, Details, FailDirection, NoCache};
pub(crate) use crate::env::{
    Env, FirstError, Zero, check_in_range, is_valid_check_name, log_warnings,
    refuse_unread_if_strict, unread_warnings,
};
// The duration limits, for the tests that reach the bounds; the docs state the values.
#[cfg(test)]
pub(crate) use crate::env::{MAX_DURATION, MIN_DURATION};
