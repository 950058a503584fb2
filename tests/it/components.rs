//! Components over a real server, with the real PostgreSQL as the default database:
//! degraded and unhealthy by criticality, panics and hangs confined to their component,
//! hysteresis, and `unknown` before the first result.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use http::StatusCode;
use support::{
    Client, LIMIT, app, eventually, fast, first_rounds, health_server, pg_url, postgres, serve,
};
use tower::ServiceBuilder;
use tower_health::access::AccessKeys;
use tower_health::check::{CheckError, CheckErrorKind, CheckReport};
use tower_health::component::{self, Component, ComponentSpec, ComponentStatus};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor, config::Details, verdict::Status};

const OK: u8 = 0;
const REFUSED: u8 = 1;
const HANGS: u8 = 2;
const PANICS: u8 = 3;

/// A component whose behaviour the test switches while the monitor runs.
fn switchable(behaviour: &Arc<AtomicU8>) -> impl Component {
    let behaviour = Arc::clone(behaviour);
    component::from_fn(move || {
        let now = behaviour.load(Ordering::SeqCst);
        async move {
            match now {
                OK => Ok(()),
                REFUSED => Err(CheckError::new(
                    CheckErrorKind::Refused,
                    "connection refused by cache:6379",
                )),
                HANGS => std::future::pending().await,
                _ => panic!("the component panics"),
            }
        }
    })
}

fn config() -> HealthConfig {
    fast().database("default", postgres(&pg_url()))
}

#[tokio::test]
async fn a_non_critical_component_degrades_health_and_leaves_readiness_alone() {
    require_postgres!();
    let cache = Arc::new(AtomicU8::new(REFUSED));
    let settings = config().component(ComponentSpec::new("cache", switchable(&cache)));
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    let degraded = eventually(LIMIT, || async {
        health.view().health.status == Status::Degraded
    })
    .await;
    assert!(degraded, "{:?}", health.view().health);
    let reply = client.get(server.addr, "/health").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["components"]["cache"]["status"], "degraded");
    assert_eq!(body["components"]["cache"]["critical"], false);
    assert_eq!(
        body["components"]["cache"]["error"],
        "connection refused by cache:6379"
    );
    assert_eq!(body["components"]["cache"]["error_kind"], "refused");
    assert_eq!(body["checks"]["database"], "healthy");
    // The database's target: host, port and database name, never a user or password.
    let target = body["details"]["database"]["target"].as_str().unwrap();
    let addr = support::pg_addr();
    assert!(target.starts_with(&addr.to_string()), "{target}");
    assert!(!target.contains('@'), "{target}");
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert_eq!(ready.json()["status"], "ready");
    // Envoy's signal: on the degraded answer (GET and HEAD), on no other.
    assert_eq!(reply.header(ENVOY_DEGRADED), Some("degraded"));
    let head = client
        .request(http::Method::HEAD, server.addr, "/health")
        .await;
    assert_eq!(head.header(ENVOY_DEGRADED), Some("degraded"));
    for path in [
        "/health/ready",
        "/health/live",
        "/health/startup",
        "/health/ping",
        "/",
    ] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.header(ENVOY_DEGRADED), None, "{path}");
    }

    // The component recovers: healthy again, and not degraded for Envoy either.
    cache.store(OK, Ordering::SeqCst);
    let recovered = eventually(LIMIT, || async {
        client.get(server.addr, "/health").await.json()["status"] == "healthy"
    })
    .await;
    assert!(recovered, "{:?}", health.view().health);
    let healthy = client.get(server.addr, "/health").await;
    assert_eq!(healthy.header(ENVOY_DEGRADED), None);
}

/// The header Envoy reads on a health check's answer as "degraded".
const ENVOY_DEGRADED: &str = "x-envoy-degraded";

#[tokio::test]
async fn a_critical_component_makes_health_unhealthy() {
    require_postgres!();
    let queue = Arc::new(AtomicU8::new(REFUSED));
    let settings =
        config().component(ComponentSpec::new("queue", switchable(&queue)).critical(true));
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    let unhealthy = eventually(LIMIT, || async {
        let reply = client.get(server.addr, "/health").await;
        reply.status == StatusCode::SERVICE_UNAVAILABLE && reply.json()["status"] == "unhealthy"
    })
    .await;
    assert!(unhealthy, "{:?}", health.view().health);
    let body = client.get(server.addr, "/health").await.json();
    assert_eq!(body["reason"], "critical component queue is unhealthy");
    assert_eq!(body["components"]["queue"]["critical"], true);
    // The database is fine, so readiness is.
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
}

#[tokio::test]
async fn a_panicking_and_a_hanging_component_do_not_hold_up_the_rest() {
    require_postgres!();
    let panics = Arc::new(AtomicU8::new(PANICS));
    let hangs = Arc::new(AtomicU8::new(HANGS));
    let fine = Arc::new(AtomicU8::new(OK));
    let settings = config()
        .component(ComponentSpec::new("panics", switchable(&panics)))
        .component(ComponentSpec::new("hangs", switchable(&hangs)))
        .component(ComponentSpec::new("fine", switchable(&fine)).critical(true));
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    // On a loaded machine a round can also see the real database slow: wait for one where
    // it is not, then judge that round's body.
    let reported = Arc::new(std::sync::Mutex::new(None));
    let found = eventually(LIMIT, || async {
        let reply = client.get(server.addr, "/health").await;
        let body = reply.json();
        let all_in = body["components"]["panics"]["check"] == "error"
            && body["components"]["hangs"]["check"] == "timed_out"
            && body["components"]["fine"]["check"] == "ok"
            && body["checks"]["database"] == "healthy";
        if all_in {
            *reported.lock().unwrap() = Some((reply.status, body));
        }
        all_in
    })
    .await;
    assert!(found, "{:?}", health.view().health);
    let (status, body) = reported.lock().unwrap().take().unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["components"]["panics"]["error_kind"], "panicked");
    assert_eq!(body["components"]["fine"]["status"], "healthy");
    // The monitor keeps going: more rounds complete, the hanging check is joined rather than
    // started again, and readiness is still answered.
    let rounds = health.stats().health_rounds;
    let more = eventually(LIMIT, || async {
        health.stats().health_rounds >= rounds + 3
    })
    .await;
    assert!(more, "{:?}", health.stats());
    assert!(health.is_monitor_running());
    let hanging = &health.view().health.components[1];
    assert_eq!(&*hanging.name, "hangs");
    assert!(hanging.consecutive_failures >= 3, "{hanging:?}");
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
}

#[tokio::test]
async fn unknown_before_the_first_result_and_hysteresis_on_the_way_in() {
    require_postgres!();
    // Hangs first: every round times out, fewer failures than the threshold of 1000, and no
    // success yet, so the component stays unknown (and counts as fine by default).
    let cache = Arc::new(AtomicU8::new(HANGS));
    let settings = config().component(
        ComponentSpec::new("cache", switchable(&cache))
            .timeout(Duration::from_millis(50))
            .failures_before_trouble(1000),
    );
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    let timed_out = eventually(LIMIT, || async {
        health.view().health.components[0].consecutive_failures >= 2
    })
    .await;
    assert!(timed_out, "{:?}", health.view().health);
    let reply = client.get(server.addr, "/health").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["status"], "healthy");
    assert_eq!(body["components"]["cache"]["status"], "unknown");
    assert_eq!(body["components"]["cache"]["check"], "timed_out");
    drop(server);
    drop(health);

    // Hysteresis: three failures in a row before degraded. Every verdict published on the
    // way shows the component unknown with fewer failures, never degraded early.
    let cache = Arc::new(AtomicU8::new(OK));
    let settings = config().component(
        ComponentSpec::new("cache", switchable(&cache))
            .failures_before_trouble(3)
            .successes_before_recovery(2),
    );
    let (health, _server) = health_server(settings).await;
    first_rounds(&health).await;
    let healthy = eventually(LIMIT, || async {
        health.view().health.components[0].status == ComponentStatus::Healthy
    })
    .await;
    assert!(healthy, "{:?}", health.view().health);
    let mut updates = health.watch();
    updates.current().unwrap();
    cache.store(REFUSED, Ordering::SeqCst);
    let mut failures_seen = Vec::new();
    loop {
        let verdict = support::bounded("a verdict", updates.changed())
            .await
            .unwrap()
            .health;
        let component = &verdict.components[0];
        if component.status == ComponentStatus::Degraded {
            assert!(component.consecutive_failures >= 3, "{component:?}");
            assert_eq!(verdict.status, Status::Degraded);
            break;
        }
        assert_eq!(component.status, ComponentStatus::Healthy, "{component:?}");
        assert_eq!(verdict.status, Status::Healthy);
        failures_seen.push(component.consecutive_failures);
    }
    assert!(
        failures_seen.iter().all(|&failures| failures < 3),
        "{failures_seen:?}"
    );
}

#[tokio::test]
async fn an_optional_database_refused_degrades_health_and_leaves_readiness_ready() {
    require_postgres!();
    let refused = support::refused_addr().await;
    let settings = config()
        .database(
            "replica",
            postgres(&format!("postgres://postgres@{refused}/postgres")),
        )
        .optional_database("replica");
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    let degraded = eventually(LIMIT, || async {
        health.view().health.status == Status::Degraded
    })
    .await;
    assert!(degraded, "{:?}", health.view().health);
    let reply = client.get(server.addr, "/health").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(
        body["reason"],
        "optional database replica is not_ready (refused)"
    );
    assert_eq!(body["causes"][0]["name"], "replica");
    assert_eq!(body["details"]["database_replica"]["critical"], false);
    assert_eq!(body["checks"]["database"], "healthy");
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert_eq!(ready.json()["checks"]["database_replica"], "not_ready");
}

#[tokio::test]
async fn watchers_see_the_transitions_of_health_and_readiness() {
    require_postgres!();
    let cache = Arc::new(AtomicU8::new(OK));
    let settings = config().component(ComponentSpec::new("cache", switchable(&cache)));
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let healthy = eventually(LIMIT, || async {
        health.view().health.status == Status::Healthy
    })
    .await;
    assert!(healthy, "{:?}", health.view().health);

    // Health: healthy -> degraded -> healthy, each status change seen once in order.
    let mut updates = health.watch();
    updates.current().unwrap();
    cache.store(REFUSED, Ordering::SeqCst);
    let mut statuses = vec![Status::Healthy];
    while statuses.len() < 3 {
        let status = support::bounded("a health verdict", updates.changed())
            .await
            .unwrap()
            .health
            .status;
        if statuses.last() != Some(&status) {
            statuses.push(status);
            if status == Status::Degraded {
                cache.store(OK, Ordering::SeqCst);
            }
        }
    }
    assert_eq!(
        statuses,
        [Status::Healthy, Status::Degraded, Status::Healthy]
    );

    // Readiness: a hold is seen at once (the first poll after it: a zero timeout polls the
    // change once), and so is the release.
    let at_once = Duration::ZERO;
    updates.current().unwrap();
    health.hold("maintenance");
    let view = tokio::time::timeout(at_once, updates.changed()).await;
    let verdict = view.expect("woken by the hold").unwrap().readiness;
    assert!(!verdict.passes());
    assert_eq!(verdict.held.as_deref(), Some("maintenance"));
    let client = Client::new();
    let reply = client.get(server.addr, "/health/ready").await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        client.get(server.addr, "/health/live").await.status,
        StatusCode::OK
    );
    health.release();
    let view = tokio::time::timeout(at_once, updates.changed()).await;
    assert!(
        view.expect("woken by the release")
            .unwrap()
            .readiness
            .passes()
    );
    assert_eq!(
        client.get(server.addr, "/health/ready").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_database_going_and_coming_back_while_a_component_is_degraded() {
    require_postgres!();
    // As the state diagram: degraded -> unhealthy (database gone) -> degraded (database
    // back, the component still in trouble) -> healthy (the component recovers).
    let proxy = support::PgProxy::start(support::pg_addr()).await;
    let cache = Arc::new(AtomicU8::new(REFUSED));
    let settings = fast()
        .database("default", postgres(&proxy.url()))
        .component(ComponentSpec::new("cache", switchable(&cache)));
    let (health, server) = health_server(settings).await;
    first_rounds(&health).await;
    let client = Client::new();
    let status_is = |expected: &'static str| {
        let client = client.clone();
        async move {
            eventually(LIMIT, || async {
                client.get(server.addr, "/health").await.json()["status"] == expected
            })
            .await
        }
    };
    assert!(status_is("degraded").await, "{:?}", health.view().health);
    proxy.freeze();
    assert!(status_is("unhealthy").await, "{:?}", health.view().health);
    let body = client.get(server.addr, "/health").await.json();
    assert_eq!(body["checks"]["database"], "unhealthy");
    assert_eq!(body["components"]["cache"]["status"], "degraded");
    proxy.thaw();
    assert!(status_is("degraded").await, "{:?}", health.view().health);
    cache.store(OK, Ordering::SeqCst);
    assert!(status_is("healthy").await, "{:?}", health.view().health);
}

/// A hand-written component that reports what it reached and saw, as an application writes
/// one: its latency, the server's version, and a connection string (redacted in the body).
fn reporting() -> impl Component {
    component::from_fn(|| async {
        let started = std::time::Instant::now();
        tokio::task::yield_now().await;
        Ok::<_, CheckError>(
            CheckReport::new()
                .target("search.internal:9200")
                .detail("version", "8.15.0")
                .detail("latency_ms", started.elapsed().as_secs_f64() * 1000.0)
                .detail("via", "http://app:s3cret@proxy.internal:3128"),
        )
    })
}

#[tokio::test]
async fn a_hand_written_component_reports_its_target_and_details_where_details_are_shown() {
    require_postgres!();
    const VIEWER: &str = "viewer-key-0123456789abcdef";
    let health = HealthMonitor::spawn(
        config().component(ComponentSpec::new("search", reporting()).critical(true)),
    )
    .unwrap();
    let healthy = eventually(LIMIT, || async {
        health
            .view()
            .health
            .components
            .iter()
            .any(|report| report.status == ComponentStatus::Healthy)
    })
    .await;
    assert!(healthy, "{:?}", health.view().health);
    let keys = AccessKeys::new()
        .operator("operator-key-0123456789abcdef")
        .readonly(VIEWER);
    let layer = |details| {
        HealthLayer::new(&health)
            .details(details)
            .access_keys(&keys)
    };
    let always = serve(
        ServiceBuilder::new()
            .layer(layer(Details::Always))
            .service(app()),
    )
    .await;
    let never = serve(
        ServiceBuilder::new()
            .layer(layer(Details::Never))
            .service(app()),
    )
    .await;
    let authorized = serve(
        ServiceBuilder::new()
            .layer(layer(Details::Authorized))
            .service(app()),
    )
    .await;
    let client = Client::new();

    let shown = |what: &str, body: &serde_json::Value| {
        let search = &body["components"]["search"];
        assert_eq!(search["status"], "healthy", "{what}: {body}");
        assert_eq!(search["check"], "ok", "{what}: {body}");
        assert_eq!(search["target"], "search.internal:9200", "{what}: {body}");
        assert_eq!(search["details"]["version"], "8.15.0", "{what}: {body}");
        assert!(
            search["details"]["latency_ms"].is_number(),
            "{what}: {body}"
        );
        assert_eq!(
            search["details"]["via"], "http://app:***@proxy.internal:3128",
            "{what}: {body}"
        );
        // The database passes too: its own target, no details (the check reports none).
        assert!(
            body["details"]["database"]["target"].is_string(),
            "{what}: {body}"
        );
        assert_eq!(
            body["details"]["database"].get("details"),
            None,
            "{what}: {body}"
        );
    };
    let hidden = |what: &str, body: &serde_json::Value| {
        let text = body.to_string();
        for secret in [
            "search.internal",
            "8.15.0",
            "latency_ms",
            "proxy.internal",
            "target",
        ] {
            assert!(!text.contains(secret), "{what} shows {secret:?}: {text}");
        }
        // The configured name and status stay.
        assert_eq!(
            body["components"]["search"]["status"], "healthy",
            "{what}: {text}"
        );
    };

    let reply = client.get(always.addr, "/health").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert!(!reply.text().contains("s3cret"), "{}", reply.text());
    shown("always", &reply.json());
    hidden("never", &client.get(never.addr, "/health").await.json());
    hidden(
        "authorized, no key",
        &client.get(authorized.addr, "/health").await.json(),
    );
    let viewer = format!("Bearer {VIEWER}");
    let reply = client
        .try_get_with(authorized.addr, "/health", &[("authorization", &viewer)])
        .await
        .unwrap();
    shown("authorized, a viewer key", &reply.json());
    // A bypass renders the fresh result the same way.
    shown(
        "a bypass",
        &client.get(always.addr, "/health?nocache=true").await.json(),
    );

    #[cfg(feature = "admin")]
    {
        use tower_health::admin::{AdminConfig, AdminServer};
        for (details, show) in [(Details::Always, true), (Details::Never, false)] {
            let admin = AdminServer::new(AdminConfig::new().port(0).details(details), &health)
                .start()
                .await
                .unwrap();
            let body = client.get(admin.local_addr(), "/health").await.json();
            if show {
                shown("admin, always", &body);
            } else {
                hidden("admin, never", &body);
            }
        }
    }
}

/// Credentials in a URL's query string (issue 21): `component::Http` targets with
/// `?access_token=..&api_key=..`, one built in code (shared through Redis) and one declared by
/// an operator, and a check error that quotes such a URL, show in no body at any detail level
/// (the application's port and the admin server's), in no log line, in no metric and not in
/// the shared entry in Redis. Their keys stay: the target still says what is checked.
#[cfg(all(
    feature = "http-check",
    feature = "redis",
    feature = "admin",
    feature = "metrics"
))]
#[tokio::test]
async fn query_string_credentials_show_in_no_body_log_metric_or_shared_entry() {
    use support::redis_server::{redis_url, unique_prefix};
    use tower_health::admin::{AdminConfig, AdminServer};
    use tower_health::component::Http;
    use tower_health::redis::SharedCache;

    require_postgres!();
    require_redis!();
    const TOKEN: &str = "Query-Token-5b1e8d";
    const API_KEY: &str = "Query-Key-93c0aa";
    const ENV_KEY: &str = "Query-Env-Key-47f2c1";
    const ERROR_TOKEN: &str = "Query-Error-Token-e60d3b";
    const SECRETS: [&str; 4] = [TOKEN, API_KEY, ENV_KEY, ERROR_TOKEN];
    const VIEWER: &str = "viewer-key-0123456789abcdef";
    // Every log line of this test's thread (the current-thread runtime runs the monitor's
    // tasks on it), the crate's at TRACE.
    let logs = support::logs::Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("info,tower_health=trace")
        .with_ansi(false)
        .with_writer(logs.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let dependency = serve(app()).await;
    let payments = format!(
        "http://{}/health?access_token={TOKEN}&api_key={API_KEY}",
        dependency.addr
    );
    let search = format!("http://{}/status?api_key={ENV_KEY}", dependency.addr);
    let billing = component::from_fn(|| async {
        Err::<(), _>(CheckError::new(
            CheckErrorKind::Other,
            format!(
                "GET https://billing.internal/v1/health?access_token={ERROR_TOKEN} answered 503"
            ),
        ))
    });
    let prefix = unique_prefix("query-credentials");
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(&prefix);
    let entry_key = cache.entry_key();
    let settings = HealthConfig::from_vars([("TOWER_HEALTH_HTTP_SEARCH", search.as_str())])
        .unwrap()
        .readiness_interval(Duration::from_millis(100))
        .health_interval(Duration::from_millis(200))
        .readiness_timeout(Duration::from_millis(300))
        .database("default", postgres(&pg_url()))
        .component(ComponentSpec::new("payments", Http::new(&payments).unwrap()).shared(true))
        .component(ComponentSpec::new("billing", billing).shared(true))
        .shared_cache(cache);
    let health = HealthMonitor::spawn(settings).unwrap();
    first_rounds(&health).await;

    // The shared entry, once it holds both shared components' results.
    let stored = Arc::new(std::sync::Mutex::new(String::new()));
    let written = eventually(LIMIT, || async {
        use redis::AsyncCommands;
        let client = redis::Client::open(redis_url()).unwrap();
        let Ok(mut redis) = client.get_multiplexed_async_connection().await else {
            return false;
        };
        let entry: Option<String> = redis.get(&entry_key).await.unwrap_or_default();
        let entry = entry.unwrap_or_default();
        let complete = entry.contains("\"payments\"") && entry.contains("answered 503");
        *stored.lock().unwrap() = entry;
        complete
    })
    .await;
    let stored = stored.lock().unwrap().clone();
    assert!(written, "the entry: {stored}");
    assert!(
        stored.contains("/health?access_token=***&api_key=***"),
        "the payments target is stored: {stored}"
    );
    let mut shown = vec![("the shared entry".to_owned(), stored)];

    let keys = AccessKeys::new()
        .operator("operator-key-0123456789abcdef")
        .readonly(VIEWER);
    let client = Client::new();
    let viewer = format!("Bearer {VIEWER}");
    let mut always = None;
    for details in [Details::Always, Details::Authorized, Details::Never] {
        let layer = HealthLayer::new(&health)
            .details(details)
            .access_keys(&keys);
        let server = serve(ServiceBuilder::new().layer(layer).service(app())).await;
        for path in ["/health", "/health/ready", "/health/live", "/health/pool"] {
            let anonymous = client.get(server.addr, path).await.text();
            if details == Details::Always && path == "/health" {
                always = Some(serde_json::from_str::<serde_json::Value>(&anonymous).unwrap());
            }
            shown.push((format!("{details:?} {path}"), anonymous));
            let reply = client
                .try_get_with(server.addr, path, &[("authorization", &viewer)])
                .await
                .unwrap();
            shown.push((format!("{details:?} {path}, a viewer key"), reply.text()));
        }
    }
    for details in [Details::Always, Details::Never] {
        let admin = AdminServer::new(AdminConfig::new().port(0).details(details), &health)
            .start()
            .await
            .unwrap();
        for path in ["/health", "/health/ready", "/metrics"] {
            let body = client.get(admin.local_addr(), path).await.text();
            shown.push((format!("admin {details:?} {path}"), body));
        }
    }
    let metrics = &shown.last().unwrap().1;
    assert!(
        metrics.contains(r#"tower_health_component_status{component="payments""#),
        "{metrics}"
    );
    let logged = logs.text();
    assert!(
        logged.contains("access_token=***"),
        "the billing error is logged: {logged}"
    );
    shown.push(("the logs".to_owned(), logged));

    // Shown where details are, with their keys and masked values.
    let always = always.unwrap();
    assert_eq!(
        always["components"]["payments"]["target"],
        format!(
            "http://{}/health?access_token=***&api_key=***",
            dependency.addr
        ),
        "{always}"
    );
    assert_eq!(
        always["components"]["search"]["target"],
        format!("http://{}/status?api_key=***", dependency.addr),
        "{always}"
    );
    assert_eq!(
        always["components"]["billing"]["error"],
        "GET https://billing.internal/v1/health?access_token=*** answered 503",
        "{always}"
    );
    for (what, text) in &shown {
        for secret in SECRETS {
            assert!(!text.contains(secret), "{what} shows {secret:?}: {text}");
        }
    }
}
