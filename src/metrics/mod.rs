//! Metrics of the published verdicts, for Prometheus and for OpenTelemetry: a collection
//! never runs a check.
//!
//! Metrics are one more reader of the monitor's [view](crate::view), like the HTTP layers
//! and the admin server: what a probe answers, and why, is what the metrics say, drain,
//! hold, staleness and startup included. The [table](#metrics) below is written once, and
//! both exporters read it from a snapshot of the view and of the monitor's counters, taken
//! again only when it is no longer current (the same rule for both, see
//! [Freshness](#freshness)):
//!
//! - [`HealthMetrics`] (feature `metrics`, through prometheus-client) renders the
//!   OpenMetrics text once per change of the view and serves it as a probe's answer is
//!   served (a pointer load and a `Bytes` clone), so a scrape costs what a probe costs, and
//!   the database's load stays set by the monitor's cadence, however often Prometheus
//!   scrapes. `HealthMetrics::register` adds the same metrics to your own
//!   [`prometheus_client`](https://docs.rs/prometheus-client/0.26) registry instead.
//! - [`OpenTelemetry`] (feature `opentelemetry`, through the
//!   [`opentelemetry`](https://docs.rs/opentelemetry/0.33) API crate alone) adds them as
//!   observable instruments to the `Meter` your application gives it, read at each of your
//!   SDK's collections.
//!
//! # Prometheus
//!
//! ```
//! # #[cfg(feature = "metrics")]
//! # #[tokio::main]
//! # async fn main() {
//! use tower_health::metrics::HealthMetrics;
//! use tower_health::{HealthConfig, HealthMonitor, Probe};
//!
//! let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
//! let metrics = HealthMetrics::new(&health);
//!
//! // No database configured: ready once the first round is done.
//! let mut watch = health.watch();
//! while !watch.changed().await.unwrap().answer(Probe::Startup).passing {}
//! let text = metrics.exposition();
//! let text = std::str::from_utf8(&text).unwrap();
//! assert!(text.contains("\ntower_health_probe_passing{probe=\"ready\"} 1\n"));
//! assert!(text.ends_with("# EOF\n"));
//!
//! // Or in the application's own registry, read at each of its scrapes.
//! let mut registry = prometheus_client::registry::Registry::default();
//! metrics.register(&mut registry);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("\ntower_health_started 1\n"));
//! # }
//! # #[cfg(not(feature = "metrics"))]
//! # fn main() {}
//! ```
//!
//! # OpenTelemetry
//!
//! The application owns the SDK, its exporter and its cadence, and gives this crate a
//! `Meter`; [`OpenTelemetry::register`] adds one observable instrument per metric to it,
//! and the provider keeps them (there is nothing to hold):
//!
//! ```
//! # #[cfg(feature = "opentelemetry")]
//! # #[tokio::main]
//! # async fn main() {
//! use opentelemetry::metrics::MeterProvider as _;
//! use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
//! use tower_health::metrics::OpenTelemetry;
//! use tower_health::{HealthConfig, HealthMonitor};
//! # let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
//!
//! let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
//! // Your provider, with your exporter (OTLP, say), or `opentelemetry::global::meter`.
//! let provider = SdkMeterProvider::builder()
//!     .with_reader(PeriodicReader::builder(exporter.clone()).build())
//!     .build();
//! OpenTelemetry::new(&health).register(&provider.meter("my-service"));
//! # health.watch().changed().await.unwrap();
//! # provider.force_flush().unwrap();
//! # let collected = exporter.get_finished_metrics().unwrap();
//! # let names: Vec<_> = collected.iter().flat_map(|each| each.scope_metrics())
//! #     .flat_map(|scope| scope.metrics()).map(|metric| metric.name().to_owned()).collect();
//! # assert!(names.iter().any(|name| name == "tower_health_probe_passing"), "{names:?}");
//! # }
//! # #[cfg(not(feature = "opentelemetry"))]
//! # fn main() {}
//! ```
//!
//! The instruments carry the table's names without the unit and without `_total`
//! (`tower_health_rounds`, `tower_health_verdict_timestamp` in `s`), as OpenTelemetry's
//! naming rules ask, and the table's labels as attributes. The way into Prometheus (the
//! Collector's Prometheus exporters, Prometheus's own OTLP receiver) adds `_seconds` from
//! the unit `s` and `_total` to a counter, so what it yields is the table's series, by name,
//! label and value, and a dashboard or an alert reads either exporter. The names keep the
//! underscores rather than OpenTelemetry's dots (`tower_health.probe.passing`): a dot becomes
//! an underscore on the way to Prometheus's classic names, but stays a dot where Prometheus
//! keeps UTF-8 names, which would part the two sets of series. The 0/1 gauges and the
//! counters have no unit (OpenTelemetry's `1` would add `_ratio` to a gauge's name). A 0/1
//! metric and a duration are observable gauges, a `_total` an observable counter of the
//! running total (with delta temporality, the SDK reports the difference).
//!
//! # Metrics
//!
//! Label values are the configured names of probes, databases and components, and fixed
//! words; never an error's text or a target. A metric with a `status` or `condition` label
//! has one series per value, `1` for the current one and `0` for the others, so a series
//! never vanishes when the value changes.
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | `tower_health_probe_passing` | gauge | `probe` (`health`, `live`, `ready`, `startup`, `pool`, `ping`) | 1 when the probe passes now (HTTP 200) |
//! | `tower_health_probe_condition` | gauge | `probe`, `condition` (`verdict`, `draining`, `stale`, `unavailable`, `held`, `starting`, `returning`) | what decides the probe's answer ([`Condition`](crate::view::Condition)) |
//! | `tower_health_status` | gauge | `status` (`healthy`, `degraded`, `unhealthy`, `error`, `unavailable`) | the health status as `/health` serves it: `unavailable` once stale; a drain does not change it |
//! | `tower_health_database_up` | gauge | `database`, `critical` (`true`, `false`) | 1 when the database was ready in the last readiness round |
//! | `tower_health_database_check_status` | gauge | `database`, `status` (`ready`, `not_ready`, `timed_out`) | the database's check status in the last readiness round |
//! | `tower_health_component_status` | gauge | `component`, `status` (`unknown`, `healthy`, `degraded`, `unhealthy`) | the component's status in the last health round |
//! | `tower_health_group_passing` | gauge | `group` | whether the [health group](crate::config::HealthGroup) passes now, as its path answers (held, draining, stale: 0) |
//! | `tower_health_verdict_timestamp_seconds` | gauge | `verdict` (`health`, `readiness`, `pool`) | when the verdict was computed, Unix time (absent before the first round): its age is `time() - tower_health_verdict_timestamp_seconds` |
//! | `tower_health_verdict_stale` | gauge | `verdict` | 1 when the verdict is older than its staleness bound (the monitor is stuck or stopped), drain or not |
//! | `tower_health_round_duration_seconds` | gauge | `round` (`readiness`, `health`) | how long the last round's checks took |
//! | `tower_health_rounds_total` | counter | `round` (`readiness`, `health`), `source` (`computed`: the checks ran here; `shared`: the fleet's entry was served) | rounds completed |
//! | `tower_health_round_panics_total` | counter | `round` | rounds that panicked: reported as failed (cause `panicked`), the next round run |
//! | `tower_health_shared_cache_errors_total` | counter | | health rounds in which Redis failed or the shared entry (module `redis`, feature `redis`) could not be served (0 without a shared cache) |
//! | `tower_health_check_failures_total` | counter | `check` (a database's or component's name), `kind` ([`CheckErrorKind`](crate::check::CheckErrorKind): `refused`, `dns`, `auth`, `tls`, `timeout`, `pool_saturated`, `closed`, `query`, `panicked`, `other`) | checks that finished with an error, each check once however many rounds waited for it |
//! | `tower_health_check_flaps` | gauge | `check` | how many times the database or component went from passing to failing or back over the last ten minutes (counted by the minute: the current minute and the nine before it), from its history (see [the operator's page](crate::guide::page)) |
//! | `tower_health_transitions_total` | counter | `question` (`health`, `readiness`) | transitions of readiness and of the health status, as logged, the first verdict included |
//! | `tower_health_nocache_computations_total` | counter | | fresh computations run for `?nocache=true` |
//! | `tower_health_draining` | gauge | | 1 once the drain has started |
//! | `tower_health_drain_phase` | gauge | `phase` (`serving`: no drain; `delay`; `close_window`: the long-lived connections are told to close; `waiting`: for what is still in flight, until the timeout; `timed_out`: the timeout ended it with work in flight; `drained`: over, nothing left) | the drain's phase ([guide](crate::guide::serving#watching-a-drain)) |
//! | `tower_health_drain_timestamp_seconds` | gauge | `event` (`started`, `delay_over`, `close_window_over`, `timeout`, `ended`) | when the drain started, when its delay and its close window end, when its timeout falls and when it ended, Unix time (absent before the drain starts; `ended` once it has) |
//! | `tower_health_in_flight` | gauge | | requests in flight through the drain's layers, the long-lived connections included: what a drain waits for |
//! | `tower_health_long_lived_open` | gauge | `name` (the name given to [`DrainHandle::long_lived`](crate::DrainHandle::long_lived)) | long-lived connections open under each name (every name registered so far, at 0 once its connections have closed) |
//! | `tower_health_held` | gauge | | 1 while an operator's hold is in place |
//! | `tower_health_fleet_guard_kept` | gauge | | 1 while the [fleet guard](crate::guide::fleet#the-fleet-guard) keeps this process in rotation: readiness passes, `degraded`, while a dependency the fleet shares fails (`tower_health_probe_passing{probe="ready"}` reads 1, as for a process ready on its own); 0 otherwise, and once a drain, a hold or staleness takes the process out |
//! | `tower_health_started` | gauge | | 1 once the startup probe passes |
//! | `tower_health_monitor_running` | gauge | | 1 while the background monitor runs |
//!
//! # Freshness
//!
//! The view is read again, and the exposition rendered again, when the view changes (a
//! round publishes, the drain starts, a hold is placed or released, the start), when a
//! verdict it shows fresh goes stale (a monitor that is stuck, and publishes nothing, shows
//! as stale on time), and when the drain's figures move (its phase, the requests in flight,
//! a long-lived connection opening or closing): those change without a publication, so a
//! scrape reads them (a lock-free sum of the in-flight count's shards) and renders again if
//! they moved. Under steady traffic most scrapes find the in-flight count moved and render;
//! an idle process's scrapes stay a pointer load. The counters are read with the view, so
//! they move with the round that publishes. Both exporters follow this one rule, so they say
//! the same at the same moment.
//!
// Without its feature, an exporter above links to the crate's feature table (a link
// reference definition, which must not follow a paragraph line: hence the `//!` above).
#![cfg_attr(
    not(feature = "metrics"),
    doc = "[`HealthMetrics`]: crate#feature-flags"
)]
#![cfg_attr(
    not(feature = "opentelemetry"),
    doc = "[`OpenTelemetry`]: crate#feature-flags\n\
           [`OpenTelemetry::register`]: crate#feature-flags"
)]

// The table and what both exporters read: no exporter's crate.
mod drain;
mod families;
mod series;
mod snapshot;
mod states;
mod work;

// Prometheus, through prometheus-client.
#[cfg(feature = "metrics")]
mod collector;
#[cfg(feature = "metrics")]
mod exporter;
#[cfg(feature = "metrics")]
mod prometheus;
#[cfg(all(test, feature = "metrics"))]
mod tests;

// OpenTelemetry, through its API crate.
#[cfg(feature = "opentelemetry")]
mod otel;
#[cfg(all(test, feature = "opentelemetry"))]
mod otel_tests;

#[cfg(feature = "metrics")]
pub use self::exporter::HealthMetrics;
#[cfg(feature = "opentelemetry")]
pub use self::otel::OpenTelemetry;
