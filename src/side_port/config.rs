//! The settings both servers share: the bind (address and port), the cap on open connections,
//! the write timeout, the keys and who sees details. One setter, one variable and one check
//! each, given the server's [`Policy`]; `AdminConfig` and `AgentConfig` hold one of these and
//! delegate to it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpListener;

use super::handle::SidePortError;
use super::policy::{DEFAULT_MAX_CONNECTIONS, Keys, Policy};
use crate::access::AccessKeys;
use crate::config::readers::{Own, Shown};
use crate::config::{ConfigError, Details, Env, FirstError, Zero, check_in_range};

/// One server's shared settings. Its setters never fail: the first value one cannot take is
/// kept in [`error`](Self::error), which the server's own setters record into too.
#[derive(Clone)]
pub(crate) struct SidePortConfig {
    pub(crate) policy: &'static Policy,
    bind: IpAddr,
    /// Where the address came from, for the error that refuses it.
    bind_from: BindFrom,
    port: u16,
    pub(super) write_timeout: Duration,
    pub(super) max_connections: usize,
    /// What this server shows, over the readers' ([`Shown::for_reader`]): its detail level
    /// (`None`: the policy's [default](DetailsDefault)), and, on a server with
    /// [keys](Keys::Admin), its own keys (`Some`, even empty: its keys are its own).
    pub(crate) own: Own,
    /// The first invalid value a setter was given, for the server's `start` to return.
    pub(crate) error: FirstError,
}

#[derive(Clone, Copy, Debug)]
enum BindFrom {
    Setter,
    Variable(&'static str),
}

/// A server's listener, bound.
#[derive(Debug)]
pub(crate) struct Listening {
    pub(crate) listener: TcpListener,
    /// With the port picked, for port 0.
    pub(crate) local_addr: SocketAddr,
}

impl SidePortConfig {
    /// The defaults of `policy`'s server: loopback, its port, no keys.
    pub(crate) fn new(policy: &'static Policy) -> Self {
        Self {
            policy,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            bind_from: BindFrom::Setter,
            port: policy.port,
            write_timeout: policy.write_timeout,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            own: Own {
                keys: (policy.keys == Keys::Admin).then(AccessKeys::new),
                ..Own::default()
            },
            error: FirstError::default(),
        }
    }

    /// `<settings>::<setter>`, as an error names it: `AdminConfig::port`.
    fn setter(&self, setter: &str) -> String {
        format!("{}::{setter}", self.policy.settings)
    }

    pub(crate) fn bind(&mut self, ip: IpAddr) {
        self.bind = ip;
        self.bind_from = BindFrom::Setter;
    }

    pub(crate) fn port(&mut self, port: u16) {
        self.port = port;
    }

    pub(crate) fn write_timeout(&mut self, timeout: Duration) {
        let setter = self.setter("write_timeout");
        if self
            .error
            .passes(check_in_range(&setter, timeout, Zero::Refused))
        {
            self.write_timeout = timeout;
        }
    }

    pub(crate) fn max_connections(&mut self, max: usize) {
        if max == 0 {
            let setter = self.setter("max_connections");
            self.error
                .passes(Err(ConfigError::new(&setter, "0", "must be non-zero")));
        } else {
            self.max_connections = max;
        }
    }

    pub(crate) fn details(&mut self, details: Details) {
        self.own.details = Some(details);
    }

    /// The operator key, `setter` naming it in errors (a server with [keys](Keys::Admin)
    /// only).
    #[cfg(feature = "admin")]
    pub(crate) fn operator_key(&mut self, key: String, setter: &'static str) {
        let keys = self.own.keys.take().unwrap_or_default();
        self.own.keys = Some(keys.operator_from(key, setter));
    }

    /// The read-only key, `setter` naming it in errors (a server with
    /// [keys](Keys::Admin) only).
    #[cfg(feature = "admin")]
    pub(crate) fn readonly_key(&mut self, key: String, setter: &'static str) {
        let keys = self.own.keys.take().unwrap_or_default();
        self.own.keys = Some(keys.readonly_from(key, setter));
    }

    /// This server's own keys; none on a server without [keys](Keys::None).
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) fn keys(&self) -> &AccessKeys {
        static NONE: std::sync::LazyLock<AccessKeys> = std::sync::LazyLock::new(AccessKeys::new);
        self.own.keys.as_ref().unwrap_or(&NONE)
    }

    /// What this server shows, given what the `readers` of its monitor show: the one rule
    /// ([`Shown::for_reader`]) with this server's own settings and its policy's default.
    pub(crate) fn shown(&self, readers: &Shown) -> Shown {
        readers.for_reader(&self.own, self.policy.details)
    }

    /// The shared settings from the server's [variables](super::policy::Variables) (the keys
    /// too, for a server that has them), over the defaults. Not checked together: see
    /// [`validate`](Self::validate).
    pub(crate) fn from_env(policy: &'static Policy, env: &Env) -> Result<Self, ConfigError> {
        let variables = &policy.variables;
        let mut config = Self::new(policy);
        if let Some((name, value)) = env.first(variables.bind) {
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
            config.bind_from = BindFrom::Variable(name);
        }
        if let Some(port) = env.parse(variables.port, "expected a port number from 0 to 65535")? {
            config.port = port;
        }
        if policy.keys == Keys::Admin {
            config.own.keys = Some(AccessKeys::from_env_snapshot(env)?);
        }
        if let Some(details) =
            env.parse(&[variables.details], "expected always, authorized or never")?
        {
            config.own.details = Some(details);
        }
        if let Some(timeout) = env.duration(variables.write_timeout, None)? {
            config.write_timeout = timeout;
        }
        if let Some(max) = env.parse::<usize>(
            &[variables.max_connections],
            "expected a positive number of connections",
        )? {
            if max == 0 {
                return Err(ConfigError::new(
                    variables.max_connections,
                    "0",
                    "expected a positive number of connections",
                ));
            }
            config.max_connections = max;
        }
        Ok(config)
    }

    /// Checks the settings, for the server's `start` and `from_env`: the first invalid value
    /// a setter was given, then whether they fit together: usable keys, and the bind policy
    /// (any address but loopback needs an operator key, on a server that has keys). The
    /// error names the variable (or setter) at fault.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.error.check()?;
        let keys = self.keys();
        keys.validate()?;
        if self.policy.keys == Keys::Admin && !self.bind.is_loopback() && !keys.is_enabled() {
            let source = match self.bind_from {
                BindFrom::Setter => self.setter("bind"),
                BindFrom::Variable(name) => name.to_owned(),
            };
            return Err(ConfigError::new(
                &source,
                &self.bind.to_string(),
                "binding a non-loopback address needs an operator key (TOWER_HEALTH_ADMIN_KEY or BALDUR_ADMIN_KEY)",
            ));
        }
        Ok(())
    }

    /// Checks the settings and binds.
    pub(crate) async fn listen(&self) -> Result<Listening, SidePortError> {
        self.validate().map_err(SidePortError::Config)?;
        let addr = SocketAddr::new(self.bind, self.port);
        let server = self.policy.server;
        let bind_error = |source| SidePortError::Bind {
            server,
            addr,
            source,
        };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        match self.policy.keys {
            Keys::Admin => {
                let authentication = self.keys().is_enabled();
                tracing::info!(%local_addr, authentication, "{server} listening");
                if !addr.ip().is_loopback() {
                    // It speaks plain HTTP: off loopback, its keys cross the network in clear.
                    tracing::warn!(
                        %local_addr,
                        "the {server} is bound off loopback and speaks plain HTTP: its keys travel in clear unless a TLS proxy fronts it"
                    );
                }
            }
            Keys::None => tracing::info!(%local_addr, "{server} listening"),
        }
        Ok(Listening {
            listener,
            local_addr,
        })
    }

    /// The fields, for the `Debug` of the settings type that holds them. The keys' own
    /// `Debug` says whether they are set, never what they are.
    pub(crate) fn debug_fields(&self, f: &mut fmt::DebugStruct<'_, '_>) {
        // Destructured: a new field does not compile until it is shown or skipped on purpose.
        let Self {
            policy: _,
            bind,
            bind_from: _,
            port,
            write_timeout,
            max_connections,
            own,
            error,
        } = self;
        f.field("bind", bind)
            .field("port", port)
            .field("write_timeout", write_timeout)
            .field("max_connections", max_connections);
        if self.policy.keys == Keys::Admin {
            f.field("keys", &own.keys);
        }
        f.field("details", &own.details)
            .field("nocache", &own.nocache)
            .field("error", error);
    }
}

impl fmt::Debug for SidePortConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("SidePortConfig");
        self.debug_fields(&mut f);
        f.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;
    #[cfg(feature = "admin")]
    use crate::side_port::policy::ADMIN;
    #[cfg(feature = "haproxy-agent")]
    use crate::side_port::policy::AGENT;

    const OPERATOR: &str = "operator-key-0123456789";

    /// Each server's policy, with the prefix of its variables and its settings type.
    fn servers() -> Vec<(&'static Policy, &'static str, &'static str)> {
        vec![
            #[cfg(feature = "admin")]
            (&ADMIN, "TOWER_HEALTH_ADMIN", "AdminConfig"),
            #[cfg(feature = "haproxy-agent")]
            (&AGENT, "TOWER_HEALTH_AGENT", "AgentConfig"),
        ]
    }

    fn from_vars(
        policy: &'static Policy,
        vars: &[(String, &str)],
    ) -> Result<SidePortConfig, ConfigError> {
        let env = Env::from_vars(vars.iter().map(|(name, value)| (name.clone(), *value)));
        let config = SidePortConfig::from_env(policy, &env)?;
        config.validate()?;
        Ok(config)
    }

    #[test]
    fn each_server_reads_its_own_variables() {
        for (policy, prefix, _) in servers() {
            let mut vars = vec![
                (format!("{prefix}_BIND"), "0.0.0.0"),
                (format!("{prefix}_PORT"), "0"),
                (format!("{prefix}_DETAILS"), "authorized"),
                (format!("{prefix}_WRITE_TIMEOUT"), "3s"),
                (format!("{prefix}_MAX_CONNECTIONS"), "3"),
            ];
            if policy.keys == Keys::Admin {
                vars.push(("TOWER_HEALTH_ADMIN_KEY".to_owned(), OPERATOR));
            }
            let config = from_vars(policy, &vars).unwrap();
            assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::UNSPECIFIED), "{prefix}");
            assert_eq!(config.port, 0, "{prefix}");
            assert_eq!(config.own.details, Some(Details::Authorized), "{prefix}");
            assert_eq!(config.write_timeout, Duration::from_secs(3), "{prefix}");
            assert_eq!(config.max_connections, 3, "{prefix}");
            assert_eq!(config.keys().is_enabled(), policy.keys == Keys::Admin);

            let config = from_vars(policy, &[(format!("{prefix}_BIND"), "localhost")]).unwrap();
            assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::LOCALHOST), "{prefix}");
        }
    }

    #[test]
    fn each_server_has_its_defaults() {
        for (policy, prefix, _) in servers() {
            let config = from_vars(policy, &[]).unwrap();
            assert_eq!(config.bind, IpAddr::V4(Ipv4Addr::LOCALHOST), "{prefix}");
            assert_eq!(config.port, policy.port, "{prefix}");
            assert_eq!(config.write_timeout, policy.write_timeout, "{prefix}");
            assert_eq!(config.max_connections, 64, "{prefix}");
            assert!(!config.keys().is_enabled(), "{prefix}");
        }
        #[cfg(feature = "admin")]
        {
            let config = SidePortConfig::new(&ADMIN);
            assert_eq!(config.port, 9090);
            assert_eq!(config.write_timeout, Duration::from_secs(10));
        }
        #[cfg(feature = "haproxy-agent")]
        {
            let config = SidePortConfig::new(&AGENT);
            assert_eq!(config.port, 9777);
            assert_eq!(config.write_timeout, Duration::from_secs(1));
        }
    }

    /// The admin server follows the readers' details unless told otherwise; the agent's
    /// are `never` unless told otherwise, whatever the readers'.
    #[test]
    fn who_sees_details_unless_told_otherwise() {
        for details in [Details::Always, Details::Authorized, Details::Never] {
            let readers = Shown {
                details,
                ..Shown::default()
            };
            #[cfg(feature = "admin")]
            {
                let mut config = SidePortConfig::new(&ADMIN);
                assert_eq!(config.shown(&readers).details, details);
                config.details(Details::Never);
                assert_eq!(config.shown(&readers).details, Details::Never);
            }
            #[cfg(feature = "haproxy-agent")]
            {
                let mut config = SidePortConfig::new(&AGENT);
                assert_eq!(config.shown(&readers).details, Details::Never);
                config.details(Details::Always);
                assert_eq!(config.shown(&readers).details, Details::Always);
            }
        }
    }

    #[test]
    #[cfg(feature = "admin")]
    fn the_admin_server_reads_the_compat_names_after_its_own() {
        let vars = |vars: &[(&str, &'static str)]| {
            vars.iter()
                .map(|&(name, value)| (name.to_owned(), value))
                .collect::<Vec<_>>()
        };
        let config = from_vars(
            &ADMIN,
            &vars(&[
                ("BALDUR_ADMIN_BIND", "0.0.0.0"),
                ("BALDUR_ADMIN_PORT", "0"),
                ("BALDUR_ADMIN_KEY", OPERATOR),
            ]),
        )
        .unwrap();
        assert_eq!(
            (config.bind, config.port),
            (Ipv4Addr::UNSPECIFIED.into(), 0)
        );
        let config = from_vars(
            &ADMIN,
            &vars(&[
                ("BALDUR_ADMIN_BIND", "0.0.0.0"),
                ("BALDUR_ADMIN_PORT", "0"),
                ("TOWER_HEALTH_ADMIN_BIND", "::1"),
                ("TOWER_HEALTH_ADMIN_PORT", "1"),
            ]),
        )
        .unwrap();
        assert_eq!((config.bind, config.port), (Ipv6Addr::LOCALHOST.into(), 1));
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable() {
        for (policy, prefix, _) in servers() {
            for (setting, value) in [
                ("BIND", "my-host"),
                ("PORT", "70000"),
                ("PORT", "-1"),
                ("DETAILS", "sometimes"),
                ("WRITE_TIMEOUT", "0s"),
                ("WRITE_TIMEOUT", "100us"),
                ("WRITE_TIMEOUT", "1000000000000000s"),
                ("MAX_CONNECTIONS", "0"),
                ("MAX_CONNECTIONS", "many"),
            ] {
                let variable = format!("{prefix}_{setting}");
                let error = from_vars(policy, &[(variable.clone(), value)]).unwrap_err();
                assert_eq!(error.variable(), variable, "{value}: {error}");
            }
        }
    }

    /// The bind policy: off loopback, the admin server needs an operator key, named by the
    /// setter or variable that set the address; the agent, which has no keys, does not.
    #[test]
    fn binding_off_loopback_needs_an_operator_key_on_a_server_with_keys() {
        let off_loopback = IpAddr::from([10, 0, 0, 1]);
        for (policy, prefix, settings) in servers() {
            let with_keys = policy.keys == Keys::Admin;
            for loopback in [
                IpAddr::from([127, 0, 0, 1]),
                IpAddr::from(Ipv6Addr::LOCALHOST),
            ] {
                let mut config = SidePortConfig::new(policy);
                config.bind(loopback);
                assert!(config.validate().is_ok(), "{prefix}: {loopback}");
            }

            let mut config = SidePortConfig::new(policy);
            config.bind(off_loopback);
            match config.validate() {
                Ok(()) => assert!(!with_keys, "{prefix}"),
                Err(error) => {
                    assert!(with_keys, "{prefix}: {error}");
                    assert_eq!(error.variable(), format!("{settings}::bind"));
                    assert_eq!(error.value(), "10.0.0.1");
                    assert!(error.reason().contains("operator key"), "{error}");
                }
            }
            let variable = format!("{prefix}_BIND");
            let refused = from_vars(policy, &[(variable.clone(), "10.0.0.1")]);
            assert_eq!(
                refused.err().map(|error| error.variable().to_owned()),
                with_keys.then_some(variable),
            );
            #[cfg(feature = "admin")]
            if with_keys {
                config.operator_key(OPERATOR.to_owned(), "test");
                assert!(config.validate().is_ok(), "{prefix}");
            }
        }
    }

    #[test]
    fn setters_record_the_first_bad_value_naming_the_servers_setter() {
        for (policy, _, settings) in servers() {
            let mut config = SidePortConfig::new(policy);
            config.write_timeout(Duration::ZERO);
            config.max_connections(0);
            let error = config.validate().unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(r#"{settings}::write_timeout="0ns": must be from 1ms to 1year"#)
            );
            assert_eq!(config.write_timeout, policy.write_timeout, "not taken");
            assert_eq!(config.max_connections, 64, "not taken");

            let mut config = SidePortConfig::new(policy);
            config.max_connections(0);
            config.write_timeout(Duration::MAX);
            let error = config.validate().unwrap_err();
            assert_eq!(
                (error.variable(), error.value(), error.reason()),
                (
                    &*format!("{settings}::max_connections"),
                    "0",
                    "must be non-zero"
                )
            );
        }
    }
}
