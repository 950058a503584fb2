//! Redaction: any text is redacted without a panic, and a password put into a connection
//! string (URL or key-value form) or a value put into a URL's query string never survives.
//!
//! Input: a selector byte, then the password or query value (or, for selector 0, the whole
//! text).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower_health::redact;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(password) = std::str::from_utf8(rest) else {
        return;
    };
    let (message, rest) = match selector % 5 {
        0 => {
            let _ = redact(password);
            return;
        }
        // A URL password: drivers refuse whitespace and control characters in a URL (the
        // properties cover a space between `@`s), and one holding `://` reads as a second
        // URL, which no text-level redaction can tell apart (see `redact`'s docs).
        1 | 2
            if password.contains(|c: char| c.is_whitespace() || c.is_control())
                || password.contains("://") =>
        {
            return;
        }
        1 => (
            format!("error connecting to postgres://app:{password}@db.internal:5432/app failed"),
            "error connecting to postgres://app:***@db.internal:5432/app failed".to_owned(),
        ),
        2 => (
            format!("redis://:{password}@cache:6379/0"),
            "redis://:***@cache:6379/0".to_owned(),
        ),
        // A query value: it ends at whitespace, `&` or `#`, as it does in a URL.
        3 if password
            .contains(|c: char| c.is_whitespace() || c.is_control() || "&#".contains(c)) =>
        {
            return;
        }
        3 => (
            format!("GET https://api.example/health?access_token={password}&api_key=x failed"),
            "GET https://api.example/health?access_token=***&api_key=*** failed".to_owned(),
        ),
        // The key-value form, quoted as libpq quotes.
        _ => {
            let quoted = format!("'{}'", password.replace('\\', "\\\\").replace('\'', "\\'"));
            (
                format!("host=db password={quoted} user=app"),
                "host=db password=*** user=app".to_owned(),
            )
        }
    };
    // Only passwords a perfect masking could hide, and that a driver would read whole
    // (a URL's userinfo ends at its last `@`; no whitespace-only password).
    if password.trim().len() < 3 || rest.contains(password) || "***".contains(password) {
        return;
    }
    let redacted = redact(&message);
    assert!(!redacted.contains(password), "{message:?} -> {redacted:?}");
});
