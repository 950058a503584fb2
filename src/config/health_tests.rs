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
    assert_eq!(config.path_prefix, "/health");
    assert_eq!(config.default_database_index(), None);
}

#[test]
fn default_database_is_named_default_or_first() {
    let config = HealthConfig::new()
        .database("replica", Nothing)
        .unwrap()
        .database("default", Nothing)
        .unwrap();
    assert_eq!(config.default_database_index(), Some(1));
    let config = HealthConfig::new()
        .database("a", Nothing)
        .unwrap()
        .database("b", Nothing)
        .unwrap();
    assert_eq!(config.default_database_index(), Some(0));
    let config = config.database("a", Nothing).unwrap();
    assert_eq!(config.database_names().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
#[should_panic(expected = "database name")]
fn bad_database_name_panics() {
    let _ = HealthConfig::new().database("no spaces", Nothing).unwrap();
}

#[test]
fn prefix_is_validated_and_trimmed() {
    assert_eq!(
        HealthConfig::new().path_prefix("/probes/").path_prefix,
        "/probes"
    );
    assert!(validate_prefix("health").is_err());
    assert!(validate_prefix("/").is_err());
    assert!(validate_prefix("/a?b").is_err());
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
    assert_eq!(config.path_prefix, "/probe");
    assert_eq!(config.nocache, NoCache::Off);
    assert_eq!(config.nocache_min_interval, Duration::ZERO);
    assert_eq!(config.check_limit, Duration::from_secs(30));
}

#[test]
fn optional_databases_from_the_environment_and_the_builder() {
    let config =
        HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "Replica, analytics,")]).unwrap();
    assert!(config.is_optional("replica") && config.is_optional("analytics"));
    assert!(!config.is_optional("default"));
    let config = config.optional_database("reports").unwrap();
    assert!(config.is_optional("reports"));
    let error = HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "no spaces")]).unwrap_err();
    assert_eq!(error.variable(), "TOWER_HEALTH_OPTIONAL");
    assert!(HealthConfig::new().optional_database("").is_err());
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
#[should_panic(expected = "HealthConfig::readiness_interval must be from 1ms to 1year")]
fn an_interval_longer_than_a_year_panics() {
    let _ = HealthConfig::new().readiness_interval(Duration::from_secs(1_000_000_000_000_000));
}

#[test]
#[should_panic(expected = "HealthConfig::readiness_timeout must be from 1ms to 1year")]
fn a_timeout_shorter_than_a_millisecond_panics() {
    let _ = HealthConfig::new().readiness_timeout(Duration::from_nanos(100));
}

#[test]
#[should_panic(expected = "HealthConfig::nocache_min_interval must be zero or from 1ms to 1year")]
fn a_rate_limit_longer_than_a_year_panics() {
    let _ = HealthConfig::new().nocache_min_interval(Duration::MAX);
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
    let drain = crate::DrainConfig::from_vars(vars).unwrap_err();
    for error in [health, drain] {
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
                .database("default", Nothing)
                .unwrap();
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
    .database("replica", Nothing)
    .unwrap();
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
    .unwrap()
    .database("default", Nothing)
    .unwrap();
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
}
