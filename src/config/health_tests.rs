//! `HealthConfig`: defaults, setters and the environment.

use std::time::Duration;

use super::super::{FailDirection, HealthConfig, NoCache, validate_prefix};
use crate::check::{CheckFuture, CheckReport, DatabaseCheck};

#[derive(Debug)]
struct Nothing;

impl DatabaseCheck for Nothing {
    fn vendor(&self) -> &'static str {
        "none"
    }

    fn check(&self) -> CheckFuture {
        Box::pin(async { Ok(CheckReport::default()) })
    }
}

#[test]
fn defaults() {
    let config = HealthConfig::new();
    assert_eq!(config.readiness_timeout, Duration::from_millis(500));
    assert_eq!(config.readiness_interval, Duration::from_secs(1));
    assert_eq!(config.health_interval, Duration::from_secs(10));
    assert_eq!(config.fail_direction, FailDirection::NotReady);
    assert_eq!(config.readers.prefix, "/health");
    assert_eq!(config.default_database_index(), None);
}

#[test]
fn default_database_is_named_default_or_first() {
    let config = HealthConfig::new()
        .database("replica", Nothing)
        .database("default", Nothing);
    assert_eq!(config.default_database_index(), Some(1));
    let config = HealthConfig::new()
        .database("a", Nothing)
        .database("b", Nothing);
    assert_eq!(config.default_database_index(), Some(0));
    let config = config.database("a", Nothing);
    assert_eq!(config.database_names().collect::<Vec<_>>(), ["a", "b"]);
}

/// The error the one fallible point returns for `config`.
fn refused(config: HealthConfig) -> crate::config::ConfigError {
    crate::HealthMonitor::new(config).unwrap_err()
}

#[test]
fn a_bad_database_name_is_refused_where_the_monitor_is_made() {
    let error = refused(HealthConfig::new().database("no spaces", Nothing));
    assert!(error.to_string().contains("database name"), "{error}");
    assert_eq!(
        (error.variable(), error.value()),
        ("HealthConfig::database", "no spaces")
    );
    assert_eq!(
        HealthConfig::new()
            .database("no spaces", Nothing)
            .database_names()
            .count(),
        0,
        "not added"
    );
}

#[test]
fn an_instance_name_is_one_line_of_a_title_s_length() {
    let config = HealthConfig::new().instance("chat 1.4.2");
    assert_eq!(config.readers.instance.as_deref(), Some("chat 1.4.2"));
    let long = "x".repeat(101);
    for (name, reason) in [
        ("", "empty"),
        (" ", "empty"),
        (long.as_str(), "at most 100"),
        ("chat\n<b>", "control character"),
    ] {
        let error = refused(HealthConfig::new().instance(name));
        assert_eq!(error.variable(), "HealthConfig::instance", "{error}");
        assert!(error.reason().contains(reason), "{name:?}: {error}");
    }
    assert!(crate::HealthMonitor::new(HealthConfig::new().instance(&"x".repeat(100))).is_ok());
}

#[test]
fn the_first_bad_value_is_the_one_returned() {
    let error = refused(
        HealthConfig::new()
            .readiness_interval(Duration::ZERO)
            .database("no spaces", Nothing)
            .path_prefix("health"),
    );
    assert_eq!(error.variable(), "HealthConfig::readiness_interval");
    let error = refused(
        HealthConfig::new()
            .path_prefix("health")
            .readiness_interval(Duration::ZERO),
    );
    assert_eq!(
        (error.variable(), error.value(), error.reason()),
        (
            "HealthConfig::path_prefix",
            "health",
            "the path prefix must start with '/' and not be '/' alone"
        )
    );
}

#[test]
fn prefix_is_validated_and_trimmed() {
    assert_eq!(
        HealthConfig::new().path_prefix("/probes/").readers.prefix,
        "/probes"
    );
    assert!(validate_prefix("health").is_err());
    assert!(validate_prefix("/").is_err());
    assert!(validate_prefix("/a?b").is_err());
}

#[cfg(feature = "metrics")]
#[test]
fn the_metrics_path_is_validated_and_trimmed_like_the_prefix() {
    assert_eq!(
        HealthConfig::new().readers.metrics_path,
        None,
        "off by default"
    );
    assert_eq!(
        HealthConfig::new()
            .metrics_path("/_health/metrics/")
            .readers
            .metrics_path
            .as_deref(),
        Some("/_health/metrics")
    );
    for (path, reason) in [
        (
            "metrics",
            "the metrics path must start with '/' and not be '/' alone",
        ),
        (
            "/",
            "the metrics path must start with '/' and not be '/' alone",
        ),
        ("/metrics?x", "the metrics path cannot contain '?' or '#'"),
        ("/metrics#x", "the metrics path cannot contain '?' or '#'"),
    ] {
        let config = HealthConfig::new().metrics_path("/kept").metrics_path(path);
        assert_eq!(
            config.readers.metrics_path.as_deref(),
            Some("/kept"),
            "{path}"
        );
        let error = refused(config);
        // (The value is redacted: a query's value is masked.)
        assert_eq!(
            (error.variable(), error.reason()),
            ("HealthConfig::metrics_path", reason),
            "{path}"
        );
    }
}

#[test]
fn from_vars_reads_own_and_compat_names() {
    let config = HealthConfig::from_vars([
        (
            "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
            "0.25",
        ),
        ("BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS", "3"),
        (
            "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
            "ready",
        ),
        ("TOWER_HEALTH_READINESS_INTERVAL", "2s"),
        ("TOWER_HEALTH_HEALTH_INTERVAL", "1m"),
        ("TOWER_HEALTH_PATH_PREFIX", "/probe/"),
        ("TOWER_HEALTH_NOCACHE", "off"),
        ("TOWER_HEALTH_NOCACHE_MIN_INTERVAL", "0"),
        ("TOWER_HEALTH_CHECK_LIMIT", "30s"),
        ("TOWER_HEALTH_RETURN_JITTER", "12s"),
    ])
    .unwrap();
    assert_eq!(config.readiness_timeout, Duration::from_millis(250));
    assert_eq!(
        config.readiness_interval,
        Duration::from_secs(2),
        "own name wins"
    );
    assert_eq!(config.health_interval, Duration::from_secs(60));
    assert_eq!(config.fail_direction, FailDirection::Ready);
    assert_eq!(config.readers.prefix, "/probe");
    assert_eq!(config.readers.shown.nocache, NoCache::Off);
    assert_eq!(config.nocache_min_interval, Duration::ZERO);
    assert_eq!(config.check_limit, Duration::from_secs(30));
    assert_eq!(config.return_jitter, Duration::from_secs(12));
    let off = HealthConfig::from_vars([("TOWER_HEALTH_RETURN_JITTER", "0")]).unwrap();
    assert_eq!(off.return_jitter, Duration::ZERO);
    let default = HealthConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
    assert_eq!(default.return_jitter, Duration::from_secs(5));
}

#[test]
fn optional_databases_from_the_environment_and_the_builder() {
    let config =
        HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "Replica, analytics,")]).unwrap();
    assert!(config.is_optional("replica") && config.is_optional("analytics"));
    assert!(!config.is_optional("default"));
    let config = config.optional_database("reports");
    assert!(config.is_optional("reports"));
    let error = HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "no spaces")]).unwrap_err();
    assert_eq!(error.variable(), "TOWER_HEALTH_OPTIONAL");
    let error = refused(HealthConfig::new().optional_database(""));
    assert_eq!(error.variable(), "HealthConfig::optional_database");
}

#[test]
fn from_vars_names_the_bad_variable() {
    let cases = [
        (
            "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
            "sideways",
        ),
        ("TOWER_HEALTH_READINESS_TIMEOUT", "-1s"),
        ("BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS", "-1"),
        ("TOWER_HEALTH_HEALTH_INTERVAL", "often"),
        ("TOWER_HEALTH_PATH_PREFIX", "health"),
        ("TOWER_HEALTH_NOCACHE", "sometimes"),
        ("TOWER_HEALTH_RETURN_JITTER", "a while"),
        ("TOWER_HEALTH_RETURN_JITTER", "-1s"),
    ];
    for (variable, value) in cases {
        let error = HealthConfig::from_vars([(variable, value)]).unwrap_err();
        assert_eq!(error.variable(), variable);
        assert_eq!(error.value(), value);
        assert!(error.to_string().contains(variable), "{error}");
    }
}

#[test]
fn from_vars_refuses_durations_out_of_range() {
    for (variable, value, reason) in [
        (
            "TOWER_HEALTH_READINESS_INTERVAL",
            "1000000000000000s",
            "expected at most 1year",
        ),
        (
            "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
            "1e-10",
            "expected at least 1ms",
        ),
        (
            "BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS",
            "1e20",
            "expected at most 1year",
        ),
        (
            "TOWER_HEALTH_HEALTH_INTERVAL",
            "0s",
            "expected at least 1ms",
        ),
        ("TOWER_HEALTH_CHECK_LIMIT", "100us", "expected at least 1ms"),
        (
            "TOWER_HEALTH_NOCACHE_MIN_INTERVAL",
            "10us",
            "expected 0 or at least 1ms",
        ),
    ] {
        let error = HealthConfig::from_vars([(variable, value)]).unwrap_err();
        assert_eq!(
            (error.variable(), error.value(), error.reason()),
            (variable, value, reason)
        );
    }
    let config = HealthConfig::from_vars([("TOWER_HEALTH_READINESS_INTERVAL", "1y")]).unwrap();
    assert_eq!(config.readiness_interval, crate::config::MAX_DURATION);
}

#[test]
fn an_interval_longer_than_a_year_is_refused() {
    let error =
        refused(HealthConfig::new().readiness_interval(Duration::from_secs(1_000_000_000_000_000)));
    assert!(
        error
            .to_string()
            .starts_with("HealthConfig::readiness_interval=")
            && error.reason() == "must be from 1ms to 1year",
        "{error}"
    );
}

#[test]
fn a_timeout_shorter_than_a_millisecond_is_refused() {
    let error = refused(HealthConfig::new().readiness_timeout(Duration::from_nanos(100)));
    assert_eq!(
        error.to_string(),
        r#"HealthConfig::readiness_timeout="100ns": must be from 1ms to 1year"#
    );
}

#[test]
fn a_rate_limit_longer_than_a_year_is_refused() {
    let error = refused(HealthConfig::new().nocache_min_interval(Duration::MAX));
    assert_eq!(error.variable(), "HealthConfig::nocache_min_interval");
    assert_eq!(error.reason(), "must be zero or from 1ms to 1year");
}

#[test]
fn every_duration_setter_is_checked_where_the_monitor_is_made() {
    for (setter, config) in [
        (
            "HealthConfig::readiness_timeout",
            HealthConfig::new().readiness_timeout(Duration::ZERO),
        ),
        (
            "HealthConfig::health_interval",
            HealthConfig::new().health_interval(Duration::ZERO),
        ),
        (
            "HealthConfig::check_limit",
            HealthConfig::new().check_limit(Duration::MAX),
        ),
        (
            "HealthConfig::return_jitter",
            HealthConfig::new().return_jitter(Duration::from_micros(10)),
        ),
    ] {
        assert_eq!(refused(config).variable(), setter);
    }
    assert!(
        crate::HealthMonitor::new(HealthConfig::new().nocache_min_interval(Duration::ZERO)).is_ok()
    );
    assert!(crate::HealthMonitor::new(HealthConfig::new().return_jitter(Duration::ZERO)).is_ok());
}

#[cfg(feature = "postgres")]
#[test]
fn from_vars_reads_databases() {
    let config = HealthConfig::from_vars([
        ("BALDUR_SQL_DSN", "postgres://postgres@127.0.0.1/postgres"),
        (
            "TOWER_HEALTH_DATABASE_URL_REPLICA",
            "postgres://postgres@127.0.0.1/test",
        ),
    ])
    .unwrap();
    assert_eq!(
        config.database_names().collect::<Vec<_>>(),
        ["default", "replica"]
    );

    let error = HealthConfig::from_vars([(
        "TOWER_HEALTH_DATABASE_URL",
        "postgres://app:hunter2@db:port/app",
    )])
    .unwrap_err();
    assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[cfg(feature = "postgres")]
#[test]
fn a_password_with_a_quote_is_never_echoed() {
    // tokio-postgres takes this one as it is: the password is `it's`.
    let dsn = "postgres://app:it's@db/app";
    let config = HealthConfig::from_vars([("TOWER_HEALTH_DATABASE_URL", dsn)]).unwrap();
    assert!(!format!("{config:?}").contains("it'"), "{config:?}");
    // Ones that do not parse: the error names the variable and masks the password.
    for dsn in [
        "postgres://app:it's@db:notaport/app",
        "postgres://app:it's@db/app?sslmode=sometimes",
        "postgres://app:it s@db:notaport/app",
        "host=db password='it's",
    ] {
        let error = HealthConfig::from_vars([("TOWER_HEALTH_DATABASE_URL", dsn)]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL");
        for text in [
            error.to_string(),
            format!("{error:?}"),
            error.value().to_owned(),
        ] {
            assert!(
                !text.contains("it'") && !text.contains("it s"),
                "{dsn}: {text}"
            );
        }
        assert!(error.value().contains("***"), "{dsn}: {error}");
    }
}

#[test]
fn the_unread_variables_are_kept_as_warnings() {
    assert!(HealthConfig::new().warnings().is_empty());
    let config = HealthConfig::from_vars([
        ("TOWER_HEALTH_READINESS_TIMOUT", "300ms"),
        // Read by `DrainConfig`; and Baldur's names are Baldur's.
        ("TOWER_HEALTH_DRAIN_DELAY", "1s"),
        ("BALDUR_SOMETHING_ELSE", "1"),
    ])
    .unwrap();
    let warnings: Vec<_> = config
        .warnings()
        .iter()
        .map(|warning| (warning.variable(), warning.to_string()))
        .collect();
    assert_eq!(
        warnings,
        [(
            "TOWER_HEALTH_READINESS_TIMOUT",
            "TOWER_HEALTH_READINESS_TIMOUT is not read by any setting; did you mean TOWER_HEALTH_READINESS_TIMEOUT?".to_owned()
        )]
    );
}

#[test]
fn strict_mode_refuses_what_every_from_vars_would_only_warn_about() {
    let vars = [
        ("TOWER_HEALTH_STRICT_ENV", "true"),
        ("TOWER_HEALTH_READINESS_TIMOUT", "300ms"),
    ];
    let health = HealthConfig::from_vars(vars).unwrap_err();
    #[cfg(feature = "admin")]
    let admin = crate::admin::AdminConfig::from_vars(vars).unwrap_err();
    for error in [
        health,
        #[cfg(feature = "admin")]
        admin,
    ] {
        assert_eq!(error.variable(), "TOWER_HEALTH_READINESS_TIMOUT");
        assert!(
            error
                .reason()
                .contains("did you mean TOWER_HEALTH_READINESS_TIMEOUT?"),
            "{error}"
        );
    }
    assert!(HealthConfig::from_vars([("TOWER_HEALTH_STRICT_ENV", "true")]).is_ok());
}

#[cfg(feature = "postgres")]
#[test]
fn a_database_from_the_environment_replaced_in_code_is_a_warning_naming_both() {
    for variable in ["TOWER_HEALTH_DATABASE_URL", "BALDUR_SQL_DSN"] {
        let config =
            HealthConfig::from_vars([(variable, "postgres://postgres@127.0.0.1/postgres")])
                .unwrap()
                .database("default", Nothing);
        let warnings: Vec<_> = config
            .warnings()
            .iter()
            .map(|warning| (warning.variable(), warning.to_string()))
            .collect();
        assert_eq!(
            warnings,
            [(
                variable,
                format!(
                    "the database `default` of {variable} is replaced by HealthConfig::database(\"default\", ..) in code: {variable} is not checked"
                )
            )]
        );
    }
    // A named one too.
    let config = HealthConfig::from_vars([(
        "TOWER_HEALTH_DATABASE_URL_REPLICA",
        "postgres://postgres@127.0.0.1/test",
    )])
    .unwrap()
    .database("replica", Nothing);
    assert_eq!(
        config.warnings()[0].variable(),
        "TOWER_HEALTH_DATABASE_URL_REPLICA"
    );
    // Replacing one added in code, or one removed first, is what the code says.
    let config = HealthConfig::from_vars([(
        "TOWER_HEALTH_DATABASE_URL",
        "postgres://postgres@127.0.0.1/postgres",
    )])
    .unwrap()
    .without_databases()
    .database("default", Nothing)
    .database("default", Nothing);
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
}

#[test]
fn a_components_bad_values_are_refused_where_the_monitor_is_made() {
    use crate::component::ComponentSpec;
    use crate::test_helpers::FakeComponent;

    let component = || FakeComponent::new(crate::test_helpers::FakeCheck::Ready);
    for (setter, value, spec) in [
        (
            "ComponentSpec::new",
            "no spaces",
            ComponentSpec::new("no spaces", component()),
        ),
        (
            "ComponentSpec::timeout",
            "0ns",
            ComponentSpec::new("a", component()).timeout(Duration::ZERO),
        ),
        (
            "ComponentSpec::cadence",
            "0ns",
            ComponentSpec::new("a", component()).cadence(Duration::ZERO),
        ),
        (
            "ComponentSpec::failures_before_trouble",
            "0",
            ComponentSpec::new("a", component()).failures_before_trouble(0),
        ),
        (
            "ComponentSpec::successes_before_recovery",
            "0",
            ComponentSpec::new("a", component())
                .successes_before_recovery(0)
                .failures_before_trouble(0),
        ),
    ] {
        let error = refused(HealthConfig::new().component(spec));
        assert_eq!(
            (error.variable(), error.value()),
            (setter, value),
            "{error}"
        );
    }
    let error = refused(
        HealthConfig::new()
            .component(ComponentSpec::new("a", component()).failures_before_trouble(0)),
    );
    assert_eq!(error.reason(), "must be at least 1");
    let error =
        refused(HealthConfig::new().component(ComponentSpec::new("no spaces", component())));
    assert!(
        error.reason().starts_with("a component name must be"),
        "{error}"
    );
    // The configuration's own error came first.
    let error = refused(
        HealthConfig::new()
            .check_limit(Duration::ZERO)
            .component(ComponentSpec::new("a", component()).cadence(Duration::ZERO)),
    );
    assert_eq!(error.variable(), "HealthConfig::check_limit");
}

#[cfg(feature = "redis")]
#[test]
fn a_shared_caches_bad_values_are_refused_where_the_monitor_is_made() {
    use crate::redis::SharedCache;

    let cache = || SharedCache::connect("redis://127.0.0.1:6379/0").unwrap();
    for (setter, value, cache) in [
        ("SharedCache::key_prefix", "", cache().key_prefix("")),
        ("SharedCache::key_prefix", "a b", cache().key_prefix("a b")),
        ("SharedCache::ttl", "0ns", cache().ttl(Duration::ZERO)),
        (
            "SharedCache::lock_expiry",
            "0ns",
            cache().lock_expiry(Duration::ZERO).ttl(Duration::ZERO),
        ),
    ] {
        let error = refused(HealthConfig::new().shared_cache(cache));
        assert_eq!(
            (error.variable(), error.value()),
            (setter, value),
            "{error}"
        );
    }
}

#[test]
fn unusable_keys_are_refused_where_the_monitor_is_made() {
    use crate::access::AccessKeys;

    let error = refused(HealthConfig::new().access_keys(AccessKeys::new().operator("short")));
    assert_eq!(
        (error.variable(), error.value()),
        ("AccessKeys::operator", "<hidden>"),
        "names the setter, never the key"
    );
    let keys = AccessKeys::new().readonly("readonly-key-0123456789");
    let error = refused(HealthConfig::new().access_keys(keys));
    assert!(error.reason().contains("operator key"), "{error}");
    let usable = AccessKeys::new().operator("operator-key-0123456789");
    assert!(crate::HealthMonitor::new(HealthConfig::new().access_keys(usable)).is_ok());
}
