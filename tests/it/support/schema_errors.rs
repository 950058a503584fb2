//! A schema's errors for a body, readably: one line each, the branches of `anyOf` and `oneOf`
//! indented under them. Shared by the integration tests (`support::schema`) and the crate's
//! own schema unit tests (`src/rendered/schema_tests.rs`, which include this file by path).

/// Appends `error` (and, under it, why each branch of an `anyOf` or `oneOf` failed) to `out`.
pub(crate) fn describe(error: &jsonschema::ValidationError<'_>, depth: usize, out: &mut String) {
    use jsonschema::error::ValidationErrorKind;
    let mut message = error.to_string();
    if message.len() > 300 {
        let mut cut = 300;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str("...");
    }
    out.push_str(&format!(
        "{:indent$}- at {:?} (schema {}): {message}\n",
        "",
        error.instance_path().as_str(),
        error.schema_path().as_str(),
        indent = depth * 2
    ));
    if let ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } =
        error.kind()
        && depth < 8
    {
        for (index, branch) in context.iter().enumerate() {
            out.push_str(&format!(
                "{:indent$}branch {index}:\n",
                "",
                indent = depth * 2 + 2
            ));
            for error in branch {
                describe(error, depth + 2, out);
            }
        }
    }
}
