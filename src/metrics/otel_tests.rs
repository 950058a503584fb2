//! The OpenTelemetry instruments, collected through the SDK's in-memory exporter, with fake
//! checks and rounds run by hand: every instrument's name, description, unit and kind; the
//! series of a healthy monitor; a drain that shows without a round; collections that read the
//! view once per change and run no check; and, with the `metrics` feature, the same series as
//! the Prometheus exposition in every state.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, PeriodicReader, SdkMeterProvider, Temporality,
};

use super::families::{FAMILIES, Series};
use crate::component::ComponentSpec;
use crate::config::{HealthConfig, HealthGroup};
use crate::metrics::OpenTelemetry;
use crate::monitor::{HealthHandle, test_monitor as monitor, test_rounds as rounds};
use crate::test_helpers::{FakeCheck, FakeComponent};

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

/// An SDK provider whose collections land in memory, the instruments of `handle` registered
/// on its meter.
struct Sdk {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
    metrics: OpenTelemetry,
}

impl Sdk {
    fn new(handle: &HealthHandle) -> Self {
        let exporter = InMemoryMetricExporter::default();
        // Collections happen at `collect`: the periodic one is an hour away.
        let reader = PeriodicReader::builder(exporter.clone())
            .with_interval(Duration::from_secs(3600))
            .build();
        let provider = SdkMeterProvider::builder().with_reader(reader).build();
        let metrics = OpenTelemetry::new(handle);
        metrics.register(&provider.meter("tower-health-tests"));
        Self {
            provider,
            exporter,
            metrics,
        }
    }

    /// One collection, and what it exported.
    fn collect_with(&self, f: impl FnOnce(&[&Metric])) {
        self.exporter.reset();
        self.provider.force_flush().expect("a collection");
        let exported = self.exporter.get_finished_metrics().expect("the exports");
        let last = exported.last().expect("one export");
        let metrics: Vec<_> = last
            .scope_metrics()
            .flat_map(|scope| scope.metrics())
            .collect();
        f(&metrics);
    }

    /// One collection's series as Prometheus names them (the family's name, `_seconds` for
    /// the unit `s`, `_total` for a counter, the labels sorted), each with its value; the
    /// values that change from run to run (timestamps, durations) replaced by `T`.
    fn collect(&self) -> BTreeMap<String, String> {
        let mut samples = BTreeMap::new();
        self.collect_with(|metrics| {
            for metric in metrics {
                for (series, value) in prometheus_samples(metric) {
                    let volatile = metric.unit() == "s";
                    let value = if volatile { "T".to_owned() } else { value };
                    assert!(samples.insert(series, value).is_none(), "one sample each");
                }
            }
        });
        samples
    }
}

/// `metric`'s data points as Prometheus samples: `name{labels}` (labels sorted) and the value.
fn prometheus_samples(metric: &Metric) -> Vec<(String, String)> {
    let mut name = metric.name().to_owned();
    if metric.unit() == "s" {
        name.push_str("_seconds");
    }
    let series = |attributes: Vec<(String, String)>| {
        let mut attributes = attributes;
        attributes.sort();
        let labels: Vec<_> = attributes
            .iter()
            .map(|(key, value)| format!("{key}=\"{value}\""))
            .collect();
        if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        }
    };
    let attributes = |each: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
        each.map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect::<Vec<_>>()
    };
    match metric.data() {
        AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge
            .data_points()
            .map(|point| {
                let labels = series(attributes(&mut point.attributes()));
                (format!("{name}{labels}"), point.value().to_string())
            })
            .collect(),
        AggregatedMetrics::F64(MetricData::Gauge(gauge)) => gauge
            .data_points()
            .map(|point| {
                let labels = series(attributes(&mut point.attributes()));
                (format!("{name}{labels}"), point.value().to_string())
            })
            .collect(),
        AggregatedMetrics::U64(MetricData::Sum(sum)) => {
            assert!(sum.is_monotonic(), "{}", metric.name());
            assert_eq!(sum.temporality(), Temporality::Cumulative);
            sum.data_points()
                .map(|point| {
                    let labels = series(attributes(&mut point.attributes()));
                    (format!("{name}_total{labels}"), point.value().to_string())
                })
                .collect()
        }
        other => panic!("{}: unexpected data {other:?}", metric.name()),
    }
}

#[tokio::test]
async fn every_family_is_one_instrument_with_its_name_help_and_unit() {
    // Refused, so that a check has failed, a connection registered and the drain started:
    // an instrument with no series is not exported.
    let handle = monitor(config(FakeCheck::Refused));
    rounds(&handle).await;
    let _connection = handle.drain().long_lived("/chat");
    handle.drain().start();
    let sdk = Sdk::new(&handle);
    sdk.collect_with(|metrics| {
        let mut names: Vec<_> = metrics.iter().map(|metric| metric.name()).collect();
        names.sort_unstable();
        let mut families: Vec<_> = FAMILIES.iter().map(|family| family.name).collect();
        families.sort_unstable();
        assert_eq!(names, families, "one instrument per family");
        for family in &FAMILIES {
            let metric = metrics.iter().find(|metric| metric.name() == family.name);
            let metric = metric.expect("the family's instrument");
            assert_eq!(metric.description(), family.help, "{}", family.name);
            let (unit, kind) = match (family.series, metric.data()) {
                (Series::Flags(_), AggregatedMetrics::U64(MetricData::Gauge(_))) => ("", "flags"),
                (Series::Number(_), AggregatedMetrics::U64(MetricData::Gauge(_))) => ("", "number"),
                (Series::Seconds(_), AggregatedMetrics::F64(MetricData::Gauge(_))) => {
                    ("s", "seconds")
                }
                (Series::Counts(_), AggregatedMetrics::U64(MetricData::Sum(sum))) => {
                    assert!(sum.is_monotonic());
                    ("", "counts")
                }
                (_, data) => panic!("{}: {data:?}", family.name),
            };
            assert_eq!(metric.unit(), unit, "{} ({kind})", family.name);
        }
    });
}

/// A healthy monitor of one database and one component, after one round of each: every
/// series, as Prometheus names them, the timestamps and durations replaced by `T`.
const HEALTHY: &[(&str, &str)] = &[
    ("tower_health_check_flaps{check=\"cache\"}", "0"),
    ("tower_health_check_flaps{check=\"default\"}", "0"),
    (
        "tower_health_component_status{component=\"cache\",status=\"degraded\"}",
        "0",
    ),
    (
        "tower_health_component_status{component=\"cache\",status=\"healthy\"}",
        "1",
    ),
    (
        "tower_health_component_status{component=\"cache\",status=\"unhealthy\"}",
        "0",
    ),
    (
        "tower_health_component_status{component=\"cache\",status=\"unknown\"}",
        "0",
    ),
    (
        "tower_health_database_check_status{database=\"default\",status=\"not_ready\"}",
        "0",
    ),
    (
        "tower_health_database_check_status{database=\"default\",status=\"ready\"}",
        "1",
    ),
    (
        "tower_health_database_check_status{database=\"default\",status=\"timed_out\"}",
        "0",
    ),
    (
        "tower_health_database_up{critical=\"true\",database=\"default\"}",
        "1",
    ),
    ("tower_health_drain_phase{phase=\"close_window\"}", "0"),
    ("tower_health_drain_phase{phase=\"delay\"}", "0"),
    ("tower_health_drain_phase{phase=\"drained\"}", "0"),
    ("tower_health_drain_phase{phase=\"serving\"}", "1"),
    ("tower_health_drain_phase{phase=\"timed_out\"}", "0"),
    ("tower_health_drain_phase{phase=\"waiting\"}", "0"),
    ("tower_health_draining", "0"),
    ("tower_health_fleet_guard_kept", "0"),
    ("tower_health_group_passing{group=\"checkout\"}", "1"),
    ("tower_health_held", "0"),
    ("tower_health_in_flight", "0"),
    ("tower_health_monitor_running", "1"),
    ("tower_health_nocache_computations_total", "0"),
    ("tower_health_probe_passing{probe=\"health\"}", "1"),
    ("tower_health_probe_passing{probe=\"live\"}", "1"),
    ("tower_health_probe_passing{probe=\"ping\"}", "1"),
    ("tower_health_probe_passing{probe=\"pool\"}", "1"),
    ("tower_health_probe_passing{probe=\"ready\"}", "1"),
    ("tower_health_probe_passing{probe=\"startup\"}", "1"),
    ("tower_health_round_duration_seconds{round=\"health\"}", "T"),
    (
        "tower_health_round_duration_seconds{round=\"readiness\"}",
        "T",
    ),
    ("tower_health_round_panics_total{round=\"health\"}", "0"),
    ("tower_health_round_panics_total{round=\"readiness\"}", "0"),
    (
        "tower_health_rounds_total{round=\"health\",source=\"computed\"}",
        "1",
    ),
    (
        "tower_health_rounds_total{round=\"health\",source=\"shared\"}",
        "0",
    ),
    (
        "tower_health_rounds_total{round=\"readiness\",source=\"computed\"}",
        "1",
    ),
    ("tower_health_shared_cache_errors_total", "0"),
    ("tower_health_started", "1"),
    ("tower_health_status{status=\"degraded\"}", "0"),
    ("tower_health_status{status=\"error\"}", "0"),
    ("tower_health_status{status=\"healthy\"}", "1"),
    ("tower_health_status{status=\"unavailable\"}", "0"),
    ("tower_health_status{status=\"unhealthy\"}", "0"),
    ("tower_health_transitions_total{question=\"health\"}", "1"),
    (
        "tower_health_transitions_total{question=\"readiness\"}",
        "1",
    ),
    ("tower_health_verdict_stale{verdict=\"health\"}", "0"),
    ("tower_health_verdict_stale{verdict=\"pool\"}", "0"),
    ("tower_health_verdict_stale{verdict=\"readiness\"}", "0"),
    (
        "tower_health_verdict_timestamp_seconds{verdict=\"health\"}",
        "T",
    ),
    (
        "tower_health_verdict_timestamp_seconds{verdict=\"pool\"}",
        "T",
    ),
    (
        "tower_health_verdict_timestamp_seconds{verdict=\"readiness\"}",
        "T",
    ),
];

#[tokio::test]
async fn healthy_every_series() {
    let handle = monitor(config(FakeCheck::Ready));
    rounds(&handle).await;
    let sdk = Sdk::new(&handle);
    let samples = sdk.collect();
    let conditions: Vec<_> = samples
        .iter()
        .filter(|(series, _)| series.starts_with("tower_health_probe_condition{"))
        .filter(|(_, value)| *value == "1")
        .map(|(series, _)| series.as_str())
        .collect();
    // Six probes, each decided by its verdict (the 30 other series are 0).
    assert_eq!(conditions.len(), 6, "{conditions:?}");
    assert!(
        conditions
            .iter()
            .all(|series| series.contains("condition=\"verdict\""))
    );
    let rest: Vec<_> = samples
        .iter()
        .filter(|(series, _)| !series.starts_with("tower_health_probe_condition{"))
        .map(|(series, value)| (series.as_str(), value.as_str()))
        .collect();
    assert_eq!(rest, HEALTHY);
}

#[tokio::test]
async fn a_refusal_a_hold_and_a_drain_show_at_the_next_collection() {
    let handle = monitor(config(FakeCheck::Refused));
    let sdk = Sdk::new(&handle);
    let before = sdk.collect();
    assert_eq!(before["tower_health_started"], "0");
    // No verdict yet: no timestamps, no databases.
    assert!(
        !before
            .keys()
            .any(|series| series.contains("_timestamp_seconds"))
    );
    assert!(!before.keys().any(|series| series.contains("database_up")));

    rounds(&handle).await;
    let refused = sdk.collect();
    assert_eq!(
        refused["tower_health_database_up{critical=\"true\",database=\"default\"}"],
        "0"
    );
    assert_eq!(
        refused["tower_health_check_failures_total{check=\"default\",kind=\"refused\"}"],
        "2"
    );
    assert_eq!(refused["tower_health_status{status=\"unhealthy\"}"], "1");

    handle.hold("maintenance");
    let held = sdk.collect();
    assert_eq!(held["tower_health_held"], "1");
    assert_eq!(
        held["tower_health_probe_condition{condition=\"held\",probe=\"ready\"}"],
        "1"
    );
    handle.release();

    // The drain starts without a publication: the next collection shows it.
    let drain = handle.drain().clone();
    assert_eq!(sdk.collect()["tower_health_draining"], "0");
    drain.start();
    let draining = sdk.collect();
    assert_eq!(draining["tower_health_draining"], "1");
    for probe in ["health", "ready", "pool"] {
        let series =
            format!("tower_health_probe_condition{{condition=\"draining\",probe=\"{probe}\"}}");
        assert_eq!(draining[&series], "1", "{probe}");
    }
}

#[tokio::test]
async fn a_hundred_collections_read_once_and_check_nothing() {
    let handle = monitor(config(FakeCheck::Ready));
    rounds(&handle).await;
    let sdk = Sdk::new(&handle);
    let (stats, reads) = (handle.stats(), sdk.metrics.reads());
    let first = sdk.collect();
    for _ in 0..100 {
        assert_eq!(sdk.collect(), first);
    }
    assert_eq!(
        sdk.metrics.reads(),
        reads,
        "the snapshot `new` read is current"
    );
    assert_eq!(handle.stats(), stats, "a collection ran a check");

    // A round publishes: the next collection reads the view once, for all its instruments.
    rounds(&handle).await;
    let stats = handle.stats();
    let after = sdk.collect();
    assert_eq!(sdk.metrics.reads(), reads + 1);
    assert_eq!(handle.stats(), stats, "a collection ran a check");
    assert_eq!(
        after["tower_health_rounds_total{round=\"readiness\",source=\"computed\"}"],
        "2"
    );
}

/// With the Prometheus exporter beside it: the same series, by name, label and value, in
/// every state.
#[cfg(feature = "metrics")]
#[tokio::test]
async fn the_same_series_as_the_exposition() {
    use crate::metrics::HealthMetrics;

    /// The exposition's samples, their labels sorted, `T` for what changes from run to run.
    fn exposition(metrics: &HealthMetrics) -> BTreeMap<String, String> {
        let text = String::from_utf8(metrics.exposition().to_vec()).unwrap();
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').unwrap();
                let (name, labels) = match series.split_once('{') {
                    Some((name, labels)) => {
                        let mut labels: Vec<_> = labels.trim_end_matches('}').split(',').collect();
                        labels.sort_unstable();
                        (name, format!("{{{}}}", labels.join(",")))
                    }
                    None => (series, String::new()),
                };
                let volatile = name.ends_with("_seconds");
                let value = if volatile { "T" } else { value };
                (format!("{name}{labels}"), value.to_owned())
            })
            .collect()
    }

    let handle = monitor(config(FakeCheck::Refused));
    let (sdk, prometheus) = (Sdk::new(&handle), HealthMetrics::new(&handle));
    assert_eq!(
        sdk.collect(),
        exposition(&prometheus),
        "before the first round"
    );
    rounds(&handle).await;
    assert_eq!(sdk.collect(), exposition(&prometheus), "refused");
    handle.hold("maintenance");
    assert_eq!(sdk.collect(), exposition(&prometheus), "held");
    let drain = handle.drain().clone();
    drain.start();
    assert_eq!(sdk.collect(), exposition(&prometheus), "draining");
    handle.state().set_monitor_running(false);
    assert_eq!(sdk.collect(), exposition(&prometheus), "stopped");
}
