//! The metrics, with fake checks and rounds run by hand: the exact lines in each state, the
//! exposition read back and held to the view, and a scrape that renders nothing and checks
//! nothing while the view stands still.

use std::sync::Arc;
use std::time::Duration;

use http::{StatusCode, header};

use crate::component::ComponentSpec;
use crate::config::{HealthConfig, HealthGroup};
use crate::http::request::BodyMode;
use crate::metrics::HealthMetrics;
use crate::monitor::{HealthHandle, test_monitor as monitor, test_rounds as rounds};
use crate::test_helpers::{FakeCheck, FakeComponent, read};
use crate::verdict::{FleetGuard, Fraction, Member, Standing};
use crate::view::View;

use super::collector::SnapshotCollector;
use super::snapshot::Snapshot;

/// One database and one component.
fn config(check: FakeCheck) -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", check)
        .component(ComponentSpec::new(
            "cache",
            FakeComponent::new(FakeCheck::Ready),
        ))
        .group(
            HealthGroup::new("checkout")
                .member("database/default")
                .optional("component/cache"),
        )
}

/// The samples of an exposition (`name{labels} value`), in order; the values that change
/// from run to run (timestamps, durations) replaced by `T`.
fn samples(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            let volatile = ["_timestamp_seconds{", "_duration_seconds{"]
                .iter()
                .any(|name| series.contains(name));
            format!("{series} {}", if volatile { "T" } else { value })
        })
        .collect()
}

/// The samples of the family `name`.
fn family(text: &str, name: &str) -> Vec<String> {
    samples(text)
        .into_iter()
        .filter(|sample| {
            sample
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .collect()
}

/// The value of the one sample `series`.
fn value(text: &str, series: &str) -> String {
    let found: Vec<_> = samples(text)
        .into_iter()
        .filter_map(|sample| {
            let (name, value) = sample.rsplit_once(' ')?;
            (name == series).then(|| value.to_owned())
        })
        .collect();
    assert_eq!(found.len(), 1, "{series} in\n{text}");
    found[0].clone()
}

fn exposition(metrics: &HealthMetrics) -> String {
    String::from_utf8(metrics.exposition().to_vec()).expect("the exposition is UTF-8")
}

/// The exposition says what the view says: every probe's answer and condition, the
/// lifecycle, the health status and every database.
fn agrees_with_the_view(text: &str, view: &View) {
    let bit = |on: bool| if on { "1" } else { "0" };
    for answer in view.answers() {
        let probe = answer.probe.as_str();
        let passing = value(
            text,
            &format!("tower_health_probe_passing{{probe=\"{probe}\"}}"),
        );
        assert_eq!(passing, bit(answer.passing), "{answer:?}");
        let conditions = family(text, "tower_health_probe_condition");
        let current: Vec<_> = conditions
            .iter()
            .filter(|sample| sample.contains(&format!("probe=\"{probe}\"")))
            .filter(|sample| sample.ends_with(" 1"))
            .collect();
        let expected = format!(
            "tower_health_probe_condition{{probe=\"{probe}\",condition=\"{}\"}} 1",
            answer.condition
        );
        assert_eq!(current, [&expected], "{answer:?}");
    }
    for (name, on) in [
        ("tower_health_draining", view.draining),
        ("tower_health_held", view.held.is_some()),
        ("tower_health_started", view.started),
        ("tower_health_monitor_running", view.monitor_running),
    ] {
        assert_eq!(value(text, name), bit(on), "{name}");
    }
    for outcome in &view.readiness.databases {
        let up = format!(
            "tower_health_database_up{{database=\"{}\",critical=\"{}\"}}",
            outcome.name, outcome.critical
        );
        assert_eq!(value(text, &up), bit(outcome.passed()));
        let status = format!(
            "tower_health_database_check_status{{database=\"{}\",status=\"{}\"}}",
            outcome.name,
            outcome.status.database_word()
        );
        assert_eq!(value(text, &status), "1");
    }
}

fn check(metrics: &HealthMetrics, handle: &HealthHandle) -> String {
    let text = exposition(metrics);
    assert!(text.ends_with("# EOF\n"), "{text}");
    agrees_with_the_view(&text, &handle.view());
    text
}

/// A healthy monitor of one database and one component, after one round of each: every
/// line, the timestamps and durations replaced by `T`.
const HEALTHY: &str = r#"# HELP tower_health_probe_passing Whether the probe passes now (HTTP 200, gRPC SERVING)
# TYPE tower_health_probe_passing gauge
tower_health_probe_passing{probe="health"} 1
tower_health_probe_passing{probe="live"} 1
tower_health_probe_passing{probe="ready"} 1
tower_health_probe_passing{probe="startup"} 1
tower_health_probe_passing{probe="pool"} 1
tower_health_probe_passing{probe="ping"} 1
# HELP tower_health_probe_condition What decides the probe's answer: 1 for the current condition
# TYPE tower_health_probe_condition gauge
tower_health_probe_condition{probe="health",condition="verdict"} 1
tower_health_probe_condition{probe="health",condition="draining"} 0
tower_health_probe_condition{probe="health",condition="stale"} 0
tower_health_probe_condition{probe="health",condition="unavailable"} 0
tower_health_probe_condition{probe="health",condition="held"} 0
tower_health_probe_condition{probe="health",condition="starting"} 0
tower_health_probe_condition{probe="health",condition="returning"} 0
tower_health_probe_condition{probe="live",condition="verdict"} 1
tower_health_probe_condition{probe="live",condition="draining"} 0
tower_health_probe_condition{probe="live",condition="stale"} 0
tower_health_probe_condition{probe="live",condition="unavailable"} 0
tower_health_probe_condition{probe="live",condition="held"} 0
tower_health_probe_condition{probe="live",condition="starting"} 0
tower_health_probe_condition{probe="live",condition="returning"} 0
tower_health_probe_condition{probe="ready",condition="verdict"} 1
tower_health_probe_condition{probe="ready",condition="draining"} 0
tower_health_probe_condition{probe="ready",condition="stale"} 0
tower_health_probe_condition{probe="ready",condition="unavailable"} 0
tower_health_probe_condition{probe="ready",condition="held"} 0
tower_health_probe_condition{probe="ready",condition="starting"} 0
tower_health_probe_condition{probe="ready",condition="returning"} 0
tower_health_probe_condition{probe="startup",condition="verdict"} 1
tower_health_probe_condition{probe="startup",condition="draining"} 0
tower_health_probe_condition{probe="startup",condition="stale"} 0
tower_health_probe_condition{probe="startup",condition="unavailable"} 0
tower_health_probe_condition{probe="startup",condition="held"} 0
tower_health_probe_condition{probe="startup",condition="starting"} 0
tower_health_probe_condition{probe="startup",condition="returning"} 0
tower_health_probe_condition{probe="pool",condition="verdict"} 1
tower_health_probe_condition{probe="pool",condition="draining"} 0
tower_health_probe_condition{probe="pool",condition="stale"} 0
tower_health_probe_condition{probe="pool",condition="unavailable"} 0
tower_health_probe_condition{probe="pool",condition="held"} 0
tower_health_probe_condition{probe="pool",condition="starting"} 0
tower_health_probe_condition{probe="pool",condition="returning"} 0
tower_health_probe_condition{probe="ping",condition="verdict"} 1
tower_health_probe_condition{probe="ping",condition="draining"} 0
tower_health_probe_condition{probe="ping",condition="stale"} 0
tower_health_probe_condition{probe="ping",condition="unavailable"} 0
tower_health_probe_condition{probe="ping",condition="held"} 0
tower_health_probe_condition{probe="ping",condition="starting"} 0
tower_health_probe_condition{probe="ping",condition="returning"} 0
# HELP tower_health_status The health status: 1 for the current one
# TYPE tower_health_status gauge
tower_health_status{status="healthy"} 1
tower_health_status{status="degraded"} 0
tower_health_status{status="unhealthy"} 0
tower_health_status{status="error"} 0
tower_health_status{status="unavailable"} 0
# HELP tower_health_database_up Whether the database was ready in the last readiness round
# TYPE tower_health_database_up gauge
tower_health_database_up{database="default",critical="true"} 1
# HELP tower_health_database_check_status The database's check status in the last readiness round: 1 for the current one
# TYPE tower_health_database_check_status gauge
tower_health_database_check_status{database="default",status="ready"} 1
tower_health_database_check_status{database="default",status="not_ready"} 0
tower_health_database_check_status{database="default",status="timed_out"} 0
# HELP tower_health_component_status The component's status in the last health round: 1 for the current one
# TYPE tower_health_component_status gauge
tower_health_component_status{component="cache",status="unknown"} 0
tower_health_component_status{component="cache",status="healthy"} 1
tower_health_component_status{component="cache",status="degraded"} 0
tower_health_component_status{component="cache",status="unhealthy"} 0
# HELP tower_health_group_passing Whether the health group passes now (HTTP 200, gRPC SERVING)
# TYPE tower_health_group_passing gauge
tower_health_group_passing{group="checkout"} 1
# HELP tower_health_verdict_timestamp_seconds When the verdict was computed (Unix time); its age is time() minus this
# TYPE tower_health_verdict_timestamp_seconds gauge
# UNIT tower_health_verdict_timestamp_seconds seconds
tower_health_verdict_timestamp_seconds{verdict="health"} T
tower_health_verdict_timestamp_seconds{verdict="readiness"} T
tower_health_verdict_timestamp_seconds{verdict="pool"} T
# HELP tower_health_verdict_stale Whether the verdict is older than its staleness bound (the monitor is stuck)
# TYPE tower_health_verdict_stale gauge
tower_health_verdict_stale{verdict="health"} 0
tower_health_verdict_stale{verdict="readiness"} 0
tower_health_verdict_stale{verdict="pool"} 0
# HELP tower_health_round_duration_seconds How long the last round's checks took
# TYPE tower_health_round_duration_seconds gauge
# UNIT tower_health_round_duration_seconds seconds
tower_health_round_duration_seconds{round="readiness"} T
tower_health_round_duration_seconds{round="health"} T
# HELP tower_health_rounds Rounds completed: their checks run here (computed), or the fleet's entry served (shared)
# TYPE tower_health_rounds counter
tower_health_rounds_total{round="readiness",source="computed"} 1
tower_health_rounds_total{round="health",source="computed"} 1
tower_health_rounds_total{round="health",source="shared"} 0
# HELP tower_health_round_panics Rounds that panicked: reported as failed, and the next round run
# TYPE tower_health_round_panics counter
tower_health_round_panics_total{round="readiness"} 0
tower_health_round_panics_total{round="health"} 0
# HELP tower_health_shared_cache_errors Health rounds in which Redis failed or the shared entry could not be served
# TYPE tower_health_shared_cache_errors counter
tower_health_shared_cache_errors_total 0
# HELP tower_health_check_failures Checks that finished with an error, by category (each check once, however many rounds waited for it)
# TYPE tower_health_check_failures counter
# HELP tower_health_check_flaps Times the check went from passing to failing or back over the last ten minutes (counted by the minute)
# TYPE tower_health_check_flaps gauge
tower_health_check_flaps{check="default"} 0
tower_health_check_flaps{check="cache"} 0
# HELP tower_health_transitions Transitions of readiness and of the health status (each one logged), the first verdict included
# TYPE tower_health_transitions counter
tower_health_transitions_total{question="health"} 1
tower_health_transitions_total{question="readiness"} 1
# HELP tower_health_nocache_computations Fresh computations run for ?nocache=true (concurrent bypasses share one)
# TYPE tower_health_nocache_computations counter
tower_health_nocache_computations_total 0
# HELP tower_health_draining Whether the drain has started
# TYPE tower_health_draining gauge
tower_health_draining 0
# HELP tower_health_drain_phase The drain's phase: 1 for the current one
# TYPE tower_health_drain_phase gauge
tower_health_drain_phase{phase="serving"} 1
tower_health_drain_phase{phase="delay"} 0
tower_health_drain_phase{phase="close_window"} 0
tower_health_drain_phase{phase="waiting"} 0
tower_health_drain_phase{phase="timed_out"} 0
tower_health_drain_phase{phase="drained"} 0
# HELP tower_health_drain_timestamp_seconds When the drain started, when its delay and close window end, when its timeout falls, when it ended (Unix time)
# TYPE tower_health_drain_timestamp_seconds gauge
# UNIT tower_health_drain_timestamp_seconds seconds
# HELP tower_health_in_flight Requests in flight, the long-lived connections included (what a drain waits for)
# TYPE tower_health_in_flight gauge
tower_health_in_flight 0
# HELP tower_health_long_lived_open Long-lived connections open (WebSockets, event streams, gRPC streams), by the name they were registered with
# TYPE tower_health_long_lived_open gauge
# HELP tower_health_held Whether an operator's hold keeps readiness failing
# TYPE tower_health_held gauge
tower_health_held 0
# HELP tower_health_fleet_guard_kept Whether the fleet guard keeps this process in rotation (readiness passes, degraded, while a dependency the fleet shares fails)
# TYPE tower_health_fleet_guard_kept gauge
tower_health_fleet_guard_kept 0
# HELP tower_health_started Whether the process has finished starting (the startup probe passes)
# TYPE tower_health_started gauge
tower_health_started 1
# HELP tower_health_monitor_running Whether the background monitor is running
# TYPE tower_health_monitor_running gauge
tower_health_monitor_running 1
# EOF
"#;

#[tokio::test]
async fn healthy_every_line() {
    let handle = monitor(config(FakeCheck::Ready));
    rounds(&handle).await;
    let metrics = HealthMetrics::new(&handle);
    let text = check(&metrics, &handle);
    let normalized: Vec<_> = text
        .lines()
        .map(|line| match line.rsplit_once(' ') {
            Some((series, _))
                if !line.starts_with('#')
                    && (series.contains("_timestamp_seconds{")
                        || series.contains("_duration_seconds{")) =>
            {
                format!("{series} T")
            }
            _ => line.to_owned(),
        })
        .collect();
    let normalized = normalized.join("\n") + "\n";
    assert!(normalized == HEALTHY, "{normalized}");
}

#[tokio::test]
async fn refused_then_held_then_draining() {
    let handle = monitor(config(FakeCheck::Refused));
    let metrics = HealthMetrics::new(&handle);
    let before = check(&metrics, &handle);
    assert_eq!(
        family(&before, "tower_health_probe_passing"),
        [
            "tower_health_probe_passing{probe=\"health\"} 0",
            "tower_health_probe_passing{probe=\"live\"} 1",
            "tower_health_probe_passing{probe=\"ready\"} 0",
            "tower_health_probe_passing{probe=\"startup\"} 0",
            "tower_health_probe_passing{probe=\"pool\"} 0",
            "tower_health_probe_passing{probe=\"ping\"} 1",
        ]
    );
    // No verdict yet: no timestamps, no databases.
    assert!(family(&before, "tower_health_verdict_timestamp_seconds").is_empty());
    assert!(family(&before, "tower_health_database_up").is_empty());

    rounds(&handle).await;
    let refused = check(&metrics, &handle);
    assert_eq!(
        family(&refused, "tower_health_database_up"),
        ["tower_health_database_up{database=\"default\",critical=\"true\"} 0"]
    );
    assert_eq!(
        family(&refused, "tower_health_database_check_status"),
        [
            "tower_health_database_check_status{database=\"default\",status=\"ready\"} 0",
            "tower_health_database_check_status{database=\"default\",status=\"not_ready\"} 1",
            "tower_health_database_check_status{database=\"default\",status=\"timed_out\"} 0",
        ]
    );
    assert_eq!(
        value(&refused, "tower_health_status{status=\"unhealthy\"}"),
        "1"
    );
    // Two rounds, two checks, two failures: each finished check once.
    assert_eq!(handle.stats().checks_started, 2);
    assert_eq!(
        family(&refused, "tower_health_check_failures_total"),
        ["tower_health_check_failures_total{check=\"default\",kind=\"refused\"} 2"]
    );
    assert_eq!(
        family(&refused, "tower_health_transitions_total"),
        [
            "tower_health_transitions_total{question=\"health\"} 1",
            "tower_health_transitions_total{question=\"readiness\"} 1",
        ]
    );

    handle.hold("maintenance");
    let held = check(&metrics, &handle);
    assert_eq!(value(&held, "tower_health_held"), "1");
    assert_eq!(
        value(
            &held,
            "tower_health_probe_condition{probe=\"ready\",condition=\"held\"}"
        ),
        "1"
    );
    handle.release();
    let released = check(&metrics, &handle);
    assert_eq!(value(&released, "tower_health_held"), "0");

    // The drain starts without a publication: the exposition follows at once.
    let drain = handle.drain().clone();
    check(&metrics, &handle);
    drain.start();
    let draining = check(&metrics, &handle);
    assert_eq!(value(&draining, "tower_health_draining"), "1");
    for probe in ["health", "ready", "pool"] {
        let series =
            format!("tower_health_probe_condition{{probe=\"{probe}\",condition=\"draining\"}}");
        assert_eq!(value(&draining, &series), "1", "{probe}");
    }
    // The health status stays the verdict's.
    assert_eq!(
        value(&draining, "tower_health_status{status=\"unhealthy\"}"),
        "1"
    );

    handle.state().set_monitor_running(false);
    let stopped = check(&metrics, &handle);
    assert_eq!(value(&stopped, "tower_health_monitor_running"), "0");
}

/// The exposition of `snapshot`, as [`HealthMetrics`] renders one.
fn exposition_of(snapshot: Snapshot) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(SnapshotCollector(Arc::new(snapshot))));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

/// Every line of the family `name`, its descriptors included.
fn lines_of(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.split([' ', '{']).any(|word| word == name))
        .map(str::to_owned)
        .collect()
}

/// Issue 29 D5: `tower_health_fleet_guard_kept` is 1 while the fleet guard keeps the process
/// in rotation (readiness passes, `degraded`), 0 when the guard lets it go, and 0 once a
/// drain takes it out whatever the guard concluded. The guard's conclusion is applied to the
/// refused round's verdict as the monitor applies it (`with_fleet_guard`); readiness's
/// condition is the verdict's in both, as it is in a monitor's view.
#[tokio::test]
async fn the_fleet_guard_s_keep_every_line() {
    let handle = monitor(config(FakeCheck::Refused));
    rounds(&handle).await;
    let members: Vec<Member> = ["a", "b"]
        .into_iter()
        .map(|id| Member {
            id: id.into(),
            standing: Standing::Shared {
                cause: "database `default`".into(),
            },
        })
        .collect();
    let guarded = |own: &str| {
        let guard = FleetGuard::decide(
            own,
            "database `default`".into(),
            &members,
            Fraction::new(0.5).unwrap(),
        );
        let mut snapshot = Snapshot::read(&handle);
        let readiness = (*snapshot.view.readiness).clone().with_fleet_guard(guard);
        snapshot.view.readiness = Arc::new(readiness);
        snapshot
    };
    let family = |kept: &str| {
        [
            "# HELP tower_health_fleet_guard_kept Whether the fleet guard keeps this process in rotation (readiness passes, degraded, while a dependency the fleet shares fails)".to_owned(),
            "# TYPE tower_health_fleet_guard_kept gauge".to_owned(),
            format!("tower_health_fleet_guard_kept {kept}"),
        ]
    };
    let name = "tower_health_fleet_guard_kept";

    let kept = guarded("a");
    assert_eq!(kept.view.readiness.status(), "degraded");
    assert_eq!(lines_of(&exposition_of(kept), name), family("1"));
    let let_go = guarded("b");
    assert_eq!(let_go.view.readiness.status(), "not_ready");
    assert_eq!(lines_of(&exposition_of(let_go), name), family("0"));
    // Without the guard (the monitor's own view): 0.
    assert_eq!(
        lines_of(&exposition(&HealthMetrics::new(&handle)), name),
        family("0")
    );

    let drain = handle.drain().clone();
    drain.start();
    let draining = guarded("a");
    assert!(draining.view.readiness.is_kept_by_fleet_guard());
    assert_eq!(lines_of(&exposition_of(draining), name), family("0"));
}

#[tokio::test]
async fn a_check_two_rounds_wait_for_fails_once() {
    let handle = monitor(config(FakeCheck::Panics));
    let metrics = HealthMetrics::new(&handle);
    // Both rounds claim before either waits: they share the one check.
    crate::util::join(handle.state().readiness_round(), async {
        handle.state().health_round().await;
    })
    .await;
    assert_eq!(handle.stats().checks_started, 1);
    let text = check(&metrics, &handle);
    assert_eq!(
        family(&text, "tower_health_check_failures_total"),
        ["tower_health_check_failures_total{check=\"default\",kind=\"panicked\"} 1"]
    );
}

#[tokio::test]
async fn a_stale_verdict_shows_without_a_round() {
    let config = HealthConfig::new()
        .readiness_interval(Duration::from_millis(1))
        .health_interval(Duration::from_millis(1))
        .readiness_timeout(Duration::from_millis(200))
        .database("default", FakeCheck::Ready);
    let handle = monitor(config);
    rounds(&handle).await;
    let metrics = HealthMetrics::new(&handle);
    let fresh = check(&metrics, &handle);
    assert_eq!(
        family(&fresh, "tower_health_verdict_stale"),
        [
            "tower_health_verdict_stale{verdict=\"health\"} 0",
            "tower_health_verdict_stale{verdict=\"readiness\"} 0",
            "tower_health_verdict_stale{verdict=\"pool\"} 0",
        ]
    );
    // No round runs from here on, as with a stuck monitor.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let renders = metrics.renders();
    let stale = check(&metrics, &handle);
    assert_eq!(metrics.renders(), renders + 1, "rendered again once stale");
    assert_eq!(
        family(&stale, "tower_health_verdict_stale"),
        [
            "tower_health_verdict_stale{verdict=\"health\"} 1",
            "tower_health_verdict_stale{verdict=\"readiness\"} 1",
            "tower_health_verdict_stale{verdict=\"pool\"} 1",
        ]
    );
    assert_eq!(
        value(
            &stale,
            "tower_health_probe_condition{probe=\"ready\",condition=\"stale\"}"
        ),
        "1"
    );
    assert_eq!(
        value(&stale, "tower_health_status{status=\"unavailable\"}"),
        "1"
    );
    // Nothing left to go stale: the rendering stands.
    exposition(&metrics);
    assert_eq!(metrics.renders(), renders + 1);
}

#[tokio::test]
async fn a_thousand_scrapes_render_once_and_check_nothing() {
    let handle = monitor(config(FakeCheck::Ready));
    rounds(&handle).await;
    let metrics = HealthMetrics::new(&handle);
    rounds(&handle).await;
    let (stats, renders) = (handle.stats(), metrics.renders());
    let first = metrics.exposition();
    for _ in 0..1_000 {
        let again = metrics.exposition();
        assert_eq!(again.as_ptr(), first.as_ptr(), "the same rendering");
    }
    assert_eq!(
        metrics.renders(),
        renders + 1,
        "one rendering for the round"
    );
    assert_eq!(handle.stats(), stats, "a scrape ran a check");
    let text = String::from_utf8(first.to_vec()).unwrap();
    assert_eq!(
        value(
            &text,
            "tower_health_rounds_total{round=\"readiness\",source=\"computed\"}"
        ),
        "2"
    );
}

#[tokio::test]
async fn a_registry_reads_the_view_at_its_scrape() {
    let handle = monitor(config(FakeCheck::Ready));
    let metrics = HealthMetrics::new(&handle);
    let mut registry = prometheus_client::registry::Registry::with_prefix("app");
    metrics.register(&mut registry);
    let scrape = |registry: &prometheus_client::registry::Registry| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    };
    let before = scrape(&registry);
    assert_eq!(value(&before, "app_tower_health_started"), "0");
    rounds(&handle).await;
    let stats = handle.stats();
    let after = scrape(&registry);
    assert_eq!(value(&after, "app_tower_health_started"), "1");
    assert_eq!(
        value(&after, "app_tower_health_probe_passing{probe=\"ready\"}"),
        "1"
    );
    assert_eq!(handle.stats(), stats, "a scrape ran a check");
    // The same metrics as the exposition, under the registry's prefix.
    let own: Vec<_> = samples(&exposition(&metrics))
        .into_iter()
        .map(|sample| format!("app_{sample}"))
        .collect();
    assert_eq!(samples(&after), own);
}

#[tokio::test]
async fn the_response_to_a_scrape() {
    let handle = monitor(config(FakeCheck::Ready));
    rounds(&handle).await;
    let metrics = HealthMetrics::new(&handle);
    let (status, headers, body) = read(metrics.response(BodyMode::Full)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], metrics.content_type());
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    assert_eq!(body.as_bytes(), &metrics.exposition()[..]);
    let (status, headers, body) = read(metrics.response(BodyMode::HeadOnly)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers[header::CONTENT_LENGTH],
        metrics.exposition().len().to_string()
    );
    assert!(body.is_empty());
}

/// Issue 36 B: a drain an operator can watch. Its phase with its times, the requests in
/// flight and the long-lived connections by name, each rendered again as it moves without a
/// publication; a name whose connections have closed stays, at zero.
#[tokio::test(start_paused = true)]
async fn a_drain_s_phases_times_and_connections() {
    let drain_config = crate::DrainConfig::new()
        .delay(Duration::from_secs(5))
        .close_window(Duration::from_secs(4))
        .timeout(Duration::from_secs(20));
    let handle = monitor(config(FakeCheck::Ready).drain(drain_config));
    rounds(&handle).await;
    let metrics = HealthMetrics::new(&handle);
    let drain = handle.drain().clone();
    let chat = [drain.long_lived("/chat"), drain.long_lived("/chat")];
    let events = drain.long_lived("/events");
    let request = drain.enter();
    let serving = check(&metrics, &handle);
    assert_eq!(
        value(&serving, "tower_health_drain_phase{phase=\"serving\"}"),
        "1"
    );
    assert!(family(&serving, "tower_health_drain_timestamp_seconds").is_empty());
    assert_eq!(value(&serving, "tower_health_in_flight"), "4");
    assert_eq!(
        family(&serving, "tower_health_long_lived_open"),
        [
            "tower_health_long_lived_open{name=\"/chat\"} 2",
            "tower_health_long_lived_open{name=\"/events\"} 1",
        ]
    );

    drain.start();
    let delay = check(&metrics, &handle);
    let phase = |text: &str| {
        family(text, "tower_health_drain_phase")
            .into_iter()
            .find(|line| line.ends_with(" 1"))
            .unwrap()
    };
    assert_eq!(phase(&delay), "tower_health_drain_phase{phase=\"delay\"} 1");
    let times: Vec<f64> = delay
        .lines()
        .filter(|line| line.starts_with("tower_health_drain_timestamp_seconds{"))
        .map(|line| line.rsplit_once(' ').unwrap().1.parse().unwrap())
        .collect();
    assert_eq!(
        times.len(),
        4,
        "started, delay_over, close_window_over, timeout"
    );
    let after_start: Vec<f64> = times.iter().map(|at| at - times[0]).collect();
    let rounded: Vec<i64> = after_start.iter().map(|secs| secs.round() as i64).collect();
    assert_eq!(rounded, [0, 5, 9, 20]);

    tokio::time::sleep(Duration::from_secs(6)).await;
    let window = check(&metrics, &handle);
    assert_eq!(
        phase(&window),
        "tower_health_drain_phase{phase=\"close_window\"} 1"
    );
    drop(chat);
    let fewer = check(&metrics, &handle);
    assert_eq!(value(&fewer, "tower_health_in_flight"), "2");
    assert_eq!(
        family(&fewer, "tower_health_long_lived_open"),
        [
            "tower_health_long_lived_open{name=\"/chat\"} 0",
            "tower_health_long_lived_open{name=\"/events\"} 1",
        ]
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    let waiting = check(&metrics, &handle);
    assert_eq!(
        phase(&waiting),
        "tower_health_drain_phase{phase=\"waiting\"} 1"
    );

    drop((events, request));
    let drained = check(&metrics, &handle);
    assert_eq!(
        phase(&drained),
        "tower_health_drain_phase{phase=\"drained\"} 1"
    );
    assert_eq!(
        value(
            &drained,
            "tower_health_drain_timestamp_seconds{event=\"ended\"}"
        ),
        "T"
    );
    assert_eq!(value(&drained, "tower_health_in_flight"), "0");
    // Nothing moves any more: the rendering stands.
    let renders = metrics.renders();
    check(&metrics, &handle);
    assert_eq!(metrics.renders(), renders);
}

#[tokio::test(start_paused = true)]
async fn a_drain_the_timeout_ends_reads_timed_out() {
    let drain_config = crate::DrainConfig::new()
        .delay(Duration::from_secs(1))
        .timeout(Duration::from_secs(3));
    let handle = monitor(config(FakeCheck::Ready).drain(drain_config));
    let metrics = HealthMetrics::new(&handle);
    let _stays = handle.drain().long_lived("/chat");
    handle.drain().start();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let text = check(&metrics, &handle);
    assert_eq!(
        value(&text, "tower_health_drain_phase{phase=\"timed_out\"}"),
        "1"
    );
    assert_eq!(
        value(&text, "tower_health_long_lived_open{name=\"/chat\"}"),
        "1"
    );
}
