//! Where the admin server and the HAProxy agent differ, and why: the one place that says so.
//! Everything else about their ports (the bind, the cap and its eviction rule, the write
//! timeout, the accept loop, the close, the environment) is the same code, given one of the
//! two [`Policy`] values below.
//!
//! | | admin server | HAProxy agent | why |
//! |---|---|---|---|
//! | [keys](Keys) | the admin keys | none | the agent answers everyone the same line; HAProxy sends no credentials |
//! | binding off loopback | refused without an operator key | allowed | off loopback, the admin server's `/health` and controls need a key; the agent says a word and a weight, and a reason only under `details = always` |
//! | [details](DetailsDefault) by default | the readers' ([`HealthConfig::details`](crate::HealthConfig::details)) | `never` | a port with no keys, possibly bound off loopback, shows reasons only when asked to |
//! | [close](Close) | when its monitor's drain ends | on shutdown only | the admin server answers liveness until the drain ends; the agent keeps saying `drain` to an HAProxy that has not asked since the drain began |
//! | grace before the first answer | 100 ms for a request head | 100 ms for the task to begin writing | both: time for a client on a loaded machine |
//! | grace after an answer | none | 100 ms | a keep-alive client between requests has nothing in flight; the agent's client must read its line before a close can reset it |
//! | write timeout by default | 10 s | 1 s | answers of kilobytes against one line that any socket buffer holds |
//! | open connections given at close | 5 s | none | an HTTP answer under way is finished; an agent connection only lingers for its client's close |

use std::time::Duration;

use super::connections::Eviction;
#[cfg(feature = "haproxy-agent")]
use crate::config::Details;
pub(crate) use crate::config::readers::DetailsDefault;

/// One server's differences from the other: see the [module](self).
#[derive(Debug)]
pub(crate) struct Policy {
    /// The server, in logs: `admin server`, `haproxy agent`.
    pub(crate) server: &'static str,
    /// Its settings type, for errors that name a setter (`AdminConfig::port`).
    pub(crate) settings: &'static str,
    /// The variables its `from_env` reads for the shared settings.
    pub(crate) variables: Variables,
    /// The port it binds unless told otherwise.
    pub(crate) port: u16,
    /// Its write timeout unless told otherwise.
    pub(crate) write_timeout: Duration,
    pub(crate) keys: Keys,
    pub(crate) details: DetailsDefault,
    pub(crate) close: Close,
    /// How long the connections still open at the close get to finish.
    pub(crate) close_grace: Duration,
    /// How its connections give up their places at the cap.
    pub(crate) eviction: Eviction,
}

/// The environment variables of the shared settings: `<prefix>_BIND`, `<prefix>_PORT`,
/// `<prefix>_WRITE_TIMEOUT`, `<prefix>_MAX_CONNECTIONS` and `<prefix>_DETAILS`. Spelled out
/// whole, so that a search for a variable finds where it is read (a unit test checks the
/// pattern).
#[derive(Debug)]
pub(crate) struct Variables {
    /// Ours first, then the name of the system this crate replaces, if it had one: read
    /// when ours is not set.
    pub(crate) bind: &'static [&'static str],
    /// As `bind`.
    pub(crate) port: &'static [&'static str],
    pub(crate) write_timeout: &'static str,
    pub(crate) max_connections: &'static str,
    pub(crate) details: &'static str,
}

/// Whether a server has keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(all(feature = "admin", feature = "haproxy-agent")),
    allow(
        dead_code,
        reason = "one variant per server: a build with one server has one"
    )
)]
pub(crate) enum Keys {
    /// The admin keys ([`AccessKeys`](crate::access::AccessKeys), read from
    /// `TOWER_HEALTH_ADMIN_KEY` and `TOWER_HEALTH_ADMIN_READONLY_KEY`): they guard what it
    /// answers, so any bind but loopback needs an operator key.
    Admin,
    /// None: everyone who reaches the port reads the same answer, so
    /// [`Details::Authorized`] shows details to nobody, and it may bind any address.
    None,
}

/// Who sees details when the server's own `details` is not set.
/// When a server closes, besides its handle's `shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(all(feature = "admin", feature = "haproxy-agent")),
    allow(
        dead_code,
        reason = "one variant per server: a build with one server has one"
    )
)]
pub(crate) enum Close {
    /// Also once its monitor's drain is over
    /// ([`HealthHandle::drain`](crate::HealthHandle::drain)).
    WhenDrained,
    /// Only on shutdown.
    OnShutdown,
}

/// The default cap on open connections, for both servers.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// How long a new connection keeps its place until its first answer begins, whoever else
/// connects: long enough for a client on a loaded machine to write its request head after
/// connecting (the admin server), or for the connection's task to begin writing the line on
/// a busy runtime (the agent); short enough that clients which never write give their
/// places up quickly (all of them every 100 ms: 640 a second at the default 64). Without it,
/// clients that reconnect as soon as they are closed would cycle the places faster than a
/// probe can write its head (tests/it/admin.rs
/// `silent_clients_that_reconnect_cannot_keep_the_probes_out`).
const BEFORE_ANSWER: Duration = Duration::from_millis(100);

/// The admin server's.
#[cfg(feature = "admin")]
pub(crate) const ADMIN: Policy = Policy {
    server: "admin server",
    settings: "AdminConfig",
    variables: Variables {
        bind: &["TOWER_HEALTH_ADMIN_BIND", "BALDUR_ADMIN_BIND"],
        port: &["TOWER_HEALTH_ADMIN_PORT", "BALDUR_ADMIN_PORT"],
        write_timeout: "TOWER_HEALTH_ADMIN_WRITE_TIMEOUT",
        max_connections: "TOWER_HEALTH_ADMIN_MAX_CONNECTIONS",
        details: "TOWER_HEALTH_ADMIN_DETAILS",
    },
    port: 9090,
    write_timeout: Duration::from_secs(10),
    keys: Keys::Admin,
    details: DetailsDefault::Readers,
    close: Close::WhenDrained,
    close_grace: Duration::from_secs(5),
    // An idle keep-alive connection goes at once: between requests its client has nothing
    // in flight.
    eviction: Eviction {
        before_answer: BEFORE_ANSWER,
        after_answer: Duration::ZERO,
    },
};

/// The HAProxy agent's.
#[cfg(feature = "haproxy-agent")]
pub(crate) const AGENT: Policy = Policy {
    server: "haproxy agent",
    settings: "AgentConfig",
    variables: Variables {
        bind: &["TOWER_HEALTH_AGENT_BIND"],
        port: &["TOWER_HEALTH_AGENT_PORT"],
        write_timeout: "TOWER_HEALTH_AGENT_WRITE_TIMEOUT",
        max_connections: "TOWER_HEALTH_AGENT_MAX_CONNECTIONS",
        details: "TOWER_HEALTH_AGENT_DETAILS",
    },
    port: 9777,
    write_timeout: Duration::from_secs(1),
    keys: Keys::None,
    details: DetailsDefault::Own(Details::Never),
    close: Close::OnShutdown,
    // What is open at the close has had its line and only lingers for its client's close.
    close_grace: Duration::ZERO,
    eviction: Eviction {
        before_answer: BEFORE_ANSWER,
        after_answer: AGENT_AFTER_ANSWER,
    },
};

/// How long an agent connection keeps its place after its line is written, for its client to
/// read it.
///
/// What it buys: a connection closed at the limit is reset when its client has sent bytes
/// not read yet (an `agent-send` string) or sends some afterwards, and a reset that arrives
/// before the client has read its line may cost it the line (some stacks drop unread data
/// on a reset; a client that polls may see the error first). HAProxy reads its line as soon
/// as it is written and closes; 100 ms covers a client on a loaded machine, as
/// [`BEFORE_ANSWER`] does for a request head. What it costs: while every place is within
/// its grace, the accept loop waits for the first to leave it, so the places turn over at
/// least once per grace: 640 connections a second at the default 64. Clients that sit on
/// their connections delay HAProxy's check by their number over that rate (400: about half
/// a second), instead of by one linger (a second) per 64 of them (400: five seconds, past a
/// `timeout check`, and HAProxy keeps the last state it heard). Tested by
/// tests/it/haproxy.rs `clients_sitting_on_the_agent_port_cannot_freeze_a_hold_in_haproxy`.
#[cfg(feature = "haproxy-agent")]
const AGENT_AFTER_ANSWER: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    /// Each server's policy, with the prefix of its variables.
    fn policies() -> Vec<(&'static Policy, &'static str)> {
        vec![
            #[cfg(feature = "admin")]
            (&ADMIN, "TOWER_HEALTH_ADMIN"),
            #[cfg(feature = "haproxy-agent")]
            (&AGENT, "TOWER_HEALTH_AGENT"),
        ]
    }

    #[test]
    fn each_variable_is_the_prefix_and_its_setting() {
        for (policy, prefix) in policies() {
            let variables = &policy.variables;
            for (name, setting) in [
                (variables.bind[0], "BIND"),
                (variables.port[0], "PORT"),
                (variables.write_timeout, "WRITE_TIMEOUT"),
                (variables.max_connections, "MAX_CONNECTIONS"),
                (variables.details, "DETAILS"),
            ] {
                assert_eq!(name, format!("{prefix}_{setting}"));
            }
        }
    }
}
