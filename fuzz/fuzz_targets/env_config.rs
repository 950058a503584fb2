//! Settings from the environment: any variables, any values. Settings or an error naming
//! one of the variables that were set, never a panic, never a password in the error.
//!
//! Input: lines `NAME=VALUE`.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use tower_health::admin::AdminConfig;
use tower_health::HealthConfig;

/// Connection strings in the corpus use this password.
const PASSWORD: &str = "Fuzz-S3cret";

fuzz_target!(|text: &str| {
    let vars: BTreeMap<String, String> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    // The password is a secret where it sits as one: a URL's `user:password@`, or a
    // key-value `password=`. (Written once, so that a copy elsewhere, in a URL's path or a
    // variable's name, is not taken for a leak.)
    let occurrences: usize = vars
        .iter()
        .map(|(name, value)| name.matches(PASSWORD).count() + value.matches(PASSWORD).count())
        .sum();
    let holds_password = occurrences == 1
        && vars.values().any(|value| {
            value.contains(&format!(":{PASSWORD}@"))
                || value.contains(&format!("password={PASSWORD}"))
        });
    let check = |error: tower_health::config::ConfigError| {
        assert!(
            vars.contains_key(error.variable()),
            "{error} names a variable that was not set: {vars:?}"
        );
        if holds_password {
            assert!(!error.to_string().contains(PASSWORD), "{error}");
        }
    };
    if let Err(error) = HealthConfig::from_vars(vars.clone()) {
        check(error);
    }
    if let Err(error) = AdminConfig::from_vars(vars.clone()) {
        check(error);
    }
});
