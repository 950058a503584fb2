use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use crate::config::{ConfigError, Details, Env, Zero, check_in_range};
use crate::side_port::SidePortConfig;
use crate::side_port::policy::AGENT;

/// The weight a degraded instance asks for when none is set: half its configured weight.
const DEFAULT_DEGRADED_WEIGHT: u8 = 50;

/// The slow start's window when none is set ([`AgentConfig::slow_start`]).
const DEFAULT_SLOW_START: Duration = Duration::from_secs(10);

/// Settings of the [`AgentServer`](super::AgentServer).
///
/// Its setters never fail: a value a setter cannot take is recorded (the first one, naming
/// the setter), and [`AgentServer::start`](super::AgentServer::start) returns it.
///
/// The bind, the cap on connections, the write timeout and the details are the
/// [side port](crate::side_port)'s, shared with the admin server; the weight is the agent's.
///
/// [`AgentConfig::from_env`] reads the `TOWER_HEALTH_AGENT_*` variables listed with the others
/// in [the environment table](crate::config#agentconfigfrom_env-feature-haproxy-agent).
#[derive(Clone)]
#[must_use]
pub struct AgentConfig {
    pub(crate) side_port: SidePortConfig,
    pub(crate) degraded_weight: u8,
    pub(crate) slow_start: Duration,
    pub(crate) maxconn: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentConfig {
    /// The defaults: `127.0.0.1:9777`, a degraded weight of 50%, a slow start over 10 s.
    pub fn new() -> Self {
        Self {
            side_port: SidePortConfig::new(&AGENT),
            degraded_weight: DEFAULT_DEGRADED_WEIGHT,
            slow_start: DEFAULT_SLOW_START,
            maxconn: false,
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
        self.side_port.bind(ip);
        self
    }

    /// The port to bind (HAProxy's `agent-port`); `0` picks a free one (see
    /// [`SidePortHandle::local_addr`](crate::side_port::SidePortHandle::local_addr)).
    ///
    /// Defaults to `9777`.
    pub fn port(mut self, port: u16) -> Self {
        self.side_port.port(port);
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
            .side_port
            .error
            .passes(check_weight("AgentConfig::degraded_weight", percent))
        {
            self.degraded_weight = percent;
        }
        self
    }

    /// How long the weight takes to ramp up when the instance comes back into rotation
    /// (HAProxy's own `slowstart`, told by the agent): from `up ready 1%` at the return, one
    /// more percent every hundredth of `window`, to `up ready 100%` once it has passed.
    /// HAProxy reads the line every `agent-inter`, so its weight rises in steps of that
    /// interval. The weight never exceeds what the state says otherwise: a degraded instance
    /// asks for the lower of the ramp and its [degraded weight](Self::degraded_weight).
    ///
    /// What is a return is readiness's, the same for every reader: the first time readiness
    /// passes after the start, after an operator's hold is released, after a stale verdict,
    /// and after an outage (a failure that lasted [`HealthConfig::debounce`](crate::HealthConfig::debounce),
    /// once [`HealthConfig::return_jitter`](crate::HealthConfig::return_jitter)'s delay has
    /// run out). A failure shorter than the debounce (the agent lowered the weight and never
    /// said `down`) is no return: the ramp goes on from the return before. A drain is never
    /// left. `Duration::ZERO` turns the slow start off: `up ready 100%` at once.
    ///
    /// Defaults to 10 seconds: ten steps at the HAProxy guide's `agent-inter 1s`, long
    /// enough for a cold instance to fill its pools and caches under a rising share rather
    /// than a full one, short beside a rolling update. Configure HAProxy's servers with a
    /// `weight` of 100 (HAProxy scales the percentage by it: at the default weight of 1,
    /// every step below 100% rounds to the same weight).
    ///
    /// A `window` that is neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`AgentServer::start`](super::AgentServer::start).
    pub fn slow_start(mut self, window: Duration) -> Self {
        if self.side_port.error.passes(check_in_range(
            "AgentConfig::slow_start",
            window,
            Zero::Allowed,
        )) {
            self.slow_start = window;
        }
        self
    }

    /// Whether every line also tells HAProxy the server's `maxconn`: the requests in flight
    /// the application declared it can take
    /// ([`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)), so that
    /// HAProxy queues what is beyond it (`timeout queue`) or sends it to another server,
    /// instead of piling it onto a server that is full (`up ready 80% maxconn:64`). HAProxy
    /// keeps a `maxconn` the agent set until it says another: turned off, set the server's
    /// own `maxconn` in HAProxy's configuration again.
    ///
    /// Defaults to off. On without a load capacity is an error of
    /// [`AgentServer::start`](super::AgentServer::start): there is no figure to say.
    pub fn maxconn(mut self, on: bool) -> Self {
        self.maxconn = on;
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
        self.side_port.details(details);
        self
    }

    /// How long the answer may wait on a client that does not take it (a full socket)
    /// before the connection is closed. The answer is one short line that any socket buffer
    /// holds, so only a client that reads nothing at all waits here.
    ///
    /// Defaults to 1 second.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`AgentServer::start`](super::AgentServer::start).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.side_port.write_timeout(timeout);
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
        self.side_port.max_connections(max);
        self
    }

    define_env_constructors!("the table above");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self {
            side_port: SidePortConfig::from_env(&AGENT, env)?,
            ..Self::new()
        };
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
        if let Some(window) = env.duration_or_zero("TOWER_HEALTH_AGENT_SLOW_START")? {
            config.slow_start = window;
        }
        if let Some(on) = env.flag("TOWER_HEALTH_AGENT_MAXCONN")? {
            config.maxconn = on;
        }
        config.side_port.validate()?;
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
            side_port,
            degraded_weight,
            slow_start,
            maxconn,
        } = self;
        let mut f = f.debug_struct("AgentConfig");
        side_port.debug_fields(&mut f);
        f.field("degraded_weight", degraded_weight)
            .field("slow_start", slow_start)
            .field("maxconn", maxconn)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The bind, the port, the details, the write timeout and the cap are the side port's,
    // tested there for the agent's variables and defaults.

    #[test]
    fn reads_the_weight() {
        for (value, percent) in [("25%", 25), ("100", 100)] {
            let config =
                AgentConfig::from_vars([("TOWER_HEALTH_AGENT_DEGRADED_WEIGHT", value)]).unwrap();
            assert_eq!(config.degraded_weight, percent);
        }
        let config = AgentConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.degraded_weight, 50);
    }

    #[test]
    fn reads_maxconn() {
        let config = AgentConfig::from_vars([("TOWER_HEALTH_AGENT_MAXCONN", "true")]).unwrap();
        assert!(config.maxconn);
        let config = AgentConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert!(!config.maxconn, "off by default");
        let error = AgentConfig::from_vars([("TOWER_HEALTH_AGENT_MAXCONN", "64")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_AGENT_MAXCONN");
    }

    #[test]
    fn reads_the_slow_start() {
        for (value, window) in [("30s", Duration::from_secs(30)), ("0", Duration::ZERO)] {
            let config =
                AgentConfig::from_vars([("TOWER_HEALTH_AGENT_SLOW_START", value)]).unwrap();
            assert_eq!(config.slow_start, window);
        }
        let config = AgentConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.slow_start, DEFAULT_SLOW_START);
        let error = AgentConfig::new()
            .slow_start(Duration::from_micros(10))
            .side_port
            .validate()
            .unwrap_err();
        assert_eq!(error.variable(), "AgentConfig::slow_start");
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
            ("TOWER_HEALTH_AGENT_SLOW_START", "soon"),
            ("TOWER_HEALTH_AGENT_SLOW_START", "-5s"),
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
        let error = config.side_port.validate().unwrap_err();
        assert_eq!(error.variable(), "AgentConfig::degraded_weight");
        assert_eq!(config.degraded_weight, 50, "the bad value is not taken");
        let error = AgentConfig::new()
            .degraded_weight(101)
            .side_port
            .validate()
            .unwrap_err();
        assert_eq!(error.reason(), WEIGHT_RANGE);
        // The shared setters record into the same first error, naming this type's setter.
        let error = AgentConfig::new()
            .max_connections(0)
            .degraded_weight(0)
            .side_port
            .validate()
            .unwrap_err();
        assert_eq!(error.variable(), "AgentConfig::max_connections");
    }
}
