//! What the unit tests share: a fake database check, reading a probe's response, and the
//! log lines a test causes.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;

use crate::check::{
    CheckError, CheckErrorKind, CheckFuture, CheckReport, DatabaseCheck, PoolStats,
};
use crate::http::render::ProbeBody;

/// A database check with a fixed outcome, and no database behind it.
#[derive(Copy, Clone, Debug)]
pub(crate) enum FakeCheck {
    /// Answers at once.
    Ready,
    /// Fails at once, as a refused connection does.
    Refused,
    /// Never answers, as a database that accepts and stalls.
    Hangs,
    /// Panics.
    Panics,
    /// Answers at once, its pool saturated: every connection busy and checkouts waiting (the
    /// check went through a connection of its own).
    Saturated,
    /// Answers at once, reporting a target of its own and details (one of them a connection
    /// string with a password, which the report redacts).
    Reports,
}

impl DatabaseCheck for FakeCheck {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        let fake = *self;
        Box::pin(async move {
            match fake {
                Self::Ready | Self::Saturated => Ok(CheckReport::default()),
                Self::Reports => Ok(CheckReport::new()
                    .target("reached.internal:5432")
                    .detail("server_version", "16.4")
                    .detail("latency_ms", 1.5)
                    .detail("via", "postgres://app:hunter2@pooler/app")),
                Self::Refused => Err(CheckError::new(
                    CheckErrorKind::Refused,
                    "error connecting to server: Connection refused (os error 111)",
                )),
                Self::Hangs => std::future::pending().await,
                Self::Panics => panic!("the fake check panics"),
            }
        })
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        match self {
            Self::Saturated => {
                let mut stats = PoolStats::new(10, 10, 0);
                stats.pending_gets = 4;
                stats.gets_timed_out = 2;
                stats.connections_created = 10;
                stats.reserved_connections_opened = 1;
                Some(stats)
            }
            _ => Some(PoolStats::new(1, 1, 1)),
        }
    }
}

/// A response's status, headers and body.
pub(crate) async fn read(response: Response<ProbeBody>) -> (StatusCode, http::HeaderMap, String) {
    let (parts, body) = response.into_parts();
    let bytes: Bytes = body.collect().await.expect("infallible").to_bytes();
    let body = String::from_utf8(bytes.to_vec()).expect("JSON is UTF-8");
    (parts.status, parts.headers, body)
}

/// `body` with the values that change from run to run replaced: every `"timestamp"` and
/// `"since"` by `"T"`, every `"elapsed_ms"`, `"age_ms"` and `"running_for_ms"` by `0`. Everything else is compared byte for
/// byte.
pub(crate) fn normalize(body: &str) -> String {
    let mut body = body.to_owned();
    for (key, replacement) in [
        ("\"timestamp\":", "\"T\""),
        ("\"since\":", "\"T\""),
        ("\"elapsed_ms\":", "0"),
        ("\"age_ms\":", "0"),
        ("\"running_for_ms\":", "0"),
    ] {
        let mut from = 0;
        while let Some(found) = body[from..].find(key) {
            let start = from + found + key.len();
            let end = value_end(&body[start..]) + start;
            body.replace_range(start..end, replacement);
            from = start + replacement.len();
        }
    }
    body
}

/// The length of the JSON scalar at the start of `text` (a string or a number).
fn value_end(text: &str) -> usize {
    if let Some(rest) = text.strip_prefix('"') {
        return rest.find('"').map_or(text.len(), |end| end + 2);
    }
    text.find([',', '}', ']']).unwrap_or(text.len())
}

#[test]
fn normalize_replaces_only_the_volatile_values() {
    assert_eq!(
        normalize(
            r#"{"a":{"elapsed_ms":1.25,"b":2},"timestamp":"2026-01-01T00:00:00Z","_cache":{"hit":true,"age_ms":17}}"#
        ),
        r#"{"a":{"elapsed_ms":0,"b":2},"timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#
    );
}

/// A component whose behaviour the test switches between rounds (a [`FakeCheck`]'s:
/// answers, refuses, hangs or panics).
#[derive(Clone, Debug)]
pub(crate) struct FakeComponent(std::sync::Arc<std::sync::Mutex<FakeCheck>>);

impl FakeComponent {
    pub(crate) fn new(behaviour: FakeCheck) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(behaviour)))
    }

    pub(crate) fn set(&self, behaviour: FakeCheck) {
        *self.0.lock().unwrap() = behaviour;
    }
}

impl crate::component::Component for FakeComponent {
    fn check(&self) -> CheckFuture {
        let behaviour = *self.0.lock().unwrap();
        behaviour.check()
    }
}

impl DatabaseCheck for FakeComponent {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        let behaviour = *self.0.lock().unwrap();
        behaviour.check()
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats::new(1, 1, 1))
    }
}

/// The log lines a `tracing` subscriber for the test's thread writes, kept for a search.
#[derive(Clone, Default)]
pub(crate) struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    /// Captures this thread's log lines until the guard is dropped.
    pub(crate) fn capture() -> (tracing::subscriber::DefaultGuard, Self) {
        let logs = Self::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        (tracing::subscriber::set_default(subscriber), logs)
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The lines written on this thread while `run` runs.
pub(crate) fn logged(run: impl FnOnce()) -> String {
    let (guard, logs) = Logs::capture();
    run();
    drop(guard);
    logs.text()
}
