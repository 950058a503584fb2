//! The rules for the names an operator gives: a check's, and a shared key prefix.

/// Whether `name` may name a database or a component: 1 to 63 ASCII letters, digits, `_` or
/// `-` (it becomes part of a variable name, a JSON key and a metric label).
pub(crate) fn is_valid_check_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Why `prefix` cannot be a key prefix, if it cannot.
pub(crate) fn validate_key_prefix(prefix: &str) -> Result<(), &'static str> {
    if prefix.is_empty() || prefix.len() > 200 {
        return Err("expected 1 to 200 bytes");
    }
    if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("expected no whitespace or control characters");
    }
    Ok(())
}
