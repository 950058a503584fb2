//! The environment variables each settings type reads, for the start-up warning about the
//! ones nothing reads.
//!
//! The lists sit apart from the parsers because a build without the `admin` feature still has
//! to recognise the admin server's names. They cannot drift from the parsers: a unit test
//! parses every settings type from an [`Env`](super::Env) that records what it is asked for,
//! and compares. Nor can the documentation's one table (`docs/environment.md`) drift from
//! these lists: another test reads it and compares, section by section.

/// The variables one settings type reads.
#[derive(Debug)]
pub(crate) struct Reader {
    /// What reads them, as a warning names it.
    pub(crate) what: &'static str,
    /// The feature the reader needs, with whether this build has it.
    pub(crate) feature: Option<(&'static str, bool)>,
    pub(crate) names: &'static [&'static str],
    /// Prefixes of names ending in a part of the operator's choosing (`<prefix><NAME>`).
    pub(crate) prefixes: &'static [&'static str],
}

impl Reader {
    /// Whether this reader reads `name`.
    pub(crate) fn reads(&self, name: &str) -> bool {
        self.names.contains(&name) || self.prefixes.iter().any(|&p| name.starts_with(p))
    }

    /// The feature this build lacks to read these variables, if any.
    pub(crate) fn missing_feature(&self) -> Option<&'static str> {
        match self.feature {
            Some((feature, false)) => Some(feature),
            _ => None,
        }
    }
}

/// [`HealthConfig`](crate::HealthConfig).
pub(crate) const HEALTH: Reader = Reader {
    what: "HealthConfig",
    feature: None,
    names: &[
        "BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS",
        "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
        "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
        "BALDUR_REDIS_URL",
        "BALDUR_SQL_DSN",
        "TOWER_HEALTH_CRITICAL",
        "TOWER_HEALTH_CHECK_LIMIT",
        "TOWER_HEALTH_DATABASE_URL",
        "TOWER_HEALTH_DEBOUNCE",
        "TOWER_HEALTH_DETAILS",
        "TOWER_HEALTH_ENVOY_IMMEDIATE_FAIL",
        "TOWER_HEALTH_FLEET_GUARD",
        "TOWER_HEALTH_HEALTH_INTERVAL",
        "TOWER_HEALTH_KUBERNETES_ALIASES",
        "TOWER_HEALTH_LOAD_CAPACITY",
        "TOWER_HEALTH_NOCACHE",
        "TOWER_HEALTH_NOCACHE_MIN_INTERVAL",
        "TOWER_HEALTH_OPTIONAL",
        "TOWER_HEALTH_PATH_PREFIX",
        "TOWER_HEALTH_READINESS_INTERVAL",
        "TOWER_HEALTH_READINESS_TIMEOUT",
        "TOWER_HEALTH_READINESS_TIMEOUT_FAIL_DIRECTION",
        "TOWER_HEALTH_REDIS_URL",
        "TOWER_HEALTH_RETURN_JITTER",
        "TOWER_HEALTH_SELF_MONITORING",
        "TOWER_HEALTH_SHARED_KEY_PREFIX",
        "TOWER_HEALTH_SHARED_LOCK_EXPIRY",
        "TOWER_HEALTH_SHARED_NOCACHE_WRITES",
        "TOWER_HEALTH_SHARED_PROCESS_ID",
        "TOWER_HEALTH_SHARED_TTL",
        "TOWER_HEALTH_UNKNOWN_COMPONENTS",
        "TOWER_HEALTH_STARTUP_WAITS_FOR_MARK",
    ],
    prefixes: &[
        "TOWER_HEALTH_DATABASE_URL_",
        "TOWER_HEALTH_GROUP_",
        "TOWER_HEALTH_HTTP_",
        "TOWER_HEALTH_REDIS_",
        "TOWER_HEALTH_TCP_",
    ],
};

/// [`DrainConfig`](crate::DrainConfig): read by `HealthConfig` for its drain.
pub(crate) const DRAIN: Reader = Reader {
    what: "the drain",
    feature: None,
    names: &[
        "TOWER_HEALTH_DRAIN_CLOSE_WINDOW",
        "TOWER_HEALTH_DRAIN_CONNECTION_CLOSE",
        "TOWER_HEALTH_DRAIN_DELAY",
        "TOWER_HEALTH_DRAIN_POLICY",
        "TOWER_HEALTH_DRAIN_RETRY_AFTER",
        "TOWER_HEALTH_DRAIN_TIMEOUT",
    ],
    prefixes: &[],
};

/// [`AccessKeys`](crate::access::AccessKeys): read by `HealthConfig` and `AdminConfig` alike.
pub(crate) const KEYS: Reader = Reader {
    what: "AccessKeys",
    feature: None,
    names: &[
        "BALDUR_ADMIN_KEY",
        "BALDUR_ADMIN_READONLY_KEY",
        "TOWER_HEALTH_ADMIN_KEY",
        "TOWER_HEALTH_ADMIN_READONLY_KEY",
    ],
    prefixes: &[],
};

/// `AdminConfig`, compiled only with the `admin` feature.
pub(crate) const ADMIN: Reader = Reader {
    what: "the admin server",
    feature: Some(("admin", cfg!(feature = "admin"))),
    names: &[
        "BALDUR_ADMIN_BIND",
        "BALDUR_ADMIN_PORT",
        "TOWER_HEALTH_ADMIN_ALLOWED_HOSTS",
        "TOWER_HEALTH_ADMIN_BIND",
        "TOWER_HEALTH_ADMIN_DETAILS",
        "TOWER_HEALTH_ADMIN_HEADER_TIMEOUT",
        "TOWER_HEALTH_ADMIN_MAX_CONNECTIONS",
        "TOWER_HEALTH_ADMIN_PORT",
        "TOWER_HEALTH_ADMIN_WRITE_TIMEOUT",
    ],
    prefixes: &[],
};

/// `AgentConfig`, compiled only with the `haproxy-agent` feature.
pub(crate) const AGENT: Reader = Reader {
    what: "the HAProxy agent",
    feature: Some(("haproxy-agent", cfg!(feature = "haproxy-agent"))),
    names: &[
        "TOWER_HEALTH_AGENT_BIND",
        "TOWER_HEALTH_AGENT_DEGRADED_WEIGHT",
        "TOWER_HEALTH_AGENT_DETAILS",
        "TOWER_HEALTH_AGENT_MAX_CONNECTIONS",
        "TOWER_HEALTH_AGENT_MAXCONN",
        "TOWER_HEALTH_AGENT_PORT",
        "TOWER_HEALTH_AGENT_SLOW_START",
        "TOWER_HEALTH_AGENT_WRITE_TIMEOUT",
    ],
    prefixes: &[],
};

/// The variable that turns strict mode on: a set variable that no setting reads is an error.
pub(crate) const STRICT_ENV: &str = "TOWER_HEALTH_STRICT_ENV";

/// Strict mode, read by every `from_env` and `from_vars` before its settings.
pub(crate) const STRICT: Reader = Reader {
    what: "strict mode",
    feature: None,
    names: &[STRICT_ENV],
    prefixes: &[],
};

/// Every settings type of the crate, compiled into this build or not.
pub(crate) const READERS: [&Reader; 6] = [&HEALTH, &DRAIN, &KEYS, &ADMIN, &AGENT, &STRICT];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::config::Env;

    /// What a parser asks an empty environment for: everything it could read, since no
    /// setting is set and none is an error. `also` are the readers it calls.
    fn asked_by(reader: &Reader, also: &[&Reader], parse: impl FnOnce(&Env)) {
        let env = Env::default();
        parse(&env);
        let asked = env.take_asked();
        let listed: BTreeSet<_> = std::iter::once(reader)
            .chain(also.iter().copied())
            .flat_map(|reader| reader.names.iter().copied())
            .collect();
        assert_eq!(asked.names, listed, "{}: names", reader.what);
        let listed: BTreeSet<_> = reader.prefixes.iter().copied().collect();
        assert_eq!(asked.prefixes, listed, "{}: prefixes", reader.what);
    }

    #[test]
    fn each_list_is_what_its_parser_reads() {
        asked_by(&HEALTH, &[&KEYS, &DRAIN], |env| {
            let _config = crate::HealthConfig::from_env_snapshot(env).unwrap();
        });
        asked_by(&KEYS, &[], |env| {
            let _keys = crate::access::AccessKeys::from_env_snapshot(env).unwrap();
        });
        asked_by(&DRAIN, &[], |env| {
            let _config = crate::DrainConfig::from_env_snapshot(env).unwrap();
        });
        #[cfg(feature = "admin")]
        asked_by(&ADMIN, &[&KEYS], |env| {
            let _config = crate::admin::AdminConfig::from_env_snapshot(env).unwrap();
        });
        #[cfg(feature = "haproxy-agent")]
        asked_by(&AGENT, &[], |env| {
            let _config = crate::haproxy::AgentConfig::from_env_snapshot(env).unwrap();
        });
        asked_by(&STRICT, &[], |env| {
            crate::config::refuse_unread_if_strict(env).unwrap();
        });
    }

    /// The variables a section of `docs/environment.md` lists, in either of its first two
    /// columns: `(names, prefixes)`, a `<NAME>` suffix marking a prefix.
    fn documented(section: &str) -> (BTreeSet<&str>, BTreeSet<&str>) {
        let mut names = BTreeSet::new();
        let mut prefixes = BTreeSet::new();
        let rows = section.lines().filter(|line| line.starts_with("| `"));
        for cells in rows.map(|row| row.split('|').skip(1).take(2).collect::<Vec<_>>()) {
            for cell in cells {
                for (i, quoted) in cell.split('`').enumerate() {
                    if i % 2 == 0 || !quoted.starts_with(['T', 'B']) {
                        continue;
                    }
                    match quoted.strip_suffix("<NAME>") {
                        Some(prefix) => assert!(prefixes.insert(prefix), "{prefix} twice"),
                        None => assert!(names.insert(quoted), "{quoted} twice"),
                    }
                }
            }
        }
        (names, prefixes)
    }

    #[test]
    fn the_documented_table_is_these_lists() {
        let table = include_str!("../docs/environment.md");
        let sections: Vec<&str> = table.split("\n## ").skip(1).collect();
        let expected = [
            ("`HealthConfig::from_env`", &HEALTH),
            ("The keys", &KEYS),
            ("The drain, read by `HealthConfig::from_env`", &DRAIN),
            ("`AdminConfig::from_env`", &ADMIN),
            ("`AgentConfig::from_env`", &AGENT),
            ("Every `from_env`", &STRICT),
        ];
        assert_eq!(sections.len(), expected.len(), "one section per reader");
        assert_eq!(expected.len(), READERS.len());
        for (section, (heading, reader)) in sections.iter().zip(expected) {
            assert!(section.starts_with(heading), "{heading}: out of order");
            let (names, prefixes) = documented(section);
            let listed: BTreeSet<_> = reader.names.iter().copied().collect();
            assert_eq!(names, listed, "{heading}: names");
            let listed: BTreeSet<_> = reader.prefixes.iter().copied().collect();
            assert_eq!(prefixes, listed, "{heading}: prefixes");
        }
    }

    #[test]
    fn each_name_has_one_reader() {
        let mut seen = BTreeSet::new();
        for reader in READERS {
            for name in reader.names.iter().chain(reader.prefixes) {
                assert!(seen.insert(name), "{name} is listed twice");
            }
        }
    }

    #[test]
    fn only_the_admin_server_and_the_agent_sit_behind_a_feature() {
        assert_eq!(HEALTH.missing_feature(), None);
        assert_eq!(DRAIN.missing_feature(), None);
        assert_eq!(KEYS.missing_feature(), None);
        assert_eq!(STRICT.missing_feature(), None);
        let expected = if cfg!(feature = "admin") {
            None
        } else {
            Some("admin")
        };
        assert_eq!(ADMIN.missing_feature(), expected);
        let expected = if cfg!(feature = "haproxy-agent") {
            None
        } else {
            Some("haproxy-agent")
        };
        assert_eq!(AGENT.missing_feature(), expected);
    }
}
