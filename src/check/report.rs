use std::sync::Arc;

use serde_json::{Map, Value};

use crate::redact::redact;

/// What a check that passed reports beside its result: what it checked (its target) and what
/// it saw (details such as a latency or a server version), as Spring's `Health.withDetail`
/// and ASP.NET's `HealthCheckResult.Data` do.
///
/// A [`DatabaseCheck`](super::DatabaseCheck) or [`Component`](crate::component::Component)
/// passes with one; `CheckReport::default()` (or `().into()`) reports nothing.
/// [`from_fn`](crate::component::from_fn) takes a closure returning either, so `Ok(())`
/// keeps meaning "fine, nothing to add".
///
/// `/health` shows them under the database's or component's entry, as `target` and
/// `details`, where the reader shows targets ([`Details`](crate::config::Details):
/// `always`, or `authorized` with a key; never at `never`), and readiness does where it
/// lists each check. They are rendered once per round, with the rest of the verdict: a
/// probe never encodes them.
///
/// Like a [`CheckError`](super::CheckError)'s message, the target and every string in the
/// details are passed through [`redact`](crate::redact) when they are set, so a connection
/// string put here never shows its password.
///
/// # Example
///
/// ```
/// use std::time::Instant;
/// use tower_health::check::{CheckError, CheckReport};
/// use tower_health::component::{self, ComponentSpec};
///
/// let spec = ComponentSpec::new(
///     "search",
///     component::from_fn(|| async {
///         let started = Instant::now();
///         // Ask the search service for its version here; an `Err(CheckError)` reports trouble.
///         let version = "8.15.0";
///         Ok::<_, CheckError>(
///             CheckReport::new()
///                 .target("search.internal:9200")
///                 .detail("version", version)
///                 .detail("latency_ms", started.elapsed().as_secs_f64() * 1000.0),
///         )
///     }),
/// );
/// # let _ = spec;
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    pub(crate) target: Option<Arc<str>>,
    pub(crate) details: Map<String, Value>,
}

impl CheckReport {
    /// A report that says nothing yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// What this check reached (a `host:port`, a resolved address, a URL), shown as
    /// `target`. It replaces, for this result, the check's own
    /// [`DatabaseCheck::target`](super::DatabaseCheck::target) or
    /// [`Component::target`](crate::component::Component::target), which is still shown
    /// when a check fails. Passed through [`redact`](crate::redact).
    #[must_use]
    pub fn target(mut self, target: impl AsRef<str>) -> Self {
        self.target = Some(redact(target.as_ref()).into());
        self
    }

    /// Adds `key: value` to the `details` shown for this result (a later value for the same
    /// key replaces the earlier). Every string in `value`, nested ones included, is passed
    /// through [`redact`](crate::redact).
    ///
    /// Numbers that are not finite (`NaN`, infinities) become `null`, as in any JSON.
    #[must_use]
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let mut value = value.into();
        redact_strings(&mut value);
        self.details.insert(key.into(), value);
        self
    }

    /// The target set with [`target`](Self::target), redacted.
    #[must_use]
    pub fn target_ref(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The details added with [`detail`](Self::detail), redacted.
    #[must_use]
    pub fn details(&self) -> &Map<String, Value> {
        &self.details
    }
}

impl From<()> for CheckReport {
    /// A report that says nothing: what `Ok(())` means.
    fn from((): ()) -> Self {
        Self::default()
    }
}

fn redact_strings(value: &mut Value) {
    match value {
        Value::String(text) => *text = redact(text),
        Value::Array(values) => values.iter_mut().for_each(redact_strings),
        Value::Object(map) => map.values_mut().for_each(redact_strings),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strings_are_redacted_wherever_they_sit() {
        let report = CheckReport::new()
            .target("postgres://app:hunter2@db:5432/app")
            .detail("dsn", "postgres://app:hunter2@db/app")
            .detail(
                "nested",
                json!({"urls": ["redis://:hunter2@cache:6379"], "port": 6379}),
            );
        assert_eq!(report.target_ref(), Some("postgres://app:***@db:5432/app"));
        let details = Value::Object(report.details().clone());
        assert!(!details.to_string().contains("hunter2"), "{details}");
        assert_eq!(details["nested"]["port"], 6379);
    }

    #[test]
    fn a_later_value_replaces_an_earlier_one_and_unit_says_nothing() {
        let report = CheckReport::new().detail("a", 1).detail("a", "two");
        assert_eq!(report.details().len(), 1);
        assert_eq!(report.details()["a"], "two");
        assert_eq!(CheckReport::from(()), CheckReport::default());
        assert_eq!(CheckReport::default().target_ref(), None);
    }

    #[test]
    fn a_number_that_is_not_finite_becomes_null() {
        let report = CheckReport::new().detail("latency_ms", f64::NAN);
        assert_eq!(report.details()["latency_ms"], Value::Null);
    }
}
