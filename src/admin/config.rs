use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::config::{ConfigError, Env, Zero, assert_in_range};

/// The shortest key accepted: 16 characters. Generate one with `openssl rand -hex 32`.
pub const MIN_KEY_LEN: usize = 16;

/// A setting and where it came from: the environment variable, or the builder method.
#[derive(Clone)]
pub(crate) struct Sourced<T> {
    pub(crate) value: T,
    pub(crate) source: &'static str,
}

/// Settings of the [`AdminServer`](super::AdminServer).
///
/// # Environment variables
///
/// Where a second name is given, it is the Python system's, read when the first is unset.
///
/// | Variable | Also read | Meaning | Default |
/// |---|---|---|---|
/// | `TOWER_HEALTH_ADMIN_BIND` | `BALDUR_ADMIN_BIND` | IP address to bind (`localhost` means `127.0.0.1`) | `127.0.0.1` |
/// | `TOWER_HEALTH_ADMIN_PORT` | `BALDUR_ADMIN_PORT` | port; `0` picks a free one | `9090` |
/// | `TOWER_HEALTH_ADMIN_KEY` | `BALDUR_ADMIN_KEY` | operator key (at least 16 characters) | none |
/// | `TOWER_HEALTH_ADMIN_READONLY_KEY` | `BALDUR_ADMIN_READONLY_KEY` | read-only (viewer) key | none |
/// | `TOWER_HEALTH_ADMIN_ALLOWED_HOSTS` | | extra `Host`/`Origin` names, comma-separated | none |
/// | `TOWER_HEALTH_ADMIN_HEADER_TIMEOUT` | | time a client gets to send a request head, idle keep-alive included | `10s` |
/// | `TOWER_HEALTH_ADMIN_WRITE_TIMEOUT` | | time an answer may wait on a client that does not read it | `10s` |
/// | `TOWER_HEALTH_ADMIN_MAX_CONNECTIONS` | | open connections at most (see [`max_connections`](AdminConfig::max_connections)) | `64` |
#[derive(Clone)]
#[must_use]
pub struct AdminConfig {
    pub(crate) bind: Sourced<IpAddr>,
    pub(crate) port: u16,
    pub(crate) operator_key: Option<Sourced<String>>,
    pub(crate) readonly_key: Option<Sourced<String>>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_connections: usize,
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
            bind: Sourced {
                value: IpAddr::V4(Ipv4Addr::LOCALHOST),
                source: "AdminConfig::bind",
            },
            port: 9090,
            operator_key: None,
            readonly_key: None,
            allowed_hosts: Vec::new(),
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_connections: 64,
        }
    }

    /// The address to bind. Anything but a loopback address needs an
    /// [operator key](AdminConfig::operator_key): the server refuses to start without one.
    ///
    /// Defaults to `127.0.0.1`.
    pub fn bind(mut self, ip: IpAddr) -> Self {
        self.bind = Sourced {
            value: ip,
            source: "AdminConfig::bind",
        };
        self
    }

    /// The port to bind; `0` picks a free one (see
    /// [`AdminHandle::local_addr`](super::AdminHandle::local_addr)).
    ///
    /// Defaults to `9090`.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The operator key. Once set, `/health` and cache bypasses need a key
    /// (`Authorization: Bearer <key>`, or `X-Baldur-Admin-Key: <key>`); liveness, readiness,
    /// pool and ping stay public. At least 16 characters.
    ///
    /// Defaults to none: everything is open, and only a loopback bind is allowed.
    pub fn operator_key(mut self, key: impl Into<String>) -> Self {
        self.operator_key = Some(Sourced {
            value: key.into(),
            source: "AdminConfig::operator_key",
        });
        self
    }

    /// The read-only key: grants the viewer role (enough for `/health`). Needs an operator key
    /// beside it, and must differ from it.
    ///
    /// Defaults to none.
    pub fn readonly_key(mut self, key: impl Into<String>) -> Self {
        self.readonly_key = Some(Sourced {
            value: key.into(),
            source: "AdminConfig::readonly_key",
        });
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
    /// # Panics
    ///
    /// When `timeout` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        assert_in_range("AdminConfig::header_timeout", timeout, Zero::Refused);
        self.header_timeout = timeout;
        self
    }

    /// How long an answer may wait on a client that does not take it (a full socket: the
    /// client pipelines requests and reads nothing, or reads too slowly) before the connection
    /// is closed. Any progress starts the wait over. See [`WriteTimeout`](crate::io::WriteTimeout).
    ///
    /// Defaults to 10 seconds.
    ///
    /// # Panics
    ///
    /// When `timeout` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        assert_in_range("AdminConfig::write_timeout", timeout, Zero::Refused);
        self.write_timeout = timeout;
        self
    }

    /// The most connections served at once. When one more arrives, the connection whose
    /// writes have waited longest on a client that does not read is closed to make room; if
    /// none is waiting, the new connection is closed as soon as it is accepted. So clients
    /// that stop reading cannot keep probes out, while idle and slow-sending clients are
    /// bounded by [`header_timeout`](AdminConfig::header_timeout).
    ///
    /// Defaults to 64.
    ///
    /// # Panics
    ///
    /// When `max` is zero.
    pub fn max_connections(mut self, max: usize) -> Self {
        assert!(max > 0, "max_connections must be non-zero");
        self.max_connections = max;
        self
    }

    define_env_constructors!("the table above");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        if let Some((name, value)) = env.first(&["TOWER_HEALTH_ADMIN_BIND", "BALDUR_ADMIN_BIND"]) {
            let ip = if value.eq_ignore_ascii_case("localhost") {
                Ok(IpAddr::V4(Ipv4Addr::LOCALHOST))
            } else {
                value.parse()
            };
            let ip = ip.map_err(|_| {
                ConfigError::new(
                    name,
                    value,
                    "expected an IP address such as 127.0.0.1 or ::1",
                )
            })?;
            config.bind = Sourced {
                value: ip,
                source: name,
            };
        }
        if let Some(port) = env.parse(
            &["TOWER_HEALTH_ADMIN_PORT", "BALDUR_ADMIN_PORT"],
            "expected a port number from 0 to 65535",
        )? {
            config.port = port;
        }
        for (names, slot) in [
            (
                ["TOWER_HEALTH_ADMIN_KEY", "BALDUR_ADMIN_KEY"],
                &mut config.operator_key,
            ),
            (
                [
                    "TOWER_HEALTH_ADMIN_READONLY_KEY",
                    "BALDUR_ADMIN_READONLY_KEY",
                ],
                &mut config.readonly_key,
            ),
        ] {
            if let Some((name, value)) = env.first(&names) {
                *slot = Some(Sourced {
                    value: value.to_owned(),
                    source: name,
                });
            }
        }
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
        if let Some(timeout) = env.duration("TOWER_HEALTH_ADMIN_WRITE_TIMEOUT", None)? {
            config.write_timeout = timeout;
        }
        if let Some(max) = env.parse::<usize>(
            &["TOWER_HEALTH_ADMIN_MAX_CONNECTIONS"],
            "expected a positive number of connections",
        )? {
            if max == 0 {
                return Err(ConfigError::new(
                    "TOWER_HEALTH_ADMIN_MAX_CONNECTIONS",
                    "0",
                    "expected a positive number of connections",
                ));
            }
            config.max_connections = max;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks that the settings fit together: keys at least 16 characters, a read-only key
    /// only beside an operator key and different from it, and an operator key for any bind
    /// that is not loopback. [`AdminServer::start`](super::AdminServer::start) runs it too.
    ///
    /// # Errors
    ///
    /// The first problem found, naming the variable (or builder method) at fault.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for key in [&self.operator_key, &self.readonly_key]
            .into_iter()
            .flatten()
        {
            if key.value.trim().is_empty() {
                return Err(secret_error(key.source, "the key is empty"));
            }
            if key.value.chars().count() < MIN_KEY_LEN {
                return Err(secret_error(
                    key.source,
                    "the key is shorter than 16 characters; generate one with `openssl rand -hex 32`",
                ));
            }
            if !key.value.bytes().all(|byte| byte.is_ascii_graphic()) {
                return Err(secret_error(
                    key.source,
                    "the key must be printable ASCII without spaces (it travels in an HTTP header)",
                ));
            }
        }
        match (&self.operator_key, &self.readonly_key) {
            (None, Some(readonly)) => {
                return Err(secret_error(
                    readonly.source,
                    "a read-only key needs an operator key beside it",
                ));
            }
            (Some(operator), Some(readonly)) if operator.value == readonly.value => {
                return Err(secret_error(
                    readonly.source,
                    "the read-only key must differ from the operator key",
                ));
            }
            _ => {}
        }
        if !self.bind.value.is_loopback() && self.operator_key.is_none() {
            return Err(ConfigError::new(
                self.bind.source,
                &self.bind.value.to_string(),
                "binding a non-loopback address needs an operator key (TOWER_HEALTH_ADMIN_KEY or BALDUR_ADMIN_KEY)",
            ));
        }
        Ok(())
    }
}

fn secret_error(source: &str, reason: &str) -> ConfigError {
    ConfigError::new(source, "<hidden>", reason)
}

impl fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keys are secrets: say whether they are set, never what they are.
        f.debug_struct("AdminConfig")
            .field("bind", &self.bind.value)
            .field("port", &self.port)
            .field(
                "operator_key",
                &self.operator_key.as_ref().map(|_| "<hidden>"),
            )
            .field(
                "readonly_key",
                &self.readonly_key.as_ref().map(|_| "<hidden>"),
            )
            .field("allowed_hosts", &self.allowed_hosts)
            .field("header_timeout", &self.header_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(config.bind.value, IpAddr::from([0, 0, 0, 0]));
        assert_eq!(config.port, 0);
        assert_eq!(config.operator_key.unwrap().value, OPERATOR);
        assert_eq!(config.readonly_key.unwrap().value, VIEWER);
        assert_eq!(config.allowed_hosts, ["admin.internal", "other"]);
        assert_eq!(config.header_timeout, Duration::from_secs(2));
        assert_eq!(config.write_timeout, Duration::from_secs(3));
        assert_eq!(config.max_connections, 3);
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

    #[test]
    #[should_panic(expected = "AdminConfig::header_timeout must be from 1ms to 1year")]
    fn a_header_timeout_longer_than_a_year_panics() {
        let _ = AdminConfig::new().header_timeout(Duration::MAX);
    }

    #[test]
    #[should_panic(expected = "AdminConfig::write_timeout must be from 1ms to 1year")]
    fn a_zero_write_timeout_panics() {
        let _ = AdminConfig::new().write_timeout(Duration::ZERO);
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

    #[test]
    fn builder_errors_name_the_method() {
        let error = AdminConfig::new()
            .bind(IpAddr::from([10, 0, 0, 1]))
            .validate()
            .unwrap_err();
        assert_eq!(error.variable(), "AdminConfig::bind");
        let error = AdminConfig::new().operator_key("").validate().unwrap_err();
        assert_eq!(error.variable(), "AdminConfig::operator_key");
        assert!(
            AdminConfig::new()
                .bind(IpAddr::from([10, 0, 0, 1]))
                .operator_key(OPERATOR)
                .validate()
                .is_ok()
        );
    }
}
