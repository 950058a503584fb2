//! Every JSON body the integration tests receive from a probe path, checked against the JSON
//! Schemas in `schemas/`: [`Client`](super::Client) and
//! [`RawConnection`](super::raw::RawConnection) call [`validate`] on each response, so every
//! test that reads a body also checks the contract dashboards rely on.
//!
//! The schema is picked from the request path, whatever the layer's prefix: `.../live`,
//! `.../ready`, `.../startup`, `.../pool`, `.../ping` and `.../health` (the layer's paths
//! under `/health` or any prefix ending in `health`), the admin server's `/liveness`,
//! `/readiness`, `/startup`, `/hold` and `/release`, and `/livez`, `/readyz`. A 4xx on such
//! a path is an `error.json` body (405, 401, 403, 400); so is a 4xx or 5xx JSON body on any
//! other path (the admin server's 404, a drain's rejection, `shed_load`'s overload: the test
//! applications never answer JSON). `/metrics` and the applications' own answers are left
//! alone, and so is a layer path under a prefix that does not end in `health` (its health
//! endpoint is the bare prefix, which nothing tells from an application path).

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

use super::schema_errors::describe;

/// One schema of `schemas/`, compiled once per test binary.
pub struct Schema {
    pub name: &'static str,
    validator: LazyLock<jsonschema::Validator>,
}

macro_rules! schema {
    ($name:literal) => {
        Schema {
            name: $name,
            validator: LazyLock::new(|| {
                compile($name, include_str!(concat!("../../../schemas/", $name)))
            }),
        }
    };
}

pub static HEALTH: Schema = schema!("health.json");
pub static READY: Schema = schema!("ready.json");
pub static POOL: Schema = schema!("pool.json");
pub static LIVE: Schema = schema!("live.json");
pub static PING: Schema = schema!("ping.json");
pub static STARTUP: Schema = schema!("startup.json");
pub static ERROR: Schema = schema!("error.json");
pub static CONTROL: Schema = schema!("control.json");
pub static GROUP: Schema = schema!("group.json");

fn compile(name: &str, text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text)
        .unwrap_or_else(|error| panic!("schemas/{name} is not JSON: {error}"));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|error| panic!("schemas/{name} is not a valid JSON Schema: {error}"))
}

impl Schema {
    /// The schema's errors for `body`, one per line (the branches of `anyOf` and `oneOf`
    /// indented under them); empty when it is valid.
    pub fn errors(&self, body: &Value) -> String {
        let mut out = String::new();
        for error in self.validator.iter_errors(body) {
            describe(&error, 0, &mut out);
        }
        out
    }
}

/// The path of a request target: the absolute form's authority dropped, the query and a
/// trailing slash too.
fn path_of(target: &str) -> &str {
    let mut path = target;
    for scheme in ["http://", "https://"] {
        if let Some(rest) = path.strip_prefix(scheme) {
            path = rest.find('/').map_or("/", |slash| &rest[slash..]);
        }
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    match path.strip_suffix('/') {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => path,
    }
}

/// The schema of the endpoint `target` names, if it names one; `None` for `/metrics` and
/// every other path.
pub fn endpoint(target: &str) -> Option<&'static Schema> {
    let path = path_of(target);
    // `<prefix>/group/<name>`: a health group's.
    if path.rsplit('/').nth(1) == Some("group") {
        return Some(&GROUP);
    }
    match path {
        "/livez" | "/liveness" => return Some(&LIVE),
        "/readyz" | "/readiness" => return Some(&READY),
        "/startup" => return Some(&STARTUP),
        "/hold" | "/release" => return Some(&CONTROL),
        _ => {}
    }
    match path.rsplit('/').next().unwrap_or_default() {
        "health" => Some(&HEALTH),
        "live" => Some(&LIVE),
        "ready" => Some(&READY),
        "startup" => Some(&STARTUP),
        "pool" => Some(&POOL),
        "ping" => Some(&PING),
        _ => None,
    }
}

/// Responses validated by this test binary, by schema.
static VALIDATED: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());

/// Counts one validation. With `SCHEMA_COUNTS` set, also writes this binary's counts to
/// `$CARGO_TARGET_TMPDIR/schema-validations/<test binary>` (the process ends without a hook
/// that could print them): `cat` those files after a run to see how many bodies it checked.
fn count(schema: &'static Schema) {
    let mut counts = VALIDATED
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    *counts.entry(schema.name).or_default() += 1;
    if std::env::var_os("SCHEMA_COUNTS").is_none() {
        return;
    }
    let binary = std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("schema-validations");
    let total: usize = counts.values().sum();
    let mut text = format!("total {total}\n");
    for (name, count) in counts.iter() {
        text.push_str(&format!("{name} {count}\n"));
    }
    // Counting is a report, not a check: a write that fails costs nothing.
    let _ = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(binary), text));
}

/// Checks a JSON response body of a request to `target` answered with `status` against its
/// schema (see the module docs for which); panics with the schema's errors and the body when
/// it does not match. Empty bodies (HEAD) and bodies of other paths pass unchecked.
pub fn validate(target: &str, status: u16, body: &[u8]) {
    if body.is_empty() {
        return;
    }
    let endpoint = endpoint(target);
    let schema = match endpoint {
        Some(_) if (400..500).contains(&status) => &ERROR,
        Some(schema) => schema,
        None if status >= 400 && path_of(target) != "/metrics" => &ERROR,
        None => return,
    };
    let text = String::from_utf8_lossy(body);
    let value: Value = serde_json::from_slice(body).unwrap_or_else(|error| {
        panic!("{target} ({status}): a JSON body that is not JSON ({error}): {text}")
    });
    let errors = schema.errors(&value);
    if errors.is_empty() {
        count(schema);
        return;
    }
    // A probe path behind a layer that answers first (a drain rejecting everything, a
    // shedding health layer in front of a path it does not answer) gets that layer's 503.
    if status == 503 && schema.name != ERROR.name && ERROR.errors(&value).is_empty() {
        count(&ERROR);
        return;
    }
    panic!(
        "{target} ({status}): the body does not match schemas/{}:\n{errors}body: {text}",
        schema.name
    );
}

#[test]
fn paths_pick_their_schema() {
    let name = |target| endpoint(target).map(|schema| schema.name);
    assert_eq!(name("/health"), Some("health.json"));
    assert_eq!(name("/health/?nocache=true"), Some("health.json"));
    assert_eq!(name("/health/ready/"), Some("ready.json"));
    assert_eq!(name("/_probe/live"), Some("live.json"));
    assert_eq!(name("/health/pool?nocache=true"), Some("pool.json"));
    assert_eq!(name("/health/ping"), Some("ping.json"));
    assert_eq!(name("/health/startup"), Some("startup.json"));
    assert_eq!(name("/liveness"), Some("live.json"));
    assert_eq!(name("/readiness"), Some("ready.json"));
    assert_eq!(name("/startup"), Some("startup.json"));
    assert_eq!(name("/livez"), Some("live.json"));
    assert_eq!(name("/readyz"), Some("ready.json"));
    assert_eq!(name("/hold?reason=x"), Some("control.json"));
    assert_eq!(name("/release"), Some("control.json"));
    assert_eq!(name("http://localhost/liveness"), Some("live.json"));
    assert_eq!(name("/metrics"), None);
    assert_eq!(name("/"), None);
    assert_eq!(name("/health/other"), None);
    assert_eq!(name("*"), None);
}
