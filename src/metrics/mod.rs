//! Prometheus metrics of the published verdicts, rendered once per round: a scrape never runs
//! a check.
//!
//! [`HealthMetrics`] is one more reader of the monitor's [view](crate::view), like the HTTP
//! layers and the admin server: what a probe answers, and why, is what the metrics say, drain,
//! hold, staleness and startup included. [`HealthMetrics::exposition`] renders the
//! OpenMetrics text once per change of the view and serves it as a probe's answer is served
//! (a pointer load and a `Bytes` clone), so a scrape costs what a probe costs, and the
//! database's load stays set by the monitor's cadence, however often Prometheus scrapes.
//! [`HealthMetrics::register`] adds the same metrics to your own
//! [`prometheus_client`](https://docs.rs/prometheus-client/0.26) registry instead.
//!
//! Behind the `metrics` feature.
//!
//! # Example
//!
//! ```
//! use tower_health::metrics::HealthMetrics;
//! use tower_health::{HealthConfig, HealthMonitor, Probe};
//!
//! # #[tokio::main]
//! # async fn main() {
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
//! ```
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
//! | `tower_health_probe_condition` | gauge | `probe`, `condition` (`verdict`, `draining`, `stale`, `unavailable`, `held`, `starting`) | what decides the probe's answer ([`Condition`](crate::view::Condition)) |
//! | `tower_health_status` | gauge | `status` (`healthy`, `degraded`, `unhealthy`, `error`, `unavailable`) | the health status as `/health` serves it: `unavailable` once stale; a drain does not change it |
//! | `tower_health_database_up` | gauge | `database`, `critical` (`true`, `false`) | 1 when the database was ready in the last readiness round |
//! | `tower_health_database_check_status` | gauge | `database`, `status` (`ready`, `not_ready`, `timed_out`) | the database's check status in the last readiness round |
//! | `tower_health_component_status` | gauge | `component`, `status` (`unknown`, `healthy`, `degraded`, `unhealthy`) | the component's status in the last health round |
//! | `tower_health_verdict_timestamp_seconds` | gauge | `verdict` (`health`, `readiness`, `pool`) | when the verdict was computed, Unix time (absent before the first round): its age is `time() - tower_health_verdict_timestamp_seconds` |
//! | `tower_health_verdict_stale` | gauge | `verdict` | 1 when the verdict is older than its staleness bound (the monitor is stuck or stopped), drain or not |
//! | `tower_health_round_duration_seconds` | gauge | `round` (`readiness`, `health`) | how long the last round's checks took |
//! | `tower_health_rounds_total` | counter | `round` (`readiness`, `health`), `source` (`computed`: the checks ran here; `shared`: the fleet's entry was served) | rounds completed |
//! | `tower_health_round_panics_total` | counter | `round` | rounds that panicked: reported as failed (cause `panicked`), the next round run |
//! | `tower_health_shared_cache_errors_total` | counter | | health rounds in which Redis failed or the shared entry (module `redis`, feature `redis`) could not be served (0 without a shared cache) |
//! | `tower_health_check_failures_total` | counter | `check` (a database's or component's name), `kind` ([`CheckErrorKind`](crate::check::CheckErrorKind): `refused`, `dns`, `auth`, `tls`, `timeout`, `pool_saturated`, `closed`, `query`, `panicked`, `other`) | checks that finished with an error, each check once however many rounds waited for it |
//! | `tower_health_transitions_total` | counter | `question` (`health`, `readiness`) | transitions of readiness and of the health status, as logged, the first verdict included |
//! | `tower_health_nocache_computations_total` | counter | | fresh computations run for `?nocache=true` |
//! | `tower_health_draining` | gauge | | 1 once the drain has started |
//! | `tower_health_held` | gauge | | 1 while an operator's hold is in place |
//! | `tower_health_started` | gauge | | 1 once the startup probe passes |
//! | `tower_health_monitor_running` | gauge | | 1 while the background monitor runs |
//!
//! # Freshness
//!
//! The exposition is rendered again when the view changes (a round publishes, the drain
//! starts, a hold is placed or released, the start) and when a verdict it shows fresh goes
//! stale: a monitor that is stuck, and publishes nothing, shows as stale on time. The
//! counters are read with the view, so they move with the round that publishes.

mod collector;
mod exporter;
mod families;
mod prometheus;
mod snapshot;
mod states;
#[cfg(test)]
mod tests;
mod work;

pub use self::exporter::HealthMetrics;
