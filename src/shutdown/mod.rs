//! The drain's state: its settings, where it stands, the requests in flight and the shutdown
//! signal. The monitor follows it (readiness reports draining) and the HTTP readers count
//! requests in it; the [`drain`](crate::drain) module is where users meet it, with the
//! middleware that counts.

pub(crate) mod config;
pub(crate) mod handle;
mod in_flight;
pub(crate) mod long_lived;
pub(crate) mod progress;
pub(crate) mod signal;

pub(crate) use self::config::{DrainConfig, DrainPolicy};
pub(crate) use self::handle::{DrainHandle, Drained};
pub(crate) use self::in_flight::InFlightGuard;
