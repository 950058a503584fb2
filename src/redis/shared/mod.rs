//! The health verdict shared by a fleet through Redis: [`SharedCache`] (its settings and
//! connection), the entry and what a process checks of it, the lock, the store that reads
//! and writes both, and the `shared_cache` component. The rounds that use them are the
//! monitor's (`monitor/shared_round.rs`); what they do is told in the [`redis`](crate::redis) module's
//! docs.

mod config;
mod entry;
mod fleet;
mod jitter;
mod status;
mod store;

pub use self::config::SharedCache;
pub(crate) use self::entry::{Entry, Expected, Subject};
pub(crate) use self::fleet::FleetMembers;
pub(crate) use self::fleet::FleetSeen;
pub(crate) use self::jitter::{next as next_round_wait, phase as first_round_phase};
pub(crate) use self::status::{CacheStatus, SHARED_CACHE_COMPONENT};
pub(crate) use self::store::{Lock, Read, SharedVerdicts};
