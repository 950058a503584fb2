//! Properties of reading settings from the environment: any set of variables, with any
//! values, gives settings or an error naming one of the variables that were set, never a
//! panic, and never an error that repeats a password.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::HealthConfig;
use crate::env::READERS;

/// The password in the connection strings the properties set.
const PASSWORD: &str = "Pr0p-S3cret";

/// A variable name: every name and prefix a settings type reads, and near misses.
fn name() -> impl Strategy<Value = String> {
    let names: Vec<String> = READERS
        .iter()
        .flat_map(|reader| reader.names.iter().map(|&name| name.to_owned()))
        .collect();
    let prefixes: Vec<&'static str> = READERS
        .iter()
        .flat_map(|reader| reader.prefixes.iter().copied())
        .collect();
    prop_oneof![
        3 => proptest::sample::select(names),
        1 => (proptest::sample::select(prefixes), "[A-Za-z0-9_-]{0,6}|[^=]{0,4}")
            .prop_map(|(prefix, suffix)| format!("{prefix}{suffix}")),
        1 => "(TOWER_HEALTH_|BALDUR_)[A-Z_]{0,12}",
    ]
}

/// A value: what each kind of setting takes, its edges, and anything at all.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "500ms",
            "0",
            "0s",
            "1y",
            "2y",
            "-1s",
            "1e-10",
            "1e300",
            "inf",
            "NaN",
            "0.5",
            "18446744073709551616s",
            "true",
            "no",
            "ready",
            "not_ready",
            "allowed",
            "authorized",
            "never",
            "in_trouble",
            "/",
            "/health",
            "/x?",
            "::1",
            "0.0.0.0",
            "localhost",
            "65536",
            "0",
            "9090",
            "a,b,,C",
            "127.0.0.1:1",
            "http://h/",
            "ftp://h",
        ])
        .prop_map(str::to_owned),
        (
            proptest::sample::select(vec!["postgres", "postgresql", "redis", "http", "https"]),
            "[a-z]{1,6}",
            "[a-z0-9.-]{0,10}(:[0-9]{0,6})?",
            "(/[a-z]{0,6})?(\\?(sslmode|sslrootcert|connect_timeout|host)=[a-z0-9/.-]{0,10})?",
        )
            .prop_map(|(scheme, user, host, tail)| format!(
                "{scheme}://{user}:{PASSWORD}@{host}{tail}"
            )),
        proptest::sample::select(vec!["host=h password=", "user=u password='", "password = "])
            .prop_map(|start| format!("{start}{PASSWORD} dbname=x")),
        "[ -~]{0,24}",
        any::<String>().prop_map(|value| value.chars().take(24).collect()),
    ]
}

fn vars() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(name(), value(), 0..6)
}

/// The error names a variable that was set, and says nothing of the password.
fn check_error(
    vars: &BTreeMap<String, String>,
    error: &super::ConfigError,
) -> Result<(), TestCaseError> {
    prop_assert!(
        vars.contains_key(error.variable()),
        "{error} names {:?}, which is not among {:?}",
        error.variable(),
        vars.keys().collect::<Vec<_>>()
    );
    prop_assert!(!error.to_string().contains(PASSWORD), "{error}");
    Ok(())
}

proptest! {
    #[test]
    fn health_settings_or_an_error_naming_the_variable(vars in vars()) {
        if let Err(error) = HealthConfig::from_vars(vars.clone()) {
            check_error(&vars, &error)?;
        }
    }

    #[cfg(feature = "admin")]
    #[test]
    fn admin_settings_or_an_error_naming_the_variable(vars in vars()) {
        if let Err(error) = crate::admin::AdminConfig::from_vars(vars.clone()) {
            check_error(&vars, &error)?;
        }
    }
}
