//! Every body the crate renders, in every state and at both detail levels, against the JSON
//! Schemas in `schemas/` (the ones dashboards can use): a body that loses or retypes a key a
//! dashboard reads, or gains a status the schema does not list, fails here before it ships.
//! The README's sample bodies are checked too, and the schemas are shown to refuse broken
//! bodies, so that a schema that accepts anything cannot pass for one that checks.

use std::sync::LazyLock;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use crate::check::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};
use crate::component::{Component, ComponentSpec, UnknownComponents};
use crate::config::{FailDirection, HealthConfig};
use crate::http::Respond;
use crate::http::render::fixed;
use crate::http::render::{Rendered, render_health, render_pool, render_readiness};
use crate::http::request::{BodyMode, Freshness};
use crate::monitor::HealthHandle;
use crate::monitor::testing::{goes_stale_soon, monitor, rounds, rounds_panicked};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, FakeComponent, read};
use crate::verdict::Audience;

// The error printer the integration tests use too.
#[path = "../../../tests/it/support/schema_errors.rs"]
mod schema_errors;
use schema_errors::describe;

/// One schema of `schemas/`, compiled once.
struct Schema {
    name: &'static str,
    text: &'static str,
    validator: LazyLock<jsonschema::Validator>,
}

macro_rules! schema {
    ($name:literal) => {
        Schema {
            name: $name,
            text: include_str!(concat!("../../../schemas/", $name)),
            validator: LazyLock::new(|| {
                compile($name, include_str!(concat!("../../../schemas/", $name)))
            }),
        }
    };
}

static HEALTH: Schema = schema!("health.json");
static READY: Schema = schema!("ready.json");
static POOL: Schema = schema!("pool.json");
static LIVE: Schema = schema!("live.json");
static PING: Schema = schema!("ping.json");
static STARTUP: Schema = schema!("startup.json");
static ERROR: Schema = schema!("error.json");
static CONTROL: Schema = schema!("control.json");
static GROUP: Schema = schema!("group.json");

static ALL: [&Schema; 9] = [
    &HEALTH, &READY, &POOL, &LIVE, &PING, &STARTUP, &ERROR, &CONTROL, &GROUP,
];

fn compile(name: &str, text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text)
        .unwrap_or_else(|error| panic!("schemas/{name} is not JSON: {error}"));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|error| panic!("schemas/{name} is not a valid JSON Schema: {error}"))
}

impl Schema {
    /// The schema's errors for `body`, one per line (branches of `anyOf` and `oneOf`
    /// indented under them); empty when it is valid.
    fn errors(&self, body: &Value) -> String {
        let mut out = String::new();
        for error in self.validator.iter_errors(body) {
            describe(&error, 0, &mut out);
        }
        out
    }

    /// Panics, naming the schema, the errors and the body, unless `body` is valid; returns
    /// the body.
    fn check(&self, body: &str, what: &str) -> Value {
        let value: Value = serde_json::from_str(body)
            .unwrap_or_else(|error| panic!("{what}: the body is not JSON ({error}): {body}"));
        let errors = self.errors(&value);
        assert!(
            errors.is_empty(),
            "{what}: the body does not match schemas/{}:\n{errors}body: {body}",
            self.name
        );
        value
    }

    /// Panics unless `body` is refused.
    fn refuses(&self, body: &Value, what: &str) {
        assert!(
            !self.validator.is_valid(body),
            "schemas/{} accepts {what}: {body}",
            self.name
        );
    }
}

fn schema_of(probe: Probe) -> &'static Schema {
    match probe {
        Probe::Health => &HEALTH,
        Probe::Live => &LIVE,
        Probe::Ready => &READY,
        Probe::Startup => &STARTUP,
        Probe::Pool => &POOL,
        Probe::Ping => &PING,
    }
}

const STALE_AFTER: Duration = Duration::from_secs(3);

/// The bodies checked so far, and the values seen in them of the keys that name a state
/// (`status`, `check`, `error_kind`, a cause's `kind`, `_cache.hit`), by schema: what shows
/// that every state was rendered, not only that what was rendered is valid.
#[derive(Default)]
struct Seen {
    bodies: usize,
    values: std::collections::BTreeSet<String>,
}

impl Seen {
    fn check(&mut self, schema: &Schema, body: &str, what: &str) {
        let value = schema.check(body, what);
        self.bodies += 1;
        self.record(schema.name, &value);
    }

    fn record(&mut self, schema: &str, value: &Value) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    if matches!(
                        key.as_str(),
                        "status" | "check" | "error_kind" | "kind" | "hit"
                    ) {
                        self.values.insert(format!("{schema} {key}={value}"));
                    }
                    self.record(schema, value);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.record(schema, item)),
            _ => {}
        }
    }

    /// Panics unless `key` was seen with every one of `values` in bodies of `schema`.
    fn saw_every(&self, schema: &Schema, key: &str, values: &[Value]) {
        for value in values {
            let seen = format!("{} {key}={value}", schema.name);
            assert!(
                self.values.contains(&seen),
                "no body of {} had {key}={value}; seen: {:#?}",
                schema.name,
                self.values
            );
        }
    }
}

/// A rendered response's status and body, the age set to `age_ms`.
async fn body_of(rendered: &Rendered, age_ms: u64) -> (StatusCode, String) {
    let (status, _, body) = read(rendered.response_aged(BodyMode::Full, age_ms, None)).await;
    (status, body)
}

/// Checks every body `handle` serves now, for both audiences: each probe as a reader gets
/// it, and every variant (published, bypassed, draining, stale) of each verdict published
/// now, into `seen`.
async fn every_body(handle: &HealthHandle, state: &str, seen: &mut Seen) {
    for audience in Audience::ALL {
        for probe in Probe::ALL {
            let response = handle
                .probe_response(
                    probe,
                    BodyMode::Full,
                    Freshness::Published,
                    audience,
                    crate::http::request::Form::Json,
                )
                .await;
            let (status, _, body) = read(response).await;
            seen.check(
                schema_of(probe),
                &body,
                &format!("{state}: {probe} ({audience:?}, {status})"),
            );
        }
        let readiness = handle.view().readiness;
        let health = handle.view().health;
        let pool = handle.view().pool;
        for (schema, rendered, placeholder) in [
            (
                &READY,
                render_readiness(&readiness, Default::default(), STALE_AFTER),
                readiness.checked_at.is_none(),
            ),
            (
                &HEALTH,
                render_health(&health, STALE_AFTER, None),
                health.checked_at.is_none(),
            ),
            (
                &POOL,
                render_pool(&pool, STALE_AFTER),
                pool.checked_at.is_none(),
            ),
        ] {
            let variants = rendered.for_audience(audience);
            let returning = variants
                .returning
                .as_ref()
                .map(|rendered| ("returning", rendered));
            for (variant, rendered) in [
                ("published", &variants.published),
                ("bypassed", &variants.bypassed),
                ("draining", &variants.draining),
                ("stale", &variants.stale),
            ]
            .into_iter()
            .chain(returning)
            {
                // No verdict yet: never stale, and a bypass computes one; only the
                // published and draining variants are ever served.
                if placeholder && matches!(variant, "bypassed" | "stale") {
                    continue;
                }
                let (status, body) = body_of(rendered, 1234).await;
                seen.check(
                    schema,
                    &body,
                    &format!(
                        "{state}: {} {variant} ({audience:?}, {status})",
                        schema.name
                    ),
                );
            }
        }
    }
}

/// [`every_body`], and the bodies of a bypass (`?nocache=true`) of health and pool.
async fn every_body_and_a_bypass(handle: &HealthHandle, state: &str, seen: &mut Seen) {
    every_body(handle, state, seen).await;
    for audience in Audience::ALL {
        for probe in [Probe::Health, Probe::Pool] {
            let response = handle
                .probe_response(
                    probe,
                    BodyMode::Full,
                    Freshness::Bypass,
                    audience,
                    crate::http::request::Form::Json,
                )
                .await;
            let (status, _, body) = read(response).await;
            seen.check(
                schema_of(probe),
                &body,
                &format!("{state}: {probe} bypassed ({audience:?}, {status})"),
            );
        }
    }
}

/// Every error category. The match makes a new one a compile error here, so that it gets
/// into the schemas' `errorKind` too.
const KINDS: [CheckErrorKind; 10] = {
    const fn listed(kind: CheckErrorKind) {
        match kind {
            CheckErrorKind::Refused
            | CheckErrorKind::Dns
            | CheckErrorKind::Auth
            | CheckErrorKind::Tls
            | CheckErrorKind::Timeout
            | CheckErrorKind::PoolSaturated
            | CheckErrorKind::Closed
            | CheckErrorKind::Query
            | CheckErrorKind::Panicked
            | CheckErrorKind::Other => {}
        }
    }
    listed(CheckErrorKind::Other);
    [
        CheckErrorKind::Refused,
        CheckErrorKind::Dns,
        CheckErrorKind::Auth,
        CheckErrorKind::Tls,
        CheckErrorKind::Timeout,
        CheckErrorKind::PoolSaturated,
        CheckErrorKind::Closed,
        CheckErrorKind::Query,
        CheckErrorKind::Panicked,
        CheckErrorKind::Other,
    ]
};

fn config_with(check: impl DatabaseCheck) -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", check)
}

/// A check that fails with one category, and names its target.
#[derive(Debug)]
struct Failing(CheckErrorKind);

impl DatabaseCheck for Failing {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        let kind = self.0;
        Box::pin(async move {
            Err(CheckError::new(
                kind,
                "failed at postgres://app:hunter2@db.internal.example:5432/orders",
            ))
        })
    }

    fn target(&self) -> Option<String> {
        Some("db.internal.example:5432/orders".to_owned())
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats::new(10, 3, 1))
    }
}

/// A component that names its target, and answers as its [`FakeComponent`] does.
#[derive(Clone, Debug)]
struct Targeted(FakeComponent);

impl Component for Targeted {
    fn check(&self) -> CheckFuture {
        Component::check(&self.0)
    }

    fn target(&self) -> Option<String> {
        Some("cache.internal.example:6379".to_owned())
    }
}

#[tokio::test]
async fn every_probe_in_every_state_matches_its_schema() {
    let mut seen = Seen::default();

    let handle = monitor(config_with(FakeCheck::Ready));
    every_body(&handle, "before the first round", &mut seen).await;
    rounds(&handle).await;
    every_body_and_a_bypass(&handle, "healthy", &mut seen).await;
    handle.hold("db migration by alice");
    every_body(&handle, "held", &mut seen).await;
    let drain = handle.drain().clone();
    drain.start();
    every_body_and_a_bypass(&handle, "held and draining", &mut seen).await;
    handle.release();
    every_body(&handle, "draining", &mut seen).await;

    for (state, check) in [
        ("refused", FakeCheck::Refused),
        ("panicked", FakeCheck::Panics),
        ("saturated", FakeCheck::Saturated),
    ] {
        let handle = monitor(config_with(check));
        rounds(&handle).await;
        every_body_and_a_bypass(&handle, state, &mut seen).await;
    }

    // A stall: readiness times out, and the health round joins the check still running
    // (`running_for_ms`).
    let stalled = HealthConfig::new()
        .readiness_timeout(Duration::from_millis(50))
        .database("default", FakeCheck::Hangs);
    let handle = monitor(stalled.clone());
    handle.state().readiness_round().await;
    every_body(&handle, "timed out", &mut seen).await;
    handle.state().health_round().await;
    every_body(&handle, "timed out, joined", &mut seen).await;
    let handle = monitor(stalled.fail_direction(FailDirection::Ready));
    handle.state().readiness_round().await;
    every_body(&handle, "timed out under fail direction ready", &mut seen).await;

    let handle = monitor(HealthConfig::new());
    rounds(&handle).await;
    every_body_and_a_bypass(&handle, "no database", &mut seen).await;

    // Checks that pass with a target and details of their own: in /health, and in
    // readiness's `details` once a hold makes it list each check.
    let handle = monitor(config_with(FakeCheck::Reports).component(
        ComponentSpec::new("cache", FakeComponent::new(FakeCheck::Reports)).gates_readiness(true),
    ));
    rounds(&handle).await;
    every_body_and_a_bypass(&handle, "passing with details", &mut seen).await;
    handle.hold("maintenance");
    every_body(&handle, "passing with details, held", &mut seen).await;

    // Every error category, in a database and in a component.
    for kind in KINDS {
        let component = FakeComponent::new(FakeCheck::Ready);
        let config = config_with(Failing(kind))
            .database("replica", Failing(kind))
            .optional_database("replica")
            .component(ComponentSpec::new("cache", Targeted(component)));
        let handle = monitor(config);
        rounds(&handle).await;
        every_body_and_a_bypass(&handle, &format!("failing with {kind}"), &mut seen).await;
    }

    // Optional databases: a replica down (degraded), the default one down (degraded too),
    // and a saturated replica's pool beside it.
    let handle = monitor(
        config_with(FakeCheck::Ready)
            .database("replica", FakeCheck::Refused)
            .database("analytics", FakeCheck::Saturated)
            .optional_database("replica"),
    );
    rounds(&handle).await;
    every_body_and_a_bypass(&handle, "an optional database down", &mut seen).await;
    let handle = monitor(config_with(FakeCheck::Refused).optional_database("default"));
    rounds(&handle).await;
    every_body(&handle, "the optional default database down", &mut seen).await;

    // The monitor stopped.
    let handle = monitor(config_with(FakeCheck::Ready));
    rounds(&handle).await;
    handle.state().set_monitor_running(false);
    every_body(&handle, "monitor stopped", &mut seen).await;

    // A round of each cadence panicked.
    let handle = monitor(config_with(FakeCheck::Ready));
    rounds(&handle).await;
    rounds_panicked(&handle, "a user's callback panicked", "a renderer panicked");
    every_body(&handle, "rounds that panicked", &mut seen).await;

    // Startup waiting for the application.
    let handle = monitor(config_with(FakeCheck::Ready).startup_waits_for_mark(true));
    rounds(&handle).await;
    every_body(&handle, "waiting for mark_started", &mut seen).await;

    seen.saw_every(
        &HEALTH,
        "status",
        &[
            json!("healthy"),
            json!("degraded"),
            json!("unhealthy"),
            json!("error"),
            json!("unavailable"),
            json!("draining"),
        ],
    );
    seen.saw_every(
        &READY,
        "status",
        &[json!("ready"), json!("not_ready"), json!("draining")],
    );
    seen.saw_every(
        &POOL,
        "status",
        &[
            json!("healthy"),
            json!("degraded"),
            json!("error"),
            json!("unavailable"),
            json!("draining"),
        ],
    );
    seen.saw_every(&STARTUP, "status", &[json!("started"), json!("starting")]);
    let kinds: Vec<Value> = KINDS.iter().map(|kind| json!(kind.as_str())).collect();
    for schema in [&HEALTH, &READY, &POOL] {
        seen.saw_every(schema, "error_kind", &kinds);
        if schema.name != "ready.json" {
            seen.saw_every(schema, "hit", &[json!(true), json!("bypassed")]);
        }
    }
    seen.saw_every(
        &HEALTH,
        "kind",
        &[
            "draining",
            "stale",
            "no_verdict",
            "no_database",
            "held",
            "panicked",
            "database",
            "pool_saturated",
        ]
        .map(|kind| json!(kind)),
    );
    assert!(seen.bodies > 900, "{} bodies checked", seen.bodies);
}

#[tokio::test]
async fn components_in_every_state_match_their_schema() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    let queue = FakeComponent::new(FakeCheck::Refused);
    let slow = FakeComponent::new(FakeCheck::Hangs);
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_millis(50))
        .database("default", FakeCheck::Ready)
        .component(ComponentSpec::new("cache", Targeted(cache.clone())).critical(false))
        .component(
            ComponentSpec::new("queue", queue.clone())
                .critical(true)
                .gates_readiness(true),
        )
        .component(ComponentSpec::new("slow", slow.clone()).gates_readiness(true))
        .component(
            ComponentSpec::new("boom", FakeComponent::new(FakeCheck::Panics)).gates_readiness(true),
        )
        .component(
            ComponentSpec::new("patient", FakeComponent::new(FakeCheck::Refused))
                .failures_before_trouble(3)
                .gates_readiness(true),
        )
        .component(ComponentSpec::new(
            "fine",
            FakeComponent::new(FakeCheck::Ready),
        ));
    let handle = monitor(config.clone());
    // Readiness before any health round: the gating components have no result yet.
    handle.state().readiness_round().await;
    let mut seen = Seen::default();
    every_body(&handle, "components before their first check", &mut seen).await;
    handle.state().health_round().await;
    every_body_and_a_bypass(&handle, "components in trouble", &mut seen).await;
    handle.state().health_round().await;
    every_body(&handle, "components, a check still running", &mut seen).await;
    cache.set(FakeCheck::Ready);
    queue.set(FakeCheck::Ready);
    slow.set(FakeCheck::Ready);
    rounds(&handle).await;
    // Readiness reads the components as the last health round left them.
    handle.state().readiness_round().await;
    every_body(&handle, "components recovering", &mut seen).await;

    // `unknown` counted as trouble: readiness lists the gating component `unknown`, 503.
    let handle = monitor(config.unknown_components(UnknownComponents::InTrouble));
    handle.state().readiness_round().await;
    handle.state().health_round().await;
    every_body(&handle, "unknown components in trouble", &mut seen).await;
    // Before the first health round, readiness lists the gating components with no check
    // yet.
    seen.saw_every(&READY, "check", &[json!(null)]);
    for schema in [&HEALTH, &READY] {
        seen.saw_every(
            schema,
            "check",
            &[
                json!("ok"),
                json!("failed"),
                json!("timed_out"),
                json!("error"),
            ],
        );
    }
    seen.saw_every(
        &HEALTH,
        "status",
        &[
            json!("unknown"),
            json!("healthy"),
            json!("degraded"),
            json!("unhealthy"),
        ],
    );
    seen.saw_every(&HEALTH, "kind", &[json!("component")]);
    seen.saw_every(
        &READY,
        "status",
        &[json!("unknown"), json!("ready"), json!("not_ready")],
    );
    assert!(seen.bodies > 150, "{} bodies checked", seen.bodies);
}

/// The fleet guard's answers: kept in rotation (200 `degraded`, `x-envoy-degraded`) and left
/// out (503 `not_ready`), with its count, in every variant and at both detail levels.
#[tokio::test]
async fn the_fleet_guard_s_answers_match_the_schema() {
    use crate::verdict::{FleetGuard, Fraction, Member, Standing};

    let handle = monitor(config_with(FakeCheck::Refused));
    rounds(&handle).await;
    let readiness = (*handle.view().readiness).clone();
    let members: Vec<Member> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|id| Member {
            id: id.into(),
            standing: Standing::Shared {
                cause: "database `default`".into(),
            },
        })
        .collect();
    let half = Fraction::new(0.5).unwrap();
    let mut seen = Seen::default();
    for (own, code, status) in [
        ("a", StatusCode::OK, "degraded"),
        ("d", StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
    ] {
        let guard = FleetGuard::decide(own, "database `default`".into(), &members, half);
        let verdict = readiness.clone().with_fleet_guard(guard.clone());
        let rendered = render_readiness(&verdict, Default::default(), STALE_AFTER);
        // `/health` lists it last, its status the database's.
        let health = handle.view().health.with_lifecycle(None, true, Some(guard));
        let health = render_health(&health, STALE_AFTER, None);
        for audience in Audience::ALL {
            let variants = rendered.for_audience(audience);
            let (answered, body) = body_of(&variants.published, 0).await;
            assert_eq!(answered, code, "{own}");
            let body = READY.check(&body, &format!("fleet guard, {own} ({audience:?})"));
            seen.record(READY.name, &body);
            let reason = body["reason"].clone();
            let health_variants = health.for_audience(audience);
            for (variant, rendered) in [
                ("published", &health_variants.published),
                ("draining", &health_variants.draining),
                ("stale", &health_variants.stale),
            ] {
                let (answered, health) = body_of(rendered, 0).await;
                assert_eq!(answered, StatusCode::SERVICE_UNAVAILABLE);
                let what = format!("fleet guard /health, {own} {variant}");
                let health = HEALTH.check(&health, &what);
                seen.record(HEALTH.name, &health);
                let last = health["causes"].as_array().unwrap().last().unwrap().clone();
                assert_eq!(
                    last,
                    json!({ "kind": "fleet_guard", "text": reason }),
                    "{what}"
                );
            }
            assert_eq!(body["status"], status);
            assert_eq!(body["fleet_guard"]["members"], 4);
            assert_eq!(body["fleet_guard"]["in_rotation"], 2);
            assert!(
                body["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with("fleet guard: database `default` failing on 4 of 4 processes; ")
            );
            let degraded = variants
                .published
                .response(BodyMode::Full)
                .headers()
                .contains_key("x-envoy-degraded");
            assert_eq!(degraded, status == "degraded", "{own}");
            for (variant, rendered) in
                [("draining", &variants.draining), ("stale", &variants.stale)]
            {
                let (answered, body) = body_of(rendered, 0).await;
                assert_eq!(answered, StatusCode::SERVICE_UNAVAILABLE);
                let body = READY.check(&body, &format!("fleet guard, {own} {variant}"));
                seen.record(READY.name, &body);
                assert_eq!(body.get("fleet_guard"), None, "{own} {variant}");
            }
        }
    }
    seen.saw_every(&READY, "status", &[json!("degraded"), json!("not_ready")]);
    seen.saw_every(&HEALTH, "kind", &[json!("fleet_guard")]);
}

#[tokio::test]
async fn stale_verdicts_match_their_schema() {
    let config = goes_stale_soon();
    let with_database = config
        .clone()
        .database("default", FakeCheck::Refused)
        .component(ComponentSpec::new(
            "cache",
            FakeComponent::new(FakeCheck::Refused),
        ));
    for (state, config) in [("stale", config), ("stale, refused", with_database)] {
        let handle = monitor(config);
        rounds(&handle).await;
        handle.hold("maintenance");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let view = handle.view();
        assert_eq!(
            view.answer(Probe::Ready).condition,
            crate::view::Condition::Stale,
            "{state}"
        );
        every_body(&handle, state, &mut Seen::default()).await;
    }
}

#[tokio::test]
async fn fixed_bodies_match_their_schema() {
    for (schema, rendered, what) in [
        (&LIVE, &*fixed::LIVE, "live"),
        (&PING, &*fixed::PING, "ping"),
        (&STARTUP, &*fixed::STARTED, "started"),
        (
            &STARTUP,
            &*fixed::STARTING_FIRST_ROUND,
            "starting, first round",
        ),
        (
            &STARTUP,
            &*fixed::STARTING_APPLICATION,
            "starting, application",
        ),
        (&ERROR, &*fixed::METHOD_NOT_ALLOWED, "405"),
        (&ERROR, &*fixed::OVERLOADED, "overloaded"),
    ] {
        schema.check(&body_of(rendered, 0).await.1, what);
    }
    ERROR.check(
        &body_of(&fixed::DRAIN_REJECTED, 0).await.1,
        "drain rejection",
    );
}

#[cfg(feature = "admin")]
#[tokio::test]
async fn admin_bodies_match_their_schema() {
    use crate::access::AccessKeys;
    use crate::admin::Control;
    use crate::admin::fixed as admin;

    for (rendered, what) in [
        (&*crate::admin::route::ADMIN_NOT_FOUND, "404"),
        (
            crate::admin::route::missing("page"),
            "404, a missing feature",
        ),
        (
            crate::admin::route::missing("metrics"),
            "404, a missing feature",
        ),
        (&*admin::ADMIN_FORBIDDEN, "403"),
        (&*admin::ADMIN_MISSING_KEY, "401, no key"),
        (&*admin::ADMIN_INVALID_KEY, "401, a wrong key"),
        (&*admin::ADMIN_WRONG_SCHEME, "401, not a key's scheme"),
    ] {
        ERROR.check(&body_of(rendered, 0).await.1, what);
    }

    let handle = monitor(config_with(FakeCheck::Ready));
    rounds(&handle).await;
    let operator = "operator-key-0123456789";
    let viewer = "viewer-key-0123456789";
    let keys = AccessKeys::new()
        .operator(operator)
        .readonly(viewer)
        .digests();
    let none = AccessKeys::new().digests();
    let request = |method: http::Method, target: &str, key: Option<&str>| {
        let mut request = http::Request::builder().method(method).uri(target);
        if let Some(key) = key {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {key}"));
        }
        request.body(()).unwrap()
    };
    let post = http::Method::POST;
    for (control, target, key, digests, expected) in [
        (
            Control::Hold,
            "/hold?reason=deploy+freeze",
            Some(operator),
            &keys,
            200,
        ),
        (
            Control::Hold,
            "/hold?reason=deploy+freeze",
            Some(operator),
            &keys,
            200,
        ),
        (Control::Hold, "/hold", Some(operator), &keys, 200),
        (Control::Release, "/release", Some(operator), &keys, 200),
        (Control::Release, "/release", Some(operator), &keys, 200),
        (Control::Hold, "/hold", Some(viewer), &keys, 403),
        (Control::Hold, "/hold", None, &keys, 401),
        (
            Control::Hold,
            "/hold",
            Some("not-a-key-at-all-really"),
            &keys,
            401,
        ),
        (Control::Hold, "/hold", Some(operator), &none, 403),
    ] {
        let response = control
            .respond(&request(post.clone(), target, key), digests, &handle)
            .await;
        let (status, _, body) = read(response).await;
        assert_eq!(status.as_u16(), expected, "{target}: {body}");
        let schema = if status == StatusCode::OK {
            &CONTROL
        } else {
            &ERROR
        };
        schema.check(&body, &format!("{target} ({status})"));
    }
    let response = Control::Hold
        .respond(
            &request(http::Method::GET, "/hold", Some(operator)),
            &keys,
            &handle,
        )
        .await;
    let (status, _, body) = read(response).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    ERROR.check(&body, "GET /hold");
}

/// Every `<!-- body: <endpoint>/<state> -->` sample of README.md, raw (timestamps and all).
fn readme_samples() -> Vec<(String, String)> {
    let readme = include_str!("../../docs/bodies.md");
    let marker = "<!-- body: ";
    let mut samples = Vec::new();
    let mut rest = readme;
    while let Some(start) = rest.find(marker) {
        rest = &rest[start + marker.len()..];
        let name_end = rest.find(" -->").expect("the marker ends");
        let name = rest[..name_end].to_owned();
        let open = "```json\n";
        let body_start = rest.find(open).expect("a JSON block follows the marker") + open.len();
        let body_end = body_start + rest[body_start..].find("\n```").expect("the block ends");
        samples.push((name, rest[body_start..body_end].to_owned()));
        rest = &rest[body_end..];
    }
    samples
}

#[test]
fn the_readme_samples_match_their_schema() {
    let samples = readme_samples();
    assert!(samples.len() >= 8, "{samples:?}");
    for (name, body) in samples {
        let endpoint = name.split('/').next().unwrap_or_default();
        let schema = match endpoint {
            "health" => &HEALTH,
            "ready" => &READY,
            "pool" => &POOL,
            "live" => &LIVE,
            "ping" => &PING,
            "startup" => &STARTUP,
            "error" => &ERROR,
            "control" => &CONTROL,
            other => panic!("README sample {name}: no schema for {other:?}"),
        };
        schema.check(&body, &format!("README sample {name}"));
    }
}

#[test]
fn every_schema_is_a_draft_2020_12_schema_with_a_description() {
    for schema in ALL {
        let value: Value = serde_json::from_str(schema.text).unwrap();
        assert_eq!(
            value["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{}",
            schema.name
        );
        assert!(value["description"].is_string(), "{}", schema.name);
        LazyLock::force(&schema.validator);
    }
}

#[test]
fn the_definitions_the_schemas_share_are_the_same() {
    // Each file stands alone (no `$ref` across files, so a dashboard can take one), and so
    // repeats the definitions it shares with another: they must not drift apart.
    let parsed: Vec<(&str, Value)> = ALL
        .iter()
        .map(|schema| (schema.name, serde_json::from_str(schema.text).unwrap()))
        .collect();
    let mut shared = 0;
    for (index, (name, schema)) in parsed.iter().enumerate() {
        let Some(defs) = schema["$defs"].as_object() else {
            continue;
        };
        for (other_name, other) in &parsed[index + 1..] {
            let Some(other_defs) = other["$defs"].as_object() else {
                continue;
            };
            for (key, definition) in defs {
                if let Some(other_definition) = other_defs.get(key) {
                    // The states and the detail levels are each file's own.
                    if key.starts_with("state") || matches!(key.as_str(), "full" | "minimal") {
                        continue;
                    }
                    assert_eq!(
                        definition, other_definition,
                        "$defs/{key} differs between {name} and {other_name}"
                    );
                    shared += 1;
                }
            }
        }
    }
    assert!(shared >= 10, "{shared} shared definitions");
}

/// A hold over passing checks, at each detail level, byte for byte (timestamps and timings
/// aside): at `Details::Never` the 503 says what the 200 says plus the hold, with no `details`
/// object whose every entry repeats `checks` between nulls; at `Details::Always` the entries
/// carry the timings.
#[tokio::test]
async fn a_held_readiness_body_at_each_detail_level() {
    use crate::config::Details;
    use crate::test_helpers::normalize;

    let handle = monitor(config_with(FakeCheck::Ready));
    rounds(&handle).await;
    handle.hold("db migration by alice");
    let body = |details: Details| {
        let handle = handle.clone();
        async move {
            let audience = crate::access::audience(details, false);
            let response = handle
                .probe_response(
                    Probe::Ready,
                    BodyMode::Full,
                    Freshness::Published,
                    audience,
                    crate::http::request::Form::Json,
                )
                .await;
            let (status, _, body) = read(response).await;
            assert_eq!(
                status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{details:?}: {body}"
            );
            READY.check(&body, &format!("held, {details:?}"));
            normalize(&body)
        }
    };
    assert_eq!(
        body(Details::Never).await,
        r#"{"checks":{"database_default":"ready"},"reason":"held by the operator","status":"not_ready","timestamp":"T"}"#
    );
    assert_eq!(
        body(Details::Always).await,
        r#"{"checks":{"database_default":"ready"},"details":{"database_default":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"status":"ready"}},"reason":"held by the operator: db migration by alice","status":"not_ready","timestamp":"T"}"#
    );
    // The schema holds the minimal level to it.
    READY.refuses(
        &json!({
            "checks": {"database_default": "ready"},
            "details": {"database_default": {"detail": null, "error": null, "error_kind": null, "status": "ready"}},
            "reason": "held by the operator",
            "status": "not_ready",
            "timestamp": "2026-12-01T06:45:17.267Z",
        }),
        "a minimal held body listing passing databases between nulls",
    );
}

/// A real body of `probe` for `audience`, as JSON.
async fn real(handle: &HealthHandle, probe: Probe, audience: Audience) -> Value {
    let response = handle
        .probe_response(
            probe,
            BodyMode::Full,
            Freshness::Published,
            audience,
            crate::http::request::Form::Json,
        )
        .await;
    let (_, _, body) = read(response).await;
    serde_json::from_str(&body).unwrap()
}

/// `body` with `change` applied.
fn with(body: &Value, change: impl FnOnce(&mut Value)) -> Value {
    let mut body = body.clone();
    change(&mut body);
    body
}

fn remove(body: &Value, pointer: &str) -> Value {
    with(body, |body| {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        body.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{parent} is not an object in the body"))
            .remove(key)
            .unwrap_or_else(|| panic!("{pointer} is not in the body"));
    })
}

fn set(body: &Value, pointer: &str, value: Value) -> Value {
    with(body, |body| {
        *body
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer} is not in the body")) = value;
    })
}

#[tokio::test]
async fn the_schemas_refuse_a_body_that_breaks_a_dashboard() {
    let handle = monitor(
        config_with(Failing(CheckErrorKind::Auth)).component(ComponentSpec::new(
            "cache",
            FakeComponent::new(FakeCheck::Refused),
        )),
    );
    rounds(&handle).await;
    let health = real(&handle, Probe::Health, Audience::Full).await;
    let short = real(&handle, Probe::Health, Audience::Minimal).await;
    let ready = real(&handle, Probe::Ready, Audience::Full).await;
    let pool = real(&handle, Probe::Pool, Audience::Full).await;
    let short_pool = real(&handle, Probe::Pool, Audience::Minimal).await;
    for (schema, body) in [
        (&HEALTH, &health),
        (&HEALTH, &short),
        (&READY, &ready),
        (&POOL, &pool),
        (&POOL, &short_pool),
    ] {
        schema.check(&body.to_string(), "the unchanged body");
    }

    for key in [
        "/status",
        "/checks",
        "/checks/database",
        "/details/database/status",
        "/details/database/error_kind",
        "/details/database/elapsed_ms",
        "/components/cache/status",
        "/components/cache/since",
        "/timestamp",
        "/self_healing",
        "/causes",
        "/causes/0/kind",
        "/reason",
        "/_cache",
        "/_cache/age_ms",
    ] {
        HEALTH.refuses(&remove(&health, key), &format!("a body without {key}"));
    }
    for (pointer, value) in [
        ("/status", json!("ok")),
        ("/status", json!("Healthy")),
        ("/checks/database", json!("fine")),
        ("/details/database/status", json!("up")),
        ("/details/database/error_kind", json!("Auth")),
        ("/details/database/elapsed_ms", json!("1.2")),
        ("/components/cache/status", json!("red")),
        ("/components/cache/critical", json!("false")),
        ("/components/cache/error_kind", json!("connection_refused")),
        ("/timestamp", json!("yesterday")),
        ("/timestamp", json!("2026-12-01 06:45:17")),
        ("/self_healing", json!("true")),
        ("/causes/0/kind", json!("db")),
        ("/reason", json!(null)),
        ("/_cache/hit", json!(false)),
        ("/_cache/age_ms", json!(-1)),
    ] {
        HEALTH.refuses(
            &set(&health, pointer, value.clone()),
            &format!("{pointer}: {value}"),
        );
    }
    // The minimal form shows no timing, text, target or figure: one of them is a leak.
    HEALTH.refuses(
        &set(
            &short,
            "/details/database/error",
            json!("password authentication failed"),
        ),
        "error text in the minimal form",
    );
    HEALTH.refuses(
        &with(&short, |body| {
            body["details"]["database"]["elapsed_ms"] = json!(1.5)
        }),
        "a timing in the minimal form",
    );
    HEALTH.refuses(
        &with(&short, |body| {
            body["details"]["database"]["target"] = json!("db:5432")
        }),
        "a target in the minimal form",
    );
    HEALTH.refuses(
        &with(&short, |body| {
            body["components"]["cache"]["details"] = json!({"version": "7.2.4"})
        }),
        "a check's details in the minimal form",
    );
    HEALTH.refuses(
        &with(&health, |body| {
            body["details"]["database"]["details"] = json!({"version": "16.4"})
        }),
        "details of a check that failed",
    );
    HEALTH.refuses(
        &with(&health, |body| {
            body["components"]["cache"]["details"] = json!("16.4")
        }),
        "details that are not an object",
    );

    for key in ["/status", "/checks", "/details", "/timestamp"] {
        READY.refuses(
            &remove(&ready, key),
            &format!("a readiness body without {key}"),
        );
    }
    READY.refuses(&set(&ready, "/status", json!("unready")), "status unready");
    READY.refuses(
        &set(&ready, "/checks/database_default", json!("down")),
        "a check down",
    );
    READY.refuses(
        &json!({"checks": {"database_default": "not_ready"}, "status": "ready"}),
        "the all-clear body with a database not ready",
    );
    READY.refuses(
        &json!({"checks": {}, "status": "not_ready"}),
        "a 503 without details",
    );

    for key in [
        "/status",
        "/pool_info",
        "/pool_info/is_usable",
        "/pool_info/alias",
        "/error",
        "/pool_info/max_size",
    ] {
        POOL.refuses(&remove(&pool, key), &format!("a pool body without {key}"));
    }
    POOL.refuses(
        &set(&pool, "/pool_info/is_usable", json!(true)),
        "a failed check usable",
    );
    POOL.refuses(
        &set(&pool, "/pool_info/in_use", json!("3")),
        "a figure as a string",
    );
    POOL.refuses(
        &with(&short_pool, |body| {
            body["pool_info"]["max_size"] = json!(10)
        }),
        "a figure in the minimal form",
    );
    POOL.refuses(
        &set(
            &short_pool,
            "/error",
            json!("auth: password authentication failed for user app"),
        ),
        "error text in the minimal form",
    );

    STARTUP.refuses(&json!({"status": "starting"}), "starting without a reason");
    STARTUP.refuses(&json!({"status": "up"}), "status up");
    LIVE.refuses(&json!({"status": "ok"}), "live ok");
    PING.refuses(&json!({"status": "alive"}), "ping without pong");
    ERROR.refuses(&json!({"error": "method not allowed"}), "405 without allow");
    ERROR.refuses(
        &json!({"status": "draining"}),
        "a drain rejection without error",
    );
    CONTROL.refuses(
        &json!({"status": "held", "changed": true}),
        "a hold without its reason",
    );
    CONTROL.refuses(
        &json!({"status": "released", "changed": "yes"}),
        "changed as a string",
    );
}

/// A health group's body in every state, at both detail levels: healthy, degraded (an
/// optional member down), unhealthy, unavailable (before the first round, and stale), held
/// and draining.
#[tokio::test]
async fn every_group_body_matches_its_schema() {
    use crate::config::HealthGroup;
    use crate::http::request::Form;

    async fn bodies(handle: &HealthHandle, expected: &str, seen: &mut Seen) {
        for audience in Audience::ALL {
            let response = handle
                .group_response("checkout", BodyMode::Full, audience, Form::Json)
                .await;
            let (status, _, body) = read(response).await;
            let what = format!("group {expected}, {audience:?}");
            let value = GROUP.check(&body, &what);
            seen.check(&GROUP, &body, &what);
            assert_eq!(value["status"], expected, "{what}: {body}");
            assert_eq!(value["group"], "checkout");
            let passes = matches!(expected, "healthy" | "degraded");
            assert_eq!(status.is_success(), passes, "{what}: {status}");
            if audience == Audience::Minimal {
                assert!(
                    !body.contains("refused"),
                    "{what}: error text shown: {body}"
                );
            }
        }
    }
    let group = |config: HealthConfig| {
        config.group(
            HealthGroup::new("checkout")
                .member("database/default")
                .optional("component/cache"),
        )
    };
    let component = |check| ComponentSpec::new("cache", FakeComponent::new(check));
    let mut seen = Seen::default();

    let fine = monitor(group(
        HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .component(component(FakeCheck::Ready)),
    ));
    bodies(&fine, "unavailable", &mut seen).await;
    rounds(&fine).await;
    bodies(&fine, "healthy", &mut seen).await;
    fine.hold("maintenance");
    bodies(&fine, "held", &mut seen).await;
    fine.release();
    let drain = fine.drain().clone();
    drain.start();
    bodies(&fine, "draining", &mut seen).await;

    let degraded = monitor(group(
        HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .component(component(FakeCheck::Refused).failures_before_trouble(1)),
    ));
    rounds(&degraded).await;
    rounds(&degraded).await;
    bodies(&degraded, "degraded", &mut seen).await;

    let down = monitor(group(
        HealthConfig::new()
            .database("default", FakeCheck::Refused)
            .component(component(FakeCheck::Ready)),
    ));
    rounds(&down).await;
    bodies(&down, "unhealthy", &mut seen).await;

    let stale = monitor(group(
        goes_stale_soon()
            .database("default", FakeCheck::Ready)
            .component(component(FakeCheck::Ready)),
    ));
    rounds(&stale).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    bodies(&stale, "unavailable", &mut seen).await;

    // A schema that accepted anything could not fail the checks above.
    GROUP.refuses(
        &json!({"status": "healthy", "checks": {"database/default": "passed"}}),
        "no group",
    );
    GROUP.refuses(
        &json!({"status": "fine", "group": "checkout", "checks": {"database/default": "passed"}}),
        "an unknown status",
    );
}
