use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::config::{ConfigError, Details, Env, FirstError, Zero, check_in_range};

/// The weight a degraded instance asks for when none is set: half its configured weight.
const DEFAULT_DEGRADED_WEIGHT: u8 = 50;

/// Settings of the [`AgentServer`](super::AgentServer).
///
/// Its setters never fail: a value a setter cannot take is recorded (the first one, naming
/// the setter), and [`AgentServer::start`](super::AgentServer::start) returns it.
///
/// [`AgentConfig::from_env`] reads the `TOWER_HEALTH_AGENT_*` variables listed with the others
/// in [the environment table](crate::config#agentconfigfrom_env-feature-haproxy-agent).
#[derive(Clone)]
#[must_use]
pub struct AgentConfig {
    pub(crate) bind: IpAddr,
    pub(crate) port: u16,
    pub(crate) degraded_weight: u8,
    /// The agent's own: it does not follow the monitor's
    /// [`HealthConfig::details`](crate::HealthConfig::details).
    pub(crate) details: Details,
    pub(crate) write_timeout: Duration,
    pub(crate) max_connections: usize,
    /// The first invalid value a setter was given, for
    /// [`AgentServer::start`](super::AgentServer::start) to return.
    pub(crate) error: FirstError,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentConfig {
    /// The defaults: `127.0.0.1:9777`, a degraded weight of 50%.
    pub fn new() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 9777,
            degraded_weight: DEFAULT_DEGRADED_WEIGHT,
            details: Details::Never,
            write_timeout: Duration::from_secs(1),
            max_connections: 64,
            error: FirstError::default(),
        }
    }

    /// The address to bind. HAProxy connects to the agent at the server's address (or its
    /// `agent-addr`), so an HAProxy on another host needs the address it reaches this one by,
    /// or `0.0.0.0`. The agent says a word and a weight to whoever connects, and a reason
    /// only when [`details`](Self::details) asks for one.
    ///
    /// Defaults to `127.0.0.1`, as the admin server: an HAProxy on the same host (a
    /// sidecar).
    pub fn bind(mut self, ip: IpAddr) -> Self {
        self.bind = ip;
        self
    }

    /// The port to bind (HAProxy's `agent-port`); `0` picks a free one (see
    /// [`AgentHandle::local_addr`](super::AgentHandle::local_addr)).
    ///
    /// Defaults to `9777`.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The weight a ready but `degraded` instance asks for, in percent of the weight HAProxy
    /// was configured with (`up ready 50%`): it keeps serving, with a smaller share of new
    /// sessions. `100` keeps the full weight.
    ///
    /// Defaults to `50`.
    ///
    /// A `percent` of `0` or above `100` is an error of
    /// [`AgentServer::start`](super::AgentServer::start): a zero weight would take a degraded
    /// instance out of rotation, which `degraded` never does (HAProxy shows it as `DRAIN`).
    pub fn degraded_weight(mut self, percent: u8) -> Self {
        if self
            .error
            .passes(check_weight("AgentConfig::degraded_weight", percent))
        {
            self.degraded_weight = percent;
        }
        self
    }

    /// Whether a `down` answer carries its reason (`down ready #database default is
    /// not_ready (refused)`), which HAProxy shows on its stats page and logs. Only
    /// [`Details::Always`] does: the agent has no keys, so `authorized` is `never` here.
    ///
    /// Defaults to [`Details::Never`], whatever the monitor's
    /// [`HealthConfig::details`](crate::HealthConfig::details): anyone who reaches the port
    /// reads the line, and an HAProxy on another host needs it bound beyond loopback.
    pub fn details(mut self, details: Details) -> Self {
        self.details = details;
        self
    }

    /// How long the answer may wait on a client that does not take it (a full socket)
    /// before the connection is closed. The answer is one short line that any socket buffer
    /// holds, so only a client that reads nothing at all waits here.
    ///
    /// Defaults to 1 second.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year (see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION)) is an error of
    /// [`AgentServer::start`](super::AgentServer::start).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        if self.error.passes(check_in_range(
            "AgentConfig::write_timeout",
            timeout,
            Zero::Refused,
        )) {
            self.write_timeout = timeout;
        }
        self
    }

    /// The most connections open at once. Each is answered as soon as it is accepted and
    /// then lingers (for the client's close, a second at most). When one more arrives, one
    /// is closed to make room: the one whose line has waited longest on a client that does
    /// not read, else the one lingering longest, each once its client has had 100 ms to read
    /// its line; meanwhile the new connection waits in the listen backlog. So clients that
    /// connect and sit on the socket cannot keep HAProxy's check out (see the
    /// [module docs](super#what-the-port-withstands)).
    ///
    /// Defaults to 64.
    ///
    /// A `max` of zero is an error of [`AgentServer::start`](super::AgentServer::start).
    pub fn max_connections(mut self, max: usize) -> Self {
        if max == 0 {
            self.error.passes(Err(ConfigError::new(
                "AgentConfig::max_connections",
                "0",
                "must be non-zero",
            )));
        } else {
            self.max_connections = max;
        }
        self
    }

    define_env_constructors!("the table above");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        if let Some((name, value)) = env.first(&["TOWER_HEALTH_AGENT_BIND"]) {
            let ip = if value.eq_ignore_ascii_case("localhost") {
                Ok(IpAddr::V4(Ipv4Addr::LOCALHOST))
            } else {
                value.parse()
            };
            config.bind = ip.map_err(|_| {
                ConfigError::new(
                    name,
                    value,
                    "expected an IP address such as 127.0.0.1, ::1 or 0.0.0.0",
                )
            })?;
        }
        if let Some(port) = env.parse(
            &["TOWER_HEALTH_AGENT_PORT"],
            "expected a port number from 0 to 65535",
        )? {
            config.port = port;
        }
        if let Some((name, value)) = env.first(&["TOWER_HEALTH_AGENT_DEGRADED_WEIGHT"]) {
            // `50` or `50%`, as HAProxy writes it.
            let digits = value.strip_suffix('%').unwrap_or(value);
            let percent = digits
                .parse::<u8>()
                .ok()
                .filter(|percent| check_weight(name, *percent).is_ok())
                .ok_or_else(|| ConfigError::new(name, value, WEIGHT_RANGE))?;
            config.degraded_weight = percent;
        }
        if let Some(details) = env.parse(
            &["TOWER_HEALTH_AGENT_DETAILS"],
            "expected always, authorized or never",
        )? {
            config.details = details;
        }
        if let Some(timeout) = env.duration("TOWER_HEALTH_AGENT_WRITE_TIMEOUT", None)? {
            config.write_timeout = timeout;
        }
        if let Some(max) = env.parse::<usize>(
            &["TOWER_HEALTH_AGENT_MAX_CONNECTIONS"],
            "expected a positive number of connections",
        )? {
            if max == 0 {
                return Err(ConfigError::new(
                    "TOWER_HEALTH_AGENT_MAX_CONNECTIONS",
                    "0",
                    "expected a positive number of connections",
                ));
            }
            config.max_connections = max;
        }
        Ok(config)
    }
}

const WEIGHT_RANGE: &str = "expected a percentage from 1 to 100, such as 50 or 50%";

fn check_weight(name: &'static str, percent: u8) -> Result<(), ConfigError> {
    if (1..=100).contains(&percent) {
        Ok(())
    } else {
        Err(ConfigError::new(name, &percent.to_string(), WEIGHT_RANGE))
    }
}

impl fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured: a new field does not compile until it is shown or skipped on purpose.
        let Self {
            bind,
            port,
            degraded_weight,
            details,
            write_timeout,
            max_connections,
            error,
        } = self;
        f.debug_struct("AgentConfig")
            .field("bind", bind)
            .field("port", port)
            .field("degraded_weight", degraded_weight)
            .field("details", details)
            .field("write_timeout", write_timeout)
            .field("max_connections", max_connections)
            .field("error", error)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_variable() {
        let config = AgentConfig::from_vars([
            ("TOWER_HEALTH_AGENT_BIND", "0.0.0.0"),
            ("TOWER_HEALTH_AGENT_PORT", "0"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "25%"),
            ("TOWER_HEALTH_AGENT_DETAILS", "always"),
            ("TOWER_HEALTH_AGENT_WRITE_TIMEOUT", "3s"),
            ("TOWER_HEALTH_AGENT_MAX_CONNECTIONS", "3"),
        ])
        .unwrap();
        assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert_eq!(config.port, 0);
        assert_eq!(config.degraded_weight, 25);
        assert_eq!(config.details, Details::Always);
        assert_eq!(config.write_timeout, Duration::from_secs(3));
        assert_eq!(config.max_connections, 3);
        let config = AgentConfig::from_vars([
            ("TOWER_HEALTH_AGENT_BIND", "localhost"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "100"),
        ])
        .unwrap();
        assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(config.degraded_weight, 100);
    }

    #[test]
    fn the_defaults() {
        let config = AgentConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(config.port, 9777);
        assert_eq!(config.degraded_weight, 50);
        assert_eq!(config.details, Details::Never);
        assert_eq!(config.write_timeout, Duration::from_secs(1));
        assert_eq!(config.max_connections, 64);
    }

    #[test]
    fn refuses_bad_values_naming_the_variable() {
        for (variable, value) in [
            ("TOWER_HEALTH_AGENT_BIND", "my-host"),
            ("TOWER_HEALTH_AGENT_PORT", "70000"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "0"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "101%"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "-5"),
            ("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", "half"),
            ("TOWER_HEALTH_AGENT_DETAILS", "sometimes"),
            ("TOWER_HEALTH_AGENT_WRITE_TIMEOUT", "0s"),
            ("TOWER_HEALTH_AGENT_MAX_CONNECTIONS", "0"),
        ] {
            let error = AgentConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!((error.variable(), error.value()), (variable, value));
        }
    }

    #[test]
    fn setters_record_the_first_bad_value() {
        let config = AgentConfig::new()
            .degraded_weight(0)
            .max_connections(0)
            .write_timeout(Duration::ZERO);
        let error = config.error.check().unwrap_err();
        assert_eq!(error.variable(), "AgentConfig::degraded_weight");
        assert_eq!(config.degraded_weight, 50, "the bad value is not taken");
        let error = AgentConfig::new()
            .degraded_weight(101)
            .error
            .check()
            .unwrap_err();
        assert_eq!(error.reason(), WEIGHT_RANGE);
    }
}
