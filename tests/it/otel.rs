//! The OpenTelemetry instruments over a real PostgreSQL and a refused port, collected
//! through the SDK's in-memory exporter: at every moment they say what the Prometheus
//! exposition of the same monitor says, series for series (name, labels, value), and
//! collecting them sends the database no query and runs no check.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use support::{PgProxy, first_rounds, pg_addr, postgres, refused_addr};
use tower_health::metrics::{HealthMetrics, OpenTelemetry};
use tower_health::view::View;
use tower_health::{HealthConfig, HealthHandle, HealthMonitor, Probe};

/// Samples by series (`name{labels}`, the labels sorted by name) and value.
type Samples = BTreeMap<String, f64>;

/// The application's side: an SDK provider whose collections land in memory.
struct Sdk {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Sdk {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        // Collections happen at `collect`: the periodic one is an hour away.
        let reader = PeriodicReader::builder(exporter.clone())
            .with_interval(Duration::from_secs(3600))
            .build();
        let provider = SdkMeterProvider::builder().with_reader(reader).build();
        Self { provider, exporter }
    }

    /// One collection, its series named as an OpenTelemetry-to-Prometheus pipeline names
    /// them: `_seconds` for the unit `s`, `_total` for a monotonic sum.
    fn collect(&self) -> Samples {
        self.exporter.reset();
        self.provider.force_flush().expect("a collection");
        let exported = self.exporter.get_finished_metrics().expect("the exports");
        let last = exported.last().expect("one export");
        let mut samples = Samples::new();
        for metric in last.scope_metrics().flat_map(|scope| scope.metrics()) {
            for (series, value) in otel_samples(metric) {
                assert!(samples.insert(series, value).is_none(), "one sample each");
            }
        }
        samples
    }
}

fn series(name: &str, mut labels: Vec<(String, String)>) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    labels.sort();
    let labels: Vec<_> = labels
        .iter()
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    format!("{name}{{{}}}", labels.join(","))
}

fn otel_samples(metric: &Metric) -> Vec<(String, f64)> {
    let unit = match metric.unit() {
        "s" => "_seconds",
        "" => "",
        other => panic!("{}: unit {other}", metric.name()),
    };
    let labels = |attributes: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
        attributes
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect::<Vec<_>>()
    };
    let gauge = format!("{}{unit}", metric.name());
    let counter = format!("{}{unit}_total", metric.name());
    match metric.data() {
        AggregatedMetrics::U64(MetricData::Gauge(data)) => data
            .data_points()
            .map(|point| {
                let name = series(&gauge, labels(&mut point.attributes()));
                (name, point.value() as f64)
            })
            .collect(),
        AggregatedMetrics::F64(MetricData::Gauge(data)) => data
            .data_points()
            .map(|point| {
                (
                    series(&gauge, labels(&mut point.attributes())),
                    point.value(),
                )
            })
            .collect(),
        AggregatedMetrics::U64(MetricData::Sum(data)) if data.is_monotonic() => data
            .data_points()
            .map(|point| {
                let name = series(&counter, labels(&mut point.attributes()));
                (name, point.value() as f64)
            })
            .collect(),
        other => panic!("{}: {other:?}", metric.name()),
    }
}

/// The exposition's samples, named as [`Sdk::collect`] names them.
fn exposition(metrics: &HealthMetrics) -> Samples {
    let text = String::from_utf8(metrics.exposition().to_vec()).expect("UTF-8");
    assert!(text.ends_with("# EOF\n"), "{text}");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.rsplit_once(' ').expect("a sample has a value");
            let value: f64 = value.parse().expect("a number");
            let Some((name, labels)) = name.split_once('{') else {
                return (name.to_owned(), value);
            };
            let labels = labels
                .trim_end_matches('}')
                .split(',')
                .map(|label| {
                    let (key, value) = label.split_once('=').expect("key=\"value\"");
                    (key.to_owned(), value.trim_matches('"').to_owned())
                })
                .collect();
            (series(name, labels), value)
        })
        .collect()
}

/// Whether two views answer alike from the same verdicts.
fn same(one: &View, other: &View) -> bool {
    Arc::ptr_eq(&one.readiness, &other.readiness)
        && Arc::ptr_eq(&one.health, &other.health)
        && Arc::ptr_eq(&one.pool, &other.pool)
        && one.draining == other.draining
        && one.held == other.held
}

/// An OpenTelemetry collection and the exposition, read between two equal views (a round
/// may publish in between: then again): they must be the same series with the same values.
fn both(sdk: &Sdk, prometheus: &HealthMetrics, health: &HealthHandle) -> Samples {
    for _ in 0..100 {
        let before = health.view();
        let collected = sdk.collect();
        let exposed = exposition(prometheus);
        if !same(&before, &health.view()) {
            continue;
        }
        assert_eq!(collected, exposed, "OpenTelemetry, then Prometheus");
        return collected;
    }
    panic!("the view kept changing under the collection");
}

#[tokio::test]
async fn the_instruments_say_what_the_exposition_says_and_check_nothing() {
    require_postgres!();
    // Every byte of the real database's check goes through this proxy, which counts the
    // queries it forwards; the other database's port refuses.
    let proxy = PgProxy::start(pg_addr()).await;
    let refused = format!(
        "postgres://postgres@{}/postgres?sslmode=disable&connect_timeout=2",
        refused_addr().await
    );
    // Rounds an hour apart: after the first ones, only collections happen.
    let hour = Duration::from_secs(3600);
    let config = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour)
        .database("default", postgres(&proxy.url()))
        .database("replica", postgres(&refused));
    let health = HealthMonitor::spawn(config).unwrap();
    let sdk = Sdk::new();
    OpenTelemetry::new(&health).register(&sdk.provider.meter("tower-health-tests"));
    let prometheus = HealthMetrics::new(&health);

    // Before the first round as well.
    both(&sdk, &prometheus, &health);
    first_rounds(&health).await;
    let first = both(&sdk, &prometheus, &health);
    let view = health.view();
    assert!(
        !view.answer(Probe::Ready).passing,
        "the replica is critical"
    );
    for (series, value) in [
        ("tower_health_probe_passing{probe=\"ready\"}", 0.0),
        ("tower_health_probe_passing{probe=\"live\"}", 1.0),
        (
            "tower_health_database_up{critical=\"true\",database=\"default\"}",
            1.0,
        ),
        (
            "tower_health_database_up{critical=\"true\",database=\"replica\"}",
            0.0,
        ),
        (
            "tower_health_database_check_status{database=\"replica\",status=\"not_ready\"}",
            1.0,
        ),
        (
            "tower_health_rounds_total{round=\"readiness\",source=\"computed\"}",
            1.0,
        ),
        ("tower_health_started", 1.0),
    ] {
        assert_eq!(first.get(series), Some(&value), "{series} in {first:#?}");
    }
    // Once or twice: the first health round may join the readiness round's check or start
    // its own.
    let failures = "tower_health_check_failures_total{check=\"replica\",kind=\"refused\"}";
    assert!(first[failures] >= 1.0, "{first:#?}");
    let checked_at = view.readiness.checked_at.expect("a readiness verdict");
    let unix = checked_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert_eq!(
        first["tower_health_verdict_timestamp_seconds{verdict=\"readiness\"}"],
        unix
    );

    // A hundred collections: no query, no check, nothing moves.
    let (stats, queries) = (health.stats(), proxy.queries());
    assert!(queries >= 1, "the proxy saw the first rounds' queries");
    for _ in 0..100 {
        assert_eq!(sdk.collect(), first);
    }
    assert_eq!(proxy.queries(), queries, "collections sent queries");
    assert_eq!(health.stats(), stats, "collections ran checks");

    // A fresh computation (`?nocache=true`) publishes; the instruments follow.
    health.refresh().await.expect("a fresh verdict");
    let refreshed = both(&sdk, &prometheus, &health);
    assert_eq!(refreshed["tower_health_nocache_computations_total"], 1.0);
    assert_eq!(
        refreshed[failures],
        first[failures] + 1.0,
        "the fresh computation checked the replica once"
    );

    // A hold, then a drain: neither runs a round, and both show.
    health.hold("maintenance");
    let held = both(&sdk, &prometheus, &health);
    assert_eq!(held["tower_health_held"], 1.0);
    let drain = health.drain().clone();
    drain.start();
    let draining = both(&sdk, &prometheus, &health);
    assert_eq!(draining["tower_health_draining"], 1.0);
    assert_eq!(
        draining["tower_health_probe_condition{condition=\"draining\",probe=\"ready\"}"],
        1.0
    );
}
