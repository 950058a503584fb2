//! Properties of redaction: a connection string's password and a URL's query values never
//! survive [`redact`], whatever they hold and wherever the string sits in a message.

use proptest::prelude::*;

use super::redact;

/// Passwords as people write them into URLs: reserved characters, quotes, `@`, `:`, `/`,
/// percent-escapes, and now and then a space.
fn url_password() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#$%&'()*+,/:;=?@\\[\\]_~.\"-]{3,16}( [A-Za-z0-9@:/]{1,6})?"
}

/// Passwords for the key-value form: anything printable, spaces included (quoted then).
fn key_value_password() -> impl Strategy<Value = String> {
    "[ -~]{3,16}"
}

/// Query values as they reach a URL unencoded: anything printable but whitespace and the
/// `&` and `#` that end a value.
fn query_value() -> impl Strategy<Value = String> {
    "[!-~--[&#]]{3,16}"
}

fn scheme() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "postgres",
        "postgresql",
        "redis",
        "rediss",
        "redis+sentinel",
        "mysql",
        "amqp",
    ])
}

/// A message around the connection string, as drivers and configuration errors word them.
fn around() -> impl Strategy<Value = (String, String)> {
    (
        proptest::sample::select(vec![
            "",
            "error connecting to ",
            "invalid connection string '",
            "TOWER_HEALTH_DATABASE_URL=\"",
            "redis: ",
            "(",
        ]),
        proptest::sample::select(vec![
            "",
            "'",
            "\"",
            ": connection refused",
            ")",
            " and more",
        ]),
    )
        .prop_map(|(before, after)| (before.to_owned(), after.to_owned()))
}

/// `password` is masked in `redacted`, unless even a perfect masking of `rest` (the message
/// with the password replaced by the mask) would still contain it.
fn masked(redacted: &str, password: &str, rest: &str) -> bool {
    rest.contains(password) || !redacted.contains(password)
}

proptest! {
    /// The password of a URL (`scheme://user:password@host:port/db?params`) never survives.
    #[test]
    fn url_passwords_never_survive(
        scheme in scheme(),
        user in "[a-z_][a-z0-9_.-]{0,8}",
        password in url_password(),
        host in "[a-z][a-z0-9.-]{0,12}",
        port in proptest::option::of(1u16..),
        tail in "(/[a-z0-9_]{0,8})?(\\?[a-z_]{1,8}=[a-z0-9]{1,8})?",
        (before, after) in around(),
        second in proptest::option::of((scheme(), url_password())),
    ) {
        // A password holding `://` reads as a second URL: the one limit `redact` documents.
        prop_assume!(!password.contains("://"));
        prop_assume!(second.as_ref().is_none_or(|(_, password)| !password.contains("://")));
        let port = port.map(|port| format!(":{port}")).unwrap_or_default();
        let url = format!("{scheme}://{user}:{password}@{host}{port}{tail}");
        let mut message = format!("{before}{url}{after}");
        let mut rest = format!("{before}{scheme}://{user}:***@{host}{port}{tail}{after}");
        let mut passwords = vec![password];
        if let Some((scheme, password)) = second {
            message.push_str(&format!(" then {scheme}://:{password}@cache:6379/0"));
            rest.push_str(&format!(" then {scheme}://:***@cache:6379/0"));
            passwords.push(password);
        }
        let redacted = redact(&message);
        for password in &passwords {
            prop_assert!(masked(&redacted, password, &rest), "{message:?} -> {redacted:?}");
        }
        prop_assert!(!redacted.contains(&url) || rest.contains(&url));
    }

    /// The value of every query parameter of a URL (`scheme://host/path?key=value&..#..`)
    /// never survives, and the keys stay.
    #[test]
    fn query_values_never_survive(
        scheme in proptest::sample::select(vec!["http", "https", "postgres", "redis+unix"]),
        host in "[a-z][a-z0-9.-]{0,12}",
        path in "(/[a-z0-9_]{0,8}){0,2}",
        parameters in proptest::collection::vec(("[a-z_]{1,12}", query_value()), 1..4),
        fragment in "(#[a-z/]{0,8})?",
        (before, after) in around(),
    ) {
        let query = |value: &dyn Fn(&str) -> String| {
            parameters
                .iter()
                .map(|(key, secret)| format!("{key}={}", value(secret)))
                .collect::<Vec<_>>()
                .join("&")
        };
        let url = |query: String| format!("{scheme}://{host}{path}?{query}{fragment}");
        let message = format!("{before}{}{after}", url(query(&|secret| secret.to_owned())));
        let rest = format!("{before}{}{after}", url(query(&|_| "***".to_owned())));
        let redacted = redact(&message);
        // Masking generously may take keys with it: `password=` masks up to whitespace, and
        // a `:` before an `@` reads as a URL password.
        let keys_stay = parameters
            .iter()
            .all(|(key, secret)| !key.contains("password") && !secret.contains('@'));
        for (key, secret) in &parameters {
            prop_assert!(masked(&redacted, secret, &rest), "{message:?} -> {redacted:?}");
            if keys_stay {
                prop_assert!(
                    redacted.contains(&format!("{key}=")),
                    "{message:?} -> {redacted:?}"
                );
            }
        }
    }

    /// The password of the key-value form (`host=.. password=.. user=..`, quoted as libpq
    /// quotes) never survives.
    #[test]
    fn key_value_passwords_never_survive(
        password in key_value_password(),
        key in proptest::sample::select(vec!["password", "PASSWORD", "Password"]),
        spaced in any::<bool>(),
        before in proptest::sample::select(vec!["", "host=db ", "host=db port=5432 "]),
        after in proptest::sample::select(vec!["", " user=app", " dbname=x sslmode=require"]),
    ) {
        let needs_quotes = password.contains([' ', '\'', '\\']) || password.is_empty();
        let value = if needs_quotes {
            format!("'{}'", password.replace('\\', "\\\\").replace('\'', "\\'"))
        } else {
            password.clone()
        };
        let equals = if spaced { " = " } else { "=" };
        let message = format!("{before}{key}{equals}{value}{after}");
        let rest = format!("{before}{key}{equals}***{after}");
        let redacted = redact(&message);
        prop_assert!(masked(&redacted, &password, &rest), "{message:?} -> {redacted:?}");
        // What the driver sees as the password: the unescaped value.
        let inner = value.trim_matches('\'');
        prop_assert!(masked(&redacted, inner, &rest), "{message:?} -> {redacted:?}");
    }

    /// Any text is redacted without a panic, and redacting twice changes nothing more.
    #[test]
    fn any_text(text in "[ -~\\n\\t€é]{0,80}") {
        let once = redact(&text);
        prop_assert_eq!(redact(&once), once, "{:?}", text);
    }
}
