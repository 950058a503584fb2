/// Masks the secrets in a message about a database: the password of every URL
/// (`postgres://user:secret@host` becomes `postgres://user:***@host`) and every `password=`
/// setting of a key-value connection string.
///
/// [`CheckError`](crate::check::CheckError) applies it to every message; use it on anything else that
/// may carry a connection string, such as your own log lines.
///
/// ```
/// use tower_health::redact;
///
/// assert_eq!(
///     redact("postgres://app:hunter2@db:5432/app"),
///     "postgres://app:***@db:5432/app",
/// );
/// assert_eq!(redact("host=db password='hunter 2' user=app"), "host=db password=*** user=app");
/// ```
#[must_use]
pub fn redact(message: &str) -> String {
    mask_key_value_passwords(&mask_url_passwords(message))
}

const MASK: &str = "***";

fn mask_url_passwords(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(scheme_end) = rest.find("://") {
        let authority_start = scheme_end + 3;
        out.push_str(&rest[..authority_start]);
        rest = &rest[authority_start..];
        match password_span(rest) {
            Some((colon, at)) => {
                out.push_str(&rest[..=colon]);
                out.push_str(MASK);
                rest = &rest[at..];
            }
            None => {
                let token_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
                out.push_str(&rest[..token_len]);
                rest = &rest[token_len..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the password of the URL whose authority starts `rest` lies: the byte offsets of the
/// `:` before it and of the `@` after it.
///
/// A password may hold `/`, `?`, `#`, `@` and quotes (drivers read up to an `@`, and a quote
/// is no delimiter inside a URL), so the whole token up to whitespace is searched for its last
/// `@`. A token with no `@` whose user part is followed by a `:` may be a password with a
/// space in it (`app:it s@db`): then the next `@` before the next URL ends it. Masking too
/// much is harmless; too little leaks the password.
fn password_span(rest: &str) -> Option<(usize, usize)> {
    let token_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let token = &rest[..token_len];
    if let Some(at) = token.rfind('@') {
        let colon = token[..at].find(':')?;
        return Some((colon, at));
    }
    let colon = token
        .find(':')
        .filter(|&colon| !token[..colon].contains('/'))?;
    let url_end = rest.find("://").unwrap_or(rest.len());
    let first_at = rest[..url_end].find('@')?;
    // The last `@` of the token holding the first one.
    let end = rest[first_at..url_end]
        .find(char::is_whitespace)
        .map_or(url_end, |len| first_at + len);
    let at = rest[..end].rfind('@')?;
    Some((colon, at))
}

fn mask_key_value_passwords(message: &str) -> String {
    const KEY: &str = "password";
    let lower = message.to_ascii_lowercase();
    let mut out = String::with_capacity(message.len());
    let mut copied = 0;
    let mut search_from = 0;
    while let Some(found) = lower[search_from..].find(KEY) {
        let key_start = search_from + found;
        let mut value_start = key_start + KEY.len();
        search_from = value_start;
        // Accept `password=value` and `password = value`; anything else is just the word.
        let after_key = &message[value_start..];
        let trimmed = after_key.trim_start();
        let Some(after_equals) = trimmed.strip_prefix('=') else {
            continue;
        };
        value_start += after_key.len() - after_equals.len();
        let value = after_equals.trim_start();
        value_start += after_equals.len() - value.len();
        // A quoted value runs to its closing quote; anything glued to that quote
        // (`password='it's`, a quote the writer meant as part of the password) is masked too.
        let unquoted_start = match value.strip_prefix('\'') {
            Some(quoted) => quoted_len(quoted) + 1,
            None => 0,
        };
        let value_len = value[unquoted_start..]
            .find(char::is_whitespace)
            .map_or(value.len(), |len| unquoted_start + len);
        out.push_str(&message[copied..value_start]);
        out.push_str(MASK);
        copied = value_start + value_len;
        search_from = copied;
    }
    out.push_str(&message[copied..]);
    out
}

/// The length of a single-quoted value after its opening quote, closing quote included;
/// `\'` and `\\` are escapes, as in libpq connection strings.
fn quoted_len(quoted: &str) -> usize {
    let mut escaped = false;
    for (index, c) in quoted.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => return index + 1,
            _ => {}
        }
    }
    quoted.len()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn masks_url_passwords_and_keeps_the_rest() {
        assert_eq!(
            redact("error connecting to postgresql://u:p%40ss@h:1/db?sslmode=disable failed"),
            "error connecting to postgresql://u:***@h:1/db?sslmode=disable failed"
        );
        assert_eq!(redact("postgres://user@host/db"), "postgres://user@host/db");
        assert_eq!(redact("postgres://host/db"), "postgres://host/db");
        assert_eq!(
            redact("a postgres://a:b@h b redis://:secret@r:6379"),
            "a postgres://a:***@h b redis://:***@r:6379"
        );
    }

    #[test]
    fn masks_url_passwords_with_reserved_characters() {
        assert_eq!(
            redact("invalid postgres://app:p#ss/w?rd@db:54x2/app here"),
            "invalid postgres://app:***@db:54x2/app here"
        );
        assert_eq!(
            redact("postgres://u:a@b@host/db"),
            "postgres://u:***@host/db"
        );
        assert_eq!(redact("'postgres://u:pw@h/db'"), "'postgres://u:***@h/db'");
    }

    #[test]
    fn masks_url_passwords_with_quotes_and_spaces() {
        for (message, masked) in [
            ("postgres://app:it's@db/app", "postgres://app:***@db/app"),
            (
                "postgres://app:it's@db:x/app",
                "postgres://app:***@db:x/app",
            ),
            ("postgres://app:it'@db/app", "postgres://app:***@db/app"),
            (r#"postgres://app:"x"@db/app"#, "postgres://app:***@db/app"),
            (
                "bad 'postgres://app:it's@db/app' here",
                "bad 'postgres://app:***@db/app' here",
            ),
            (
                "postgres://app:it s@db:x/app",
                "postgres://app:***@db:x/app",
            ),
            (
                "postgres://app:a b@db/app and redis://r:6379",
                "postgres://app:***@db/app and redis://r:6379",
            ),
        ] {
            assert_eq!(redact(message), masked, "{message}");
        }
        // A host and port with no `@` anywhere after them is no password.
        assert_eq!(
            redact("connecting to postgres://db:5432/app failed"),
            "connecting to postgres://db:5432/app failed"
        );
    }

    #[test]
    fn masks_redis_passwords_with_or_without_a_user() {
        for (message, masked) in [
            (
                "redis://app:hunter2@cache:6379/0",
                "redis://app:***@cache:6379/0",
            ),
            ("rediss://:hunter2@cache:6380", "rediss://:***@cache:6380"),
            (
                "valkeys://default:p@ss@cache/1 refused",
                "valkeys://default:***@cache/1 refused",
            ),
            ("redis://cache:6379/0", "redis://cache:6379/0"),
        ] {
            assert_eq!(redact(message), masked, "{message}");
        }
    }

    #[test]
    fn masks_key_value_passwords() {
        assert_eq!(redact(r"password='it\'s x' host=c"), "password=*** host=c");
        assert_eq!(redact(r"password='back\\' host=c"), "password=*** host=c");
        assert_eq!(
            redact("user=a PASSWORD=b host=c"),
            "user=a PASSWORD=*** host=c"
        );
        assert_eq!(redact("password = 'x y' host=c"), "password = *** host=c");
        assert_eq!(redact("password='unterminated"), "password=***");
        assert_eq!(redact("host=db password='it's"), "host=db password=***");
        assert_eq!(redact("password='it's' host=db"), "password=*** host=db");
        assert_eq!(
            redact("password authentication failed for user \"app\""),
            "password authentication failed for user \"app\""
        );
    }

    #[test]
    fn leaves_plain_messages_alone() {
        let message = "connection refused (os error 111)";
        assert_eq!(redact(message), message);
        assert_eq!(redact(""), "");
        assert_eq!(redact("::// @ ://"), "::// @ ://");
    }
}
