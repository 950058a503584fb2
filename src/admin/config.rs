use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use crate::config::{ConfigError, Details, Env, NoCache, Zero, check_in_range};
use crate::side_port::SidePortConfig;
use crate::side_port::policy::ADMIN;

/// Settings of the [`AdminServer`](super::AdminServer).
///
/// Its setters never fail: a value a setter cannot take is recorded (the first one, naming
/// the setter), and [`AdminServer::start`](super::AdminServer::start) returns it, as it does
/// settings that do not fit together.
///
/// The bind, the cap on connections, the write timeout, the keys and the details are the
/// [side port](crate::side_port)'s, shared with the HAProxy agent; the rest is this server's.
///
/// [`AdminConfig::from_env`] reads the `TOWER_HEALTH_ADMIN_*` variables listed with the others
/// in [the environment table](crate::config#adminconfigfrom_env-feature-admin).
#[derive(Clone)]
#[must_use]
pub struct AdminConfig {
    pub(crate) side_port: SidePortConfig,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) header_timeout: Duration,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl AdminConfig {
    /// The defaults: `127.0.0.1:9090`, no keys.
    pub fn new() -> Self {
        Self {
            side_port: SidePortConfig::new(&ADMIN),
            allowed_hosts: Vec::new(),
            header_timeout: Duration::from_secs(10),
        }
    }

    /// The address to bind. Anything but a loopback address needs an
    /// [operator key](AdminConfig::operator_key): the server refuses to start without one.
    ///
    /// Defaults to `127.0.0.1`.
    pub fn bind(mut self, ip: IpAddr) -> Self {
        self.side_port.bind(ip);
        self
    }

    /// The port to bind; `0` picks a free one (see
    /// [`SidePortHandle::local_addr`](crate::side_port::SidePortHandle::local_addr)).
    ///
    /// Defaults to `9090`.
    pub fn port(mut self, port: u16) -> Self {
        self.side_port.port(port);
        self
    }

    /// The operator key. Once set, `/health` and cache bypasses need a key
    /// (`Authorization: Bearer <key>`, or `X-Baldur-Admin-Key: <key>`); liveness, readiness,
    /// pool and ping stay public. At least 16 characters.
    ///
    /// Defaults to none: everything is open, and only a loopback bind is allowed.
    pub fn operator_key(mut self, key: impl Into<String>) -> Self {
        self.side_port
            .operator_key(key.into(), "AdminConfig::operator_key");
        self
    }

    /// The read-only key: grants the viewer role (enough for `/health`). Needs an operator key
    /// beside it, and must differ from it.
    ///
    /// Defaults to none.
    pub fn readonly_key(mut self, key: impl Into<String>) -> Self {
        self.side_port
            .readonly_key(key.into(), "AdminConfig::readonly_key");
        self
    }

    /// Who sees details (error text, targets, check details, pool figures, timings) in this
    /// server's readiness and pool bodies; `/health` already needs the viewer role once keys
    /// are set.
    /// [`Details::Authorized`] means holders of this server's keys.
    ///
    /// Defaults to the monitor's [`HealthConfig::details`](crate::HealthConfig::details).
    pub fn details(mut self, details: Details) -> Self {
        self.side_port.details(details);
        self
    }

    /// Who may bypass the cache with `?nocache=true` on this server; with keys configured,
    /// a bypass needs the viewer role whatever the policy.
    ///
    /// Defaults to the monitor's [`HealthConfig::nocache`](crate::HealthConfig::nocache).
    pub fn nocache(mut self, policy: NoCache) -> Self {
        self.side_port.own.nocache = Some(policy);
        self
    }

    /// Another name clients may use in `Host` and `Origin` on a loopback bind, besides
    /// `localhost`, `127.0.0.1`, `[::1]` and the bind address. Everything else gets 403: a web
    /// page whose domain resolves to 127.0.0.1 (DNS rebinding) cannot read the server.
    ///
    /// Defaults to none.
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// How long a client gets to send each request head; it also closes keep-alive
    /// connections idle for that long. A client that stops reading its answers is bounded by
    /// [`write_timeout`](AdminConfig::write_timeout) instead.
    ///
    /// Defaults to 10 seconds.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`AdminServer::start`](super::AdminServer::start).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        if self.side_port.error.passes(check_in_range(
            "AdminConfig::header_timeout",
            timeout,
            Zero::Refused,
        )) {
            self.header_timeout = timeout;
        }
        self
    }

    /// How long an answer may wait on a client that does not take it (a full socket: the
    /// client pipelines requests and reads nothing, or reads too slowly) before the connection
    /// is closed. Any progress starts the wait over.
    ///
    /// Defaults to 10 seconds.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`AdminServer::start`](super::AdminServer::start).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.side_port.write_timeout(timeout);
        self
    }

    /// The most connections served at once. When one more arrives, one is closed to make
    /// room: the oldest that has not sent a request head (once it has had 100 ms to), else the
    /// one whose writes have waited longest on a client that does not read, else the one idle
    /// longest between requests, never one whose request is being answered (the new
    /// connection is closed when all are). So clients that connect and send nothing, or stop
    /// reading, cannot keep probes out.
    ///
    /// Defaults to 64.
    ///
    /// A `max` of zero is an error of [`AdminServer::start`](super::AdminServer::start).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.side_port.max_connections(max);
        self
    }

    define_env_constructors!("the table above");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self {
            side_port: SidePortConfig::from_env(&ADMIN, env)?,
            ..Self::new()
        };
        if let Some((_, hosts)) = env.first(&["TOWER_HEALTH_ADMIN_ALLOWED_HOSTS"]) {
            config.allowed_hosts = hosts
                .split(',')
                .map(|host| host.trim().to_ascii_lowercase())
                .filter(|host| !host.is_empty())
                .collect();
        }
        if let Some(timeout) = env.duration("TOWER_HEALTH_ADMIN_HEADER_TIMEOUT", None)? {
            config.header_timeout = timeout;
        }
        config.side_port.validate()?;
        Ok(config)
    }
}

impl fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured: a new field does not compile until it is shown or skipped on purpose.
        let Self {
            side_port,
            allowed_hosts,
            header_timeout,
        } = self;
        let mut f = f.debug_struct("AdminConfig");
        side_port.debug_fields(&mut f);
        f.field("allowed_hosts", allowed_hosts)
            .field("header_timeout", header_timeout)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::AdminServer;
    use crate::side_port::SidePortError;

    const OPERATOR: &str = "operator-key-0123456789";
    const VIEWER: &str = "viewer-key-0123456789";

    #[test]
    fn reads_own_and_compat_names() {
        let config = AdminConfig::from_vars([
            ("BALDUR_ADMIN_BIND", "0.0.0.0"),
            ("BALDUR_ADMIN_PORT", "0"),
            ("BALDUR_ADMIN_KEY", OPERATOR),
            ("BALDUR_ADMIN_READONLY_KEY", VIEWER),
            ("TOWER_HEALTH_ADMIN_ALLOWED_HOSTS", "Admin.internal, other "),
            ("TOWER_HEALTH_ADMIN_HEADER_TIMEOUT", "2s"),
            ("TOWER_HEALTH_ADMIN_WRITE_TIMEOUT", "3s"),
            ("TOWER_HEALTH_ADMIN_MAX_CONNECTIONS", "3"),
        ])
        .unwrap();
        // The bind, the port, the write timeout and the cap: the side port's tests.
        assert!(config.side_port.keys().is_enabled());
        let digests = config.side_port.keys().digests();
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {VIEWER}").parse().unwrap(),
        );
        assert!(
            digests.grants_viewer(&headers),
            "the read-only key was read"
        );
        assert_eq!(config.allowed_hosts, ["admin.internal", "other"]);
        assert_eq!(config.header_timeout, Duration::from_secs(2));
    }

    #[test]
    fn refuses_bad_values_naming_the_variable() {
        for (vars, variable) in [
            (vec![("BALDUR_ADMIN_BIND", "my-host")], "BALDUR_ADMIN_BIND"),
            (vec![("BALDUR_ADMIN_PORT", "70000")], "BALDUR_ADMIN_PORT"),
            (
                vec![("TOWER_HEALTH_ADMIN_PORT", "-1")],
                "TOWER_HEALTH_ADMIN_PORT",
            ),
            (vec![("BALDUR_ADMIN_BIND", "0.0.0.0")], "BALDUR_ADMIN_BIND"),
            (vec![("BALDUR_ADMIN_KEY", "short")], "BALDUR_ADMIN_KEY"),
            (
                vec![("BALDUR_ADMIN_READONLY_KEY", VIEWER)],
                "BALDUR_ADMIN_READONLY_KEY",
            ),
            (
                vec![
                    ("BALDUR_ADMIN_KEY", OPERATOR),
                    ("BALDUR_ADMIN_READONLY_KEY", OPERATOR),
                ],
                "BALDUR_ADMIN_READONLY_KEY",
            ),
            (
                vec![("TOWER_HEALTH_ADMIN_MAX_CONNECTIONS", "0")],
                "TOWER_HEALTH_ADMIN_MAX_CONNECTIONS",
            ),
        ] {
            let error = AdminConfig::from_vars(vars.clone()).unwrap_err();
            assert_eq!(error.variable(), variable, "{vars:?}: {error}");
        }
    }

    #[test]
    fn a_timeout_out_of_range_is_refused() {
        for variable in [
            "TOWER_HEALTH_ADMIN_HEADER_TIMEOUT",
            "TOWER_HEALTH_ADMIN_WRITE_TIMEOUT",
        ] {
            for value in ["0s", "100us", "1000000000000000s"] {
                let error = AdminConfig::from_vars([(variable, value)]).unwrap_err();
                assert_eq!(error.variable(), variable, "{value}");
            }
        }
    }

    /// The error [`AdminServer::start`] returns for `config`.
    async fn refused(config: AdminConfig) -> ConfigError {
        let health = crate::HealthMonitor::spawn(crate::HealthConfig::new()).unwrap();
        match AdminServer::new(config.port(0), &health).start().await {
            Err(SidePortError::Config(error)) => error,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_header_timeout_longer_than_a_year_is_refused_at_start() {
        let error = refused(AdminConfig::new().header_timeout(Duration::MAX)).await;
        assert_eq!(error.variable(), "AdminConfig::header_timeout");
        assert_eq!(error.reason(), "must be from 1ms to 1year");
    }

    #[tokio::test]
    async fn a_zero_write_timeout_is_refused_at_start() {
        let error = refused(AdminConfig::new().write_timeout(Duration::ZERO)).await;
        assert_eq!(
            error.to_string(),
            r#"AdminConfig::write_timeout="0ns": must be from 1ms to 1year"#
        );
    }

    #[tokio::test]
    async fn no_connections_is_refused_at_start() {
        let error = refused(AdminConfig::new().max_connections(0)).await;
        assert_eq!(
            (error.variable(), error.value(), error.reason()),
            ("AdminConfig::max_connections", "0", "must be non-zero")
        );
        // The first bad value, before the settings are checked together.
        let error = refused(
            AdminConfig::new()
                .bind(IpAddr::from([10, 0, 0, 1]))
                .max_connections(0)
                .write_timeout(Duration::ZERO),
        )
        .await;
        assert_eq!(error.variable(), "AdminConfig::max_connections");
    }

    #[test]
    fn keys_never_appear_in_errors_or_debug_output() {
        let error = AdminConfig::from_vars([("BALDUR_ADMIN_KEY", "hunter2")]).unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
        let config = AdminConfig::new()
            .operator_key(OPERATOR)
            .readonly_key(VIEWER);
        let debug = format!("{config:?}");
        assert!(
            !debug.contains(OPERATOR) && !debug.contains(VIEWER),
            "{debug}"
        );
    }

    #[tokio::test]
    async fn builder_errors_name_the_method() {
        let error = refused(AdminConfig::new().bind(IpAddr::from([10, 0, 0, 1]))).await;
        assert_eq!(error.variable(), "AdminConfig::bind");
        let error = refused(AdminConfig::new().operator_key("")).await;
        assert_eq!(error.variable(), "AdminConfig::operator_key");
        // Checked, not bound: 10.0.0.1 is not this host's (a bind error, not a settings one).
        assert!(
            AdminConfig::new()
                .bind(IpAddr::from([10, 0, 0, 1]))
                .operator_key(OPERATOR)
                .side_port
                .validate()
                .is_ok()
        );
    }
}
