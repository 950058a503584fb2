//! What the servers on ports of their own share: the admin server and the HAProxy agent.
//!
//! Anyone who reaches such a port can open connections to it, and the client that matters
//! (the kubelet's probe, HAProxy's check) is one of many. So each server caps its open
//! connections, and at the cap one that is not being answered (silent, stalled, idle or
//! lingering) gives its place to the newcomer, by one rule with each server's graces
//! ([`Eviction`]). A connection's writes are bounded by [`WriteTimeout`](crate::io::WriteTimeout),
//! which also tells the rule when they wait on a client that does not read.

mod connections;

pub(crate) use self::connections::{Activity, Eviction, OpenConnections};
