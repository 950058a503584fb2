//! TLS to PostgreSQL from a connection string, with libpq's meanings of `sslmode`.
//!
//! tokio-postgres 0.7 knows `disable`, `prefer` and `require` only, and refuses `verify-ca`,
//! `verify-full` and `sslrootcert` when it parses a connection string. So the TLS parameters
//! are read and removed here first, and the rest is left to tokio-postgres.
//!
#![doc = include_str!("../docs/sslmode.md")]

use std::fmt;

/// The `sslmode` of a connection string.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Allow,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        match value {
            "disable" => Ok(Self::Disable),
            "allow" => Ok(Self::Allow),
            "prefer" => Ok(Self::Prefer),
            "require" => Ok(Self::Require),
            "verify-ca" => Ok(Self::VerifyCa),
            "verify-full" => Ok(Self::VerifyFull),
            other => Err(format!(
                "sslmode={other:?}: expected disable, allow, prefer, require, verify-ca or verify-full"
            )),
        }
    }

    /// Whether the connection must be encrypted.
    #[cfg_attr(feature = "rustls", allow(dead_code))]
    pub(crate) fn requires_tls(self) -> bool {
        match self {
            Self::Require | Self::VerifyCa | Self::VerifyFull => true,
            Self::Disable | Self::Allow | Self::Prefer => false,
        }
    }

    /// What tokio-postgres is told: it knows no `allow` and no verification levels.
    pub(crate) fn for_tokio_postgres(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Mode;
        match self {
            Self::Disable => Mode::Disable,
            Self::Allow | Self::Prefer => Mode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => Mode::Require,
        }
    }
}

/// The TLS parameters of a connection string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub(crate) mode: SslMode,
    /// `sslrootcert`: a PEM file of the certificates to trust.
    pub(crate) root_cert: Option<String>,
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Disable => "disable",
            Self::Allow => "allow",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        })
    }
}

/// Splits `sslmode` and `sslrootcert` out of a connection string (URL or key-value form):
/// the TLS settings, and the rest for tokio-postgres to parse. A string this cannot read is
/// returned whole, for tokio-postgres to refuse with its own error.
pub(crate) fn split_tls_params(dsn: &str) -> Result<(String, TlsSettings), String> {
    let params = if dsn.starts_with("postgres://") || dsn.starts_with("postgresql://") {
        split_url(dsn)
    } else {
        split_key_value(dsn)
    };
    let Some((rest, params)) = params else {
        return Ok((dsn.to_owned(), TlsSettings::default()));
    };
    let mut settings = TlsSettings::default();
    for (key, value) in params {
        match key.as_str() {
            "sslmode" => settings.mode = SslMode::parse(&value)?,
            _ => settings.root_cert = Some(value),
        }
    }
    Ok((rest, settings))
}

const TLS_KEYS: [&str; 2] = ["sslmode", "sslrootcert"];

/// `postgres://...?a=b&sslmode=require`: the URL without the TLS parameters, and their
/// (percent-decoded) values.
fn split_url(dsn: &str) -> Option<(String, Vec<(String, String)>)> {
    let Some((base, query)) = dsn.split_once('?') else {
        return Some((dsn.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut tls = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key)?;
        if TLS_KEYS.contains(&key.as_str()) {
            tls.push((key, percent_decode(value)?));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Some((rest, tls))
}

/// A URL's value, percent-decoded; `None` when it is not UTF-8 once decoded.
fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// `host=db sslmode='require'`: the string without the TLS parameters, and their values,
/// with libpq's quoting (single quotes, backslash escapes).
fn split_key_value(dsn: &str) -> Option<(String, Vec<(String, String)>)> {
    let mut kept: Vec<&str> = Vec::new();
    let mut tls = Vec::new();
    let mut rest = dsn.trim_start();
    while !rest.is_empty() {
        let start = dsn.len() - rest.len();
        let key_end = rest.find(|c: char| c == '=' || c.is_whitespace())?;
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start().strip_prefix('=')?.trim_start();
        let (value, after) = key_value_value(rest)?;
        let end = dsn.len() - after.len();
        if TLS_KEYS.contains(&key) {
            tls.push((key.to_owned(), value));
        } else {
            kept.push(&dsn[start..end]);
        }
        rest = after.trim_start();
    }
    Some((kept.join(" "), tls))
}

/// One value of the key-value form, and what follows it.
fn key_value_value(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    if let Some(quoted) = text.strip_prefix('\'') {
        let mut chars = quoted.char_indices();
        while let Some((index, c)) = chars.next() {
            match c {
                '\\' => value.push(chars.next()?.1),
                '\'' => return Some((value, &quoted[index + 1..])),
                c => value.push(c),
            }
        }
        return None;
    }
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?.1),
            c if c.is_whitespace() => return Some((value, &text[index..])),
            c => value.push(c),
        }
    }
    Some((value, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(dsn: &str) -> (String, TlsSettings) {
        split_tls_params(dsn).unwrap()
    }

    #[test]
    fn url_form() {
        let (rest, tls) = split(
            "postgres://app:pw@db:5432/app?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
        );
        assert_eq!(rest, "postgres://app:pw@db:5432/app?application_name=x");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert.as_deref(), Some("/etc/ca.pem"));
        let (rest, tls) = split("postgresql://db/app?sslmode=require");
        assert_eq!(rest, "postgresql://db/app");
        assert_eq!(tls.mode, SslMode::Require);
        let (rest, tls) = split("postgres://db/app");
        assert_eq!(
            (rest.as_str(), tls),
            ("postgres://db/app", TlsSettings::default())
        );
    }

    #[test]
    fn key_value_form() {
        let (rest, tls) = split(
            "host=db sslmode = 'verify-ca' user=app sslrootcert='/a b/c\\'s.pem' password='x y'",
        );
        assert_eq!(rest, "host=db user=app password='x y'");
        assert_eq!(tls.mode, SslMode::VerifyCa);
        assert_eq!(tls.root_cert.as_deref(), Some("/a b/c's.pem"));
    }

    #[test]
    fn unknown_modes_are_refused_and_unreadable_strings_passed_on() {
        let error = split_tls_params("host=db sslmode=sometimes").unwrap_err();
        assert!(error.contains("sslmode=\"sometimes\""), "{error}");
        let (rest, tls) = split("host=db password='unterminated");
        assert_eq!(rest, "host=db password='unterminated");
        assert_eq!(tls, TlsSettings::default());
    }

    /// Without the feature, a connection string that asks for TLS is refused at start, naming
    /// the variable: never connected in the clear, never failing every check forever.
    #[cfg(not(feature = "rustls"))]
    #[test]
    fn without_the_feature_tls_is_refused_at_start() {
        for dsn in [
            "postgres://db/app?sslmode=require",
            "postgres://db/app?sslmode=verify-full",
            "host=db sslmode=verify-ca",
            "postgres://db/app?sslrootcert=/etc/ca.pem",
        ] {
            let error =
                crate::HealthConfig::from_vars([("TOWER_HEALTH_DATABASE_URL", dsn)]).unwrap_err();
            assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL");
            assert!(error.reason().contains("`rustls` feature"), "{error}");
        }
        assert!(
            crate::postgres::PostgresCheck::connect("postgres://db/app?sslmode=prefer").is_ok()
        );
    }

    #[test]
    fn the_readme_shows_the_sslmode_table_of_the_docs() {
        let readme = include_str!("../docs/databases.md");
        assert!(readme.contains(include_str!("../docs/sslmode.md")));
    }

    #[test]
    fn what_tokio_postgres_is_told() {
        use tokio_postgres::config::SslMode as Mode;
        assert_eq!(SslMode::Allow.for_tokio_postgres(), Mode::Prefer);
        assert_eq!(SslMode::VerifyFull.for_tokio_postgres(), Mode::Require);
        assert!(SslMode::VerifyCa.requires_tls());
        assert!(!SslMode::Prefer.requires_tls());
    }
}
