//! Asking every reader of one monitor, in-process, as its clients would: the six HTTP probes
//! and Kubernetes' `?verbose` through the real `HealthLayer`, the HAProxy agent's line, gRPC
//! `Check` and `Watch`, the Prometheus exposition, the operator's page and its updates.
//! Then comparing each with the model.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tower::ServiceExt;
use tower_layer::Layer;

use super::model::{Answer, COMPONENT, Expected};
use super::schedule::{Costly, Setup};
use crate::access::KeyDigests;
use crate::admin::AdminState;
use crate::config::{Details, NoCache};
use crate::grpc::pb::HealthCheckRequest;
use crate::grpc::pb::health_check_response::ServingStatus as Wire;
use crate::grpc::pb::health_server::Health;
use crate::grpc::{HealthService, ServingStatus};
use crate::metrics::HealthMetrics;
use crate::monitor::HealthHandle;
use crate::probe::Probe;
use crate::view::Condition;
use crate::{HealthLayer, ResponseBody};

/// The inner service of the HTTP stack: no probe reaches it.
type Inner = tower::util::ServiceFn<
    fn(Request<Empty<Bytes>>) -> std::future::Ready<Result<Response<Empty<Bytes>>, Infallible>>,
>;

/// The six probes and the layer's paths.
const PATHS: [(Probe, &str); 6] = [
    (Probe::Live, "/health/live"),
    (Probe::Ready, "/health/ready"),
    (Probe::Startup, "/health/startup"),
    (Probe::Health, "/health"),
    (Probe::Pool, "/health/pool"),
    (Probe::Ping, "/health/ping"),
];

/// What a pushed reader sent, and when it arrived.
type Pushed<T> = Arc<Mutex<Vec<(Instant, T)>>>;

/// Every reader of one monitor.
pub(super) struct Readers {
    health: HealthHandle,
    /// The HTTP stack, in the schedules that ask for it (see [`Costly`]).
    http: Option<<HealthLayer as Layer<Inner>>::Service>,
    grpc: HealthService,
    admin: Arc<AdminState>,
    agent: crate::dialect::haproxy::Lines,
    slow_start: Duration,
    costly: Costly,
    /// `Watch("")` and `Watch("database/default")`.
    watches: [Pushed<ServingStatus>; 2],
    /// The headline of each update of the page.
    updates: Pushed<String>,
    tasks: Vec<JoinHandle<()>>,
}

/// What every reader said at one instant.
pub(super) struct Observed {
    /// Each probe's status code and body `status` (none without the HTTP stack).
    http: Vec<(Probe, StatusCode, String)>,
    ready_database: Option<String>,
    health_database: Option<String>,
    returning: bool,
    verbose: Option<(StatusCode, String)>,
    agent: String,
    /// `Check`'s answers; `None` for an error (`NOT_FOUND`).
    check: [Option<ServingStatus>; 3],
    metrics: Option<String>,
    page: Option<String>,
    /// The last message of each `Watch` and of the page's updates, and when it came.
    watches: [Option<(Instant, ServingStatus)>; 2],
    update: Option<(Instant, String)>,
}

impl Readers {
    /// The readers of `health`, the pushed ones following it from now on.
    pub(super) async fn new(health: &HealthHandle, setup: &Setup) -> Self {
        let inner: Inner =
            tower::service_fn(|_| std::future::ready(Ok(Response::new(Empty::new()))));
        let http = setup
            .costly
            .http
            .then(|| HealthLayer::new(health).layer(inner));
        let grpc = HealthService::new(health);
        let admin = Arc::new(AdminState {
            health: health.clone(),
            keys: KeyDigests::default(),
            details: Details::Always,
            nocache: NoCache::Allowed,
            metrics: HealthMetrics::new(health),
            hosts: None,
            closing: tokio::sync::watch::Sender::new(false),
        });
        let watches = [Pushed::default(), Pushed::default()];
        let updates = Pushed::default();
        let mut tasks = Vec::new();
        for (service, pushed) in ["", "database/default"].into_iter().zip(&watches) {
            let request = tonic::Request::new(HealthCheckRequest {
                service: service.into(),
            });
            let mut stream = grpc
                .watch(request)
                .await
                .expect("Watch answers")
                .into_inner();
            let pushed = pushed.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let status = serving(message.status());
                    lock(&pushed).push((crate::clock::now(), status));
                }
            }));
        }
        if setup.costly.page {
            tasks.push(tokio::spawn(follow_the_page(
                admin.clone(),
                updates.clone(),
            )));
        }
        Self {
            health: health.clone(),
            http,
            grpc,
            admin,
            agent: crate::dialect::haproxy::Lines::new(setup.degraded_weight, false, None),
            slow_start: setup.slow_start,
            costly: setup.costly,
            watches,
            updates,
            tasks,
        }
    }

    /// Asks every reader of this schedule now (the page's whole document only when `page`:
    /// its headline is followed at every step through its updates).
    pub(super) async fn observe(&self, page: bool) -> Observed {
        let mut http = Vec::new();
        let (mut ready_database, mut health_database, mut returning) = (None, None, false);
        let paths = if self.http.is_some() { &PATHS[..] } else { &[] };
        for &(probe, path) in paths {
            let (status, body) = self.get(path).await;
            let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
            let word = body["status"].as_str().unwrap_or_default().to_owned();
            match probe {
                Probe::Ready => {
                    ready_database = body["checks"]["database_default"]
                        .as_str()
                        .map(str::to_owned);
                    returning = body.get("returning").is_some();
                }
                Probe::Health => {
                    health_database = body["checks"]["database"].as_str().map(str::to_owned);
                }
                _ => {}
            }
            http.push((probe, status, word));
        }
        let verbose = match self.http {
            Some(_) => Some(self.get("/health/ready?verbose").await),
            None => None,
        };
        let agent = crate::haproxy::line_now(&self.health, &self.agent, self.slow_start);
        let mut check = [None; 3];
        for (service, slot) in ["", "database/default", &format!("component/{COMPONENT}")]
            .into_iter()
            .zip(&mut check)
        {
            let request = tonic::Request::new(HealthCheckRequest {
                service: service.into(),
            });
            *slot = match self.grpc.check(request).await {
                Ok(response) => Some(serving(response.into_inner().status())),
                Err(_) => None,
            };
        }
        let metrics = self
            .costly
            .metrics
            .then(|| String::from_utf8(self.admin.metrics.exposition().to_vec()).expect("UTF-8"));
        let page = if page && self.costly.page {
            Some(self.page("/health/page").await.1)
        } else {
            None
        };
        let last = |pushed: &Pushed<ServingStatus>| lock(pushed).last().copied();
        Observed {
            http,
            ready_database,
            health_database,
            returning,
            verbose,
            agent: String::from_utf8_lossy(&agent).into_owned(),
            check,
            metrics,
            page,
            watches: [last(&self.watches[0]), last(&self.watches[1])],
            update: lock(&self.updates).last().cloned(),
        }
    }

    /// Whether the `Watch` streams have ended (the drain's delay ran out).
    pub(super) fn watches_ended(&self) -> bool {
        self.tasks[..2].iter().all(JoinHandle::is_finished)
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(Empty::new()).expect("a request");
        let http = self.http.clone().expect("asked with the HTTP stack only");
        let response = http.oneshot(request).await.expect("infallible");
        let status = response.status();
        (status, text(response.into_body()).await)
    }

    async fn page(&self, path: &str) -> (StatusCode, String) {
        get_page(&self.admin, path).await
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn text<B>(body: ResponseBody<B>) -> String
where
    ResponseBody<B>: http_body::Body<Data = Bytes, Error = Infallible>,
{
    let bytes = body.collect().await.expect("infallible").to_bytes();
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

async fn get_page(admin: &AdminState, path: &str) -> (StatusCode, String) {
    let request = Request::get(path).body(()).expect("a request");
    let activity = std::sync::Arc::new(crate::side_port::Activity::new());
    let response = admin.handle(&request, &activity).await;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("infallible")
        .to_bytes();
    (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
}

/// Keeps the page's updates coming, as its script does, and notes each one's headline.
async fn follow_the_page(admin: Arc<AdminState>, updates: Pushed<String>) {
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            Some(token) => format!("/health/page/updates?after={token}"),
            None => "/health/page/updates".to_owned(),
        };
        let (status, main) = get_page(&admin, &path).await;
        if status == StatusCode::NO_CONTENT {
            continue;
        }
        token = between(&main, "data-token=\"", "\"").map(str::to_owned);
        let headline = headline(&main).unwrap_or_default();
        lock(&updates).push((crate::clock::now(), headline));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn serving(wire: Wire) -> ServingStatus {
    match wire {
        Wire::Serving => ServingStatus::Serving,
        Wire::NotServing => ServingStatus::NotServing,
        Wire::Unknown | Wire::ServiceUnknown => ServingStatus::Unknown,
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}

/// The page's headline: health's badge and the one beside it, whether the process is in
/// rotation, as `Expected::page_headline` words them.
fn headline(page: &str) -> Option<String> {
    let health = between(page, "id=\"health\">", "</span>")?;
    let rotation = between(page, "id=\"rotation\">", "</span>")?;
    Some(format!("{health}, {rotation}"))
}

/// Every reader that disagrees with the model at `at`: its name, what the model says and what
/// it said. `before` is the model a push's tolerance ago, which a reader that pushes may
/// still show.
pub(super) fn disagreements(
    at: Instant,
    now: &Expected,
    before: &Expected,
    observed: &Observed,
    watches_ended: bool,
) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let mut differ = |reader: &str, expected: String, said: String| {
        if expected != said {
            found.push((reader.to_owned(), expected, said));
        }
    };
    let code = |passing: bool| {
        if passing {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    for (probe, status, word) in &observed.http {
        let answer = match probe {
            Probe::Live | Probe::Ping => Answer {
                passing: true,
                condition: Condition::Verdict,
                status: "alive",
            },
            Probe::Ready => now.ready,
            Probe::Startup => now.startup,
            Probe::Health => now.health,
            Probe::Pool => now.pool,
        };
        differ(
            &format!("HTTP {}", probe.as_str()),
            format!("{} {}", code(answer.passing).as_u16(), answer.status),
            format!("{} {word}", status.as_u16()),
        );
    }
    if let Some((status, text)) = &observed.verbose {
        let shown = |word: &Option<String>, expected: Option<&str>| {
            format!("{:?}", word.as_deref().filter(|_| expected.is_some()))
        };
        differ(
            "HTTP ready body's checks.database_default",
            format!("{:?}", now.ready_database),
            shown(&observed.ready_database, now.ready_database),
        );
        differ(
            "HTTP health body's checks.database",
            format!("{:?}", now.health_database),
            shown(&observed.health_database, now.health_database),
        );
        differ(
            "HTTP ready body's `returning`",
            now.returning.to_string(),
            observed.returning.to_string(),
        );
        let listed = |check: &str| {
            text.lines()
                .any(|line| line.starts_with(&format!("[-]{check} ")))
        };
        let last = text.lines().last().unwrap_or_default();
        differ(
            "?verbose",
            format!(
                "{} readyz check {}",
                code(now.ready.passing).as_u16(),
                if now.ready.passing {
                    "passed"
                } else {
                    "failed"
                }
            ),
            format!("{} {last}", status.as_u16()),
        );
        differ(
            "?verbose's [-]shutdown",
            now.draining.to_string(),
            listed("shutdown").to_string(),
        );
        if !now.draining {
            differ(
                "?verbose's [-]monitor",
                now.monitor_failing.to_string(),
                listed("monitor").to_string(),
            );
            differ(
                "?verbose's [-]return",
                now.returning.to_string(),
                listed("return").to_string(),
            );
        }
    }
    if !agent_agrees(&now.agent, &observed.agent, now.load_feedback) {
        differ("HAProxy agent", now.agent.clone(), observed.agent.clone());
    }
    let expected_checks = [Some(now.ready_grpc), Some(now.database), now.component];
    for ((service, expected), said) in ["", "database/default", "component/cache"]
        .into_iter()
        .zip(expected_checks)
        .zip(observed.check)
    {
        if let Some(expected) = expected {
            differ(
                &format!("gRPC Check({service:?})"),
                format!("{expected:?}"),
                said.map_or_else(|| "an error".to_owned(), |said| format!("{said:?}")),
            );
        }
    }
    if let Some(exposition) = &observed.metrics {
        for (reader, expected, said) in metrics(now, exposition) {
            differ(&reader, expected, said);
        }
    }
    if let Some(page) = &observed.page {
        let page_headline = headline(page).unwrap_or_default();
        differ("page headline", now.page_headline(), page_headline);
        // `<instance> on <host>: <health>, <rotation>`.
        let title = between(page, "<title>", "</title>").unwrap_or_default();
        let expected = now.page_headline();
        let said = if title.ends_with(&format!(": {expected}")) {
            expected.clone()
        } else {
            title.to_owned()
        };
        differ("page <title>", expected, said);
    }
    // The readers that push: the answer now, or the one a tolerance ago.
    let mut pushed =
        |reader: &str, now: String, before: String, said: Option<(Instant, String)>| {
            let Some((came, said)) = said else {
                found.push((reader.to_owned(), now, "nothing".to_owned()));
                return;
            };
            if said != now && said != before {
                let ago = at.saturating_duration_since(came);
                let said = format!(
                    "{said}, its last message, {} before",
                    super::schedule::ms(ago)
                );
                found.push((reader.to_owned(), now, said));
            }
        };
    if !watches_ended {
        let watched = [
            (
                now.ready_debounced,
                before.ready_debounced,
                observed.watches[0],
                "gRPC Watch(\"\")",
            ),
            (
                now.database_debounced,
                before.database_debounced,
                observed.watches[1],
                "gRPC Watch(\"database/default\")",
            ),
        ];
        for (now, before, said, reader) in watched {
            pushed(
                reader,
                format!("{now:?}"),
                format!("{before:?}"),
                said.map(|(came, said)| (came, format!("{said:?}"))),
            );
        }
    }
    if observed.update.is_some() {
        pushed(
            "page update's headline",
            now.page_headline(),
            before.page_headline(),
            observed.update.clone(),
        );
    }
    found
}

/// The gauges against the answers.
fn metrics(now: &Expected, metrics: &str) -> Vec<(String, String, String)> {
    let flag = |on: bool| if on { "1" } else { "0" };
    let mut expected: Vec<(String, &str)> = Vec::new();
    for (probe, answer) in [
        (Probe::Ready, now.ready),
        (Probe::Health, now.health),
        (Probe::Pool, now.pool),
        (Probe::Startup, now.startup),
    ] {
        let probe = probe.as_str();
        expected.push((
            format!("tower_health_probe_passing{{probe=\"{probe}\"}}"),
            flag(answer.passing),
        ));
        expected.push((
            format!(
                "tower_health_probe_condition{{probe=\"{probe}\",condition=\"{}\"}}",
                answer.condition.as_str()
            ),
            "1",
        ));
    }
    expected.push((
        format!("tower_health_status{{status=\"{}\"}}", now.status_metric),
        "1",
    ));
    expected.push(("tower_health_draining".into(), flag(now.draining)));
    expected.push(("tower_health_held".into(), flag(now.held)));
    expected.push(("tower_health_started".into(), flag(now.started)));
    for (verdict, stale) in ["readiness", "health", "pool"].into_iter().zip(now.stale) {
        expected.push((
            format!("tower_health_verdict_stale{{verdict=\"{verdict}\"}}"),
            flag(stale),
        ));
    }
    if let Some(up) = now.database_up {
        expected.push((
            "tower_health_database_up{database=\"default\",critical=\"true\"}".into(),
            flag(up),
        ));
    }
    if let Some(status) = now.component_status {
        expected.push((
            format!(
                "tower_health_component_status{{component=\"{COMPONENT}\",status=\"{}\"}}",
                status.as_str()
            ),
            "1",
        ));
    }
    // Each series and its value (`1` or `0` for a flag).
    let samples: std::collections::HashMap<&str, &str> = metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .collect();
    expected
        .into_iter()
        .filter_map(|(series, value)| {
            let said = samples.get(series.as_str()).copied();
            (said != Some(value)).then(|| {
                (
                    format!("metric {series}"),
                    value.to_owned(),
                    said.unwrap_or("absent").to_owned(),
                )
            })
        })
        .collect()
}

/// Whether the agent `said` what the model `expected`: the same line, or, with load feedback
/// on, the same `up ready` at a weight the load lowered, never below the floor (rule 18: load
/// alone never changes a word, never takes the weight below 10% unless the state's own
/// weight is lower).
fn agent_agrees(expected: &str, said: &str, load_feedback: bool) -> bool {
    let weight = |line: &str| -> Option<u8> {
        line.strip_prefix("up ready ")?
            .strip_suffix("%\n")?
            .parse()
            .ok()
    };
    expected == said
        || load_feedback
            && match (weight(expected), weight(said)) {
                (Some(ceiling), Some(weight)) => {
                    weight <= ceiling && weight >= ceiling.min(crate::dialect::haproxy::LOAD_FLOOR)
                }
                _ => false,
            }
}
