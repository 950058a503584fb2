/// Masks the secrets in a message about a database or a dependency: the password of every
/// URL (`postgres://user:secret@host` becomes `postgres://user:***@host`), the value of every
/// query parameter (`https://api.example/health?access_token=X&api_key=Y` becomes
/// `https://api.example/health?access_token=***&api_key=***`), every `password=` setting of a
/// key-value connection string, and what sits between a `:` and an `@` in a word that is no
/// well-formed URL (`http:/user:secret@host`, a mistyped one, becomes `http:***@host`).
///
/// [`CheckError`](crate::check::CheckError) applies it to every message, and the monitor to
/// every target; use it on anything else that may carry a connection string or a URL, such as
/// your own log lines.
///
/// A query is what follows a `?` in a word (no whitespace) that holds a `/`, a `:` or an `=`
/// (a URL, a mistyped one, a path, `redis.sock?pass=..`), up to a `#` or the end of the word.
/// Every parameter keeps its key, so that a target still says what is checked; its value, up
/// to the next `&`, is masked, whatever it holds (a closing quote or bracket glued to it too);
/// an empty value stays empty. A parameter without `=` is masked whole: an API key may be
/// passed as `?KEY`. A `?` after the fragment's `#` starts another query.
///
/// It reads text, not a parsed URL, so it masks generously (a later `user@host` in the same
/// message may be masked with a password); the one password it may mask only in part is a
/// URL password that itself holds `://` after a delimiter, which reads as a second URL.
/// Passwords and query values with reserved characters or spaces belong percent-encoded in a
/// URL anyway (a value that runs past a space is masked up to it only).
///
/// ```
/// use tower_health::redact;
///
/// assert_eq!(
///     redact("postgres://app:hunter2@db:5432/app"),
///     "postgres://app:***@db:5432/app",
/// );
/// assert_eq!(
///     redact("GET https://api.example/health?access_token=X&api_key=Y failed"),
///     "GET https://api.example/health?access_token=***&api_key=*** failed",
/// );
/// assert_eq!(redact("host=db password='hunter 2' user=app"), "host=db password=*** user=app");
/// ```
#[must_use]
pub fn redact(message: &str) -> String {
    mask_query_values(&mask_userinfo(&mask_key_value_passwords(
        &mask_url_passwords(message),
    )))
}

/// Masks the value of every query parameter, in each whitespace-separated word that holds a
/// `/`, a `:` or an `=`: see [`redact`] for the rules. Runs after the passwords are masked, so
/// that a `?` in a password is not taken for the start of a query (which would mask only the
/// password's end).
fn mask_query_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while !rest.is_empty() {
        let word_start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..word_start]);
        rest = &rest[word_start..];
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        push_with_masked_queries(&rest[..word_len], &mut out);
        rest = &rest[word_len..];
    }
    out
}

/// Pushes `word` onto `out` with the values of its queries masked.
fn push_with_masked_queries(word: &str, out: &mut String) {
    // `what?` or `"?"` in prose is no query.
    if !word.contains(['/', ':', '=']) {
        out.push_str(word);
        return;
    }
    let mut rest = word;
    while let Some(question) = rest.find('?') {
        out.push_str(&rest[..=question]);
        rest = &rest[question + 1..];
        let query_len = rest.find('#').unwrap_or(rest.len());
        for (index, parameter) in rest[..query_len].split('&').enumerate() {
            if index > 0 {
                out.push('&');
            }
            match parameter.split_once('=') {
                Some((key, value)) => {
                    out.push_str(key);
                    out.push('=');
                    if !value.is_empty() {
                        out.push_str(MASK);
                    }
                }
                None if parameter.is_empty() => {}
                None => out.push_str(MASK),
            }
        }
        rest = &rest[query_len..];
    }
    out.push_str(rest);
}

const MASK: &str = "***";

/// Masks, in each whitespace-separated word, what sits between the first `:` and the last
/// `@` of the part before any `scheme://` (a URL, masked already): a mistyped URL
/// (`http:/user:secret@host`, `ftp:x//user:secret@host/`) or a bare `user:secret@host`
/// still carries a password.
fn mask_userinfo(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while !rest.is_empty() {
        let word_start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..word_start]);
        rest = &rest[word_start..];
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_len];
        let before_url = word
            .find("://")
            .map_or(word.len(), |colon| scheme_start(word, colon));
        let head = &word[..before_url];
        let masked = head.rfind('@').and_then(|at| {
            let colon = head[..at].find(':')?;
            (head[colon + 1..at] != *MASK).then_some((colon, at))
        });
        match masked {
            Some((colon, at)) => {
                out.push_str(&word[..=colon]);
                out.push_str(MASK);
                out.push_str(&word[at..]);
            }
            None => out.push_str(word),
        }
        rest = &rest[word_len..];
    }
    out
}

/// Where the scheme ending at the `://` at `colon` starts in `text`.
fn scheme_start(text: &str, colon: usize) -> usize {
    text[..colon]
        .char_indices()
        .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
        .map_or(0, |(before, c)| before + c.len_utf8())
}

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
                // No password: on to the next word, or to a URL glued to this one after a
                // delimiter (`a=ftp://h,b=postgres://u:pw@db`).
                let token_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
                let skip = token_len.min(next_url(rest));
                out.push_str(&rest[..skip]);
                rest = &rest[skip..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the password of the URL whose authority starts `rest` lies: the byte offsets of the
/// `:` before it and of the `@` after it.
///
/// A password may hold `/`, `?`, `#`, `@`, quotes and, in a URL written by hand, spaces
/// (drivers read up to an `@`, and a quote is no delimiter inside a URL), so the password
/// ends at the last `@` of the URL's first token, or later, at the last `@` before the next
/// URL that a host follows (a name, an address or `[..]`, then the end, a space, a port, a
/// path or a closing quote): `@A! /@db` ends at the second `@`, since `A!` is no host.
/// The `:` before the password must sit in the URL's first token (a user name holds no
/// space). Masking too much is harmless (a later `user@host` in the same message is masked
/// with it); too little leaks the password.
fn password_span(rest: &str) -> Option<(usize, usize)> {
    let token_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let token = &rest[..token_len];
    let url_end = next_url(rest);
    let hosted = rest[..url_end]
        .match_indices('@')
        .map(|(at, _)| at)
        .rfind(|&at| host_follows(&rest[at + 1..url_end]));
    // Whichever is later: a URL's userinfo ends at the last `@` of its authority.
    let at = hosted.max(rest[..url_end.min(token_len)].rfind('@'))?;
    let colon = rest[..at].find(':').filter(|&colon| colon < token_len)?;
    // A password that runs past the first token, with no `@` in that token, must follow a
    // user part (not a `host:port/path`).
    if at >= token_len && !token.contains('@') && token[..colon].contains('/') {
        return None;
    }
    Some((colon, at))
}

/// Where the next URL of a message starts in `rest` (the rest of a URL's authority): at a
/// `scheme://` that follows whitespace or a delimiter. One glued to the authority (`a://` in
/// `postgres://a://pw@db`, a password starting with `//`) is part of it.
fn next_url(rest: &str) -> usize {
    for (colon, _) in rest.match_indices("://") {
        let scheme_start = scheme_start(rest, colon);
        let starts_a_url = scheme_start > 0
            && scheme_start < colon
            && rest[..scheme_start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_whitespace() || "'\"(<,;=[`".contains(c));
        if starts_a_url {
            return scheme_start;
        }
    }
    rest.len()
}

/// Whether `rest` starts with a host: a name or address (`[..]` for IPv6), followed by the
/// end, whitespace, a port, a path, a query, a fragment or a closing delimiter.
fn host_follows(rest: &str) -> bool {
    let host_len = if rest.starts_with('[') {
        match rest.find(']') {
            Some(end) => end + 1,
            None => return false,
        }
    } else {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || "._~%-".contains(c)))
            .unwrap_or(rest.len())
    };
    host_len > 0
        && rest[host_len..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || ":/?#'\"),;>`".contains(c))
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
mod proptests;

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn masks_url_passwords_and_keeps_the_rest() {
        assert_eq!(
            redact("error connecting to postgresql://u:p%40ss@h:1/db?sslmode=disable failed"),
            "error connecting to postgresql://u:***@h:1/db?sslmode=*** failed"
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
            (
                "redis+unix:///run/redis.sock?db=2&PASS=hunter2&user=app",
                "redis+unix:///run/redis.sock?db=***&PASS=***&user=***",
            ),
            (
                "unix:///run/redis.sock?pass=hunter2 refused",
                "unix:///run/redis.sock?pass=*** refused",
            ),
            (
                "redis-sentinel://app:hunter2@s1?sentinelServiceName=m&sentinelPassword=sesame",
                "redis-sentinel://app:***@s1?sentinelServiceName=***&sentinelPassword=***",
            ),
        ] {
            assert_eq!(redact(message), masked, "{message}");
        }
    }

    #[test]
    fn masks_every_query_value_and_keeps_the_keys() {
        for (message, masked) in [
            // Issue 21: an API's credentials in the query of a component's URL.
            (
                "https://api.example/health?access_token=X&api_key=Y",
                "https://api.example/health?access_token=***&api_key=***",
            ),
            (
                "GET http://h:8080/v1/status?verbose=1&token=abc#top failed",
                "GET http://h:8080/v1/status?verbose=***&token=***#top failed",
            ),
            // No `=`: masked whole. Empty: nothing to mask.
            ("https://h/?KEY123&a=", "https://h/?***&a="),
            ("https://h/?&&a=1", "https://h/?&&a=***"),
            ("https://h/path?", "https://h/path?"),
            // What a value holds, up to the next `&`, `#` or whitespace: quotes, `?`, `=`.
            ("'https://h/?t=x'y'", "'https://h/?t=***"),
            ("https://h/?next=/a?b=c&t=s3", "https://h/?next=***&t=***"),
            ("https://h/?t=a=b", "https://h/?t=***"),
            // A query in the fragment, a URL glued after another, a mistyped URL, a path.
            ("https://h/#/route?token=s3", "https://h/#/route?token=***"),
            ("a=http://h/?x=1,b=http://i/?t=s3", "a=http://h/?x=***"),
            (
                "htps:/api.example/?api_key=s3",
                "htps:/api.example/?api_key=***",
            ),
            (
                "GET /health?access_token=s3 HTTP/1.1",
                "GET /health?access_token=*** HTTP/1.1",
            ),
            (
                "unix:///run/redis.sock?pass=hunter2 refused",
                "unix:///run/redis.sock?pass=*** refused",
            ),
            ("redis.sock?pass=hunter2", "redis.sock?pass=***"),
            // A password holding `?` is masked as a password first.
            ("postgres://u:p?w@h/db?t=s3", "postgres://u:***@h/db?t=***"),
        ] {
            assert_eq!(redact(message), masked, "{message}");
        }
        // A `?` in prose is no query.
        for message in ["what? no", "is it \"?\" here", "really?!", "2xx?"] {
            assert_eq!(redact(message), message);
        }
    }

    #[test]
    fn masks_url_passwords_with_an_at_and_a_space() {
        // Found by the property `url_passwords_never_survive`: the first token's last `@`
        // (followed by `A!`, no host) ended the password, and `A! /` showed.
        assert_eq!(redact("postgres://_:@A! /@a"), "postgres://_:***@a");
        assert_eq!(
            redact("postgres://u:x@y z@w@db:5432/app failed"),
            "postgres://u:***@db:5432/app failed"
        );
        assert_eq!(
            redact("postgres://u:pw@db/app failed"),
            "postgres://u:***@db/app failed"
        );
        // A password starting with `//` is no URL of its own.
        assert_eq!(redact("postgres://a://~ A@a"), "postgres://a:***@a");
    }

    #[test]
    fn text_around_a_url_may_be_any_unicode() {
        // Found by the `redact` fuzz target: a scheme after a two-byte character sliced that
        // character in two (a panic).
        assert_eq!(
            redact("edi\u{7}уs://:***@cache:6379\0"),
            "edi\u{7}уs://:***@cache:6379\0"
        );
        assert_eq!(redact("€postgres://u:pw@h é"), "€postgres://u:***@h é");
    }

    #[test]
    fn masks_mistyped_urls() {
        // Found by the `env_config` fuzz target: a refused value that is no `scheme://` URL
        // was echoed with its password.
        assert_eq!(redact("ftp:EA//u:Fuzz-S3cret@x/"), "ftp:***@x/");
        assert_eq!(
            redact("bad http:/user:secret@host/ here"),
            "bad http:***@host/ here"
        );
        assert_eq!(redact("app:secret@db:5432"), "app:***@db:5432");
        assert_eq!(
            redact("ftp:/u:Fuzz-S3cret@x/http://h/"),
            "ftp:***@x/http://h/"
        );
        // Found by fuzzing too: a URL without a password hid the next one, glued after `=`.
        assert_eq!(
            redact("ftp://@x/a=ftp://u:Fuzz-S3cret@y"),
            "ftp://@x/a=ftp://u:***@y"
        );
        assert_eq!(
            redact("url=postgres://db/app,backup=postgres://u:pw@db2/app"),
            "url=postgres://db/app,backup=postgres://u:***@db2/app"
        );
        // The userinfo ends at the authority's last `@`, a host after it or not.
        assert_eq!(
            redact("postgres://app:x@pp:Fuzz-S3cret@"),
            "postgres://app:***@"
        );
        // Nothing to mask: no `:` before the `@`, or a URL already masked.
        assert_eq!(redact("mail alice@example.com"), "mail alice@example.com");
        assert_eq!(redact("redis://:***@cache:6379"), "redis://:***@cache:6379");
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
