//! [`HealthMetrics`]: the exposition, rendered once per change of the view and served from
//! an `ArcSwap` like a probe's answer.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{Response, StatusCode};
use prometheus_client::registry::Registry;

use super::collector::{LiveCollector, SnapshotCollector};
use super::snapshot::Snapshot;
use crate::http::render::ProbeBody;
use crate::http::render::Rendered;
use crate::http::request::BodyMode;
use crate::monitor::HealthHandle;

/// The OpenMetrics text format, version 1.0.0, which Prometheus reads.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Prometheus metrics of a monitor's published verdicts: every probe's answer, each
/// database's and component's status, the verdicts' age, the rounds and the checks' failures
/// by category.
///
/// A scrape never runs a check. [`exposition`](Self::exposition) is rendered once per change
/// of the [view](crate::view) (each round, drain, hold, start, and a verdict going stale) and
/// then served as a probe's answer is: a pointer load and a `Bytes` clone.
/// [`register`](Self::register) adds the same metrics to your own registry.
///
/// Cheap to clone. It keeps the monitor running, as a layer does.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct HealthMetrics {
    inner: Arc<Inner>,
}

// Shared across tasks and threads (an axum state, a server's service).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<HealthMetrics>();
};

struct Inner {
    handle: HealthHandle,
    /// The last rendering, and what it is current for.
    last: ArcSwap<Exposition>,
    /// Taken to render, so that scrapes arriving together render once; never on a scrape
    /// that finds the rendering current.
    rendering: Mutex<()>,
    /// Renderings so far.
    renders: AtomicU64,
}

/// One rendering of the exposition.
struct Exposition {
    /// What it was rendered from.
    snapshot: Arc<Snapshot>,
    body: Bytes,
    response: Rendered,
}

impl Exposition {
    fn render(health: &HealthHandle) -> Self {
        let snapshot = Arc::new(Snapshot::read(health));
        let mut registry = Registry::default();
        registry.register_collector(Box::new(SnapshotCollector(Arc::clone(&snapshot))));
        let mut text = String::with_capacity(8 * 1024);
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .expect("writing to a String cannot fail");
        let body = Bytes::from(text);
        Self {
            snapshot,
            response: Rendered::with_content_type(StatusCode::OK, CONTENT_TYPE, body.clone()),
            body,
        }
    }
}

impl HealthMetrics {
    /// Metrics of the monitor behind `handle`. Renders the exposition once now.
    #[must_use]
    pub fn new(handle: &HealthHandle) -> Self {
        let exposition = Exposition::render(handle);
        Self {
            inner: Arc::new(Inner {
                handle: handle.clone(),
                last: ArcSwap::from_pointee(exposition),
                rendering: Mutex::new(()),
                renders: AtomicU64::new(1),
            }),
        }
    }

    /// The metrics in the OpenMetrics text format ([`content_type`](Self::content_type)),
    /// ending with `# EOF`.
    ///
    /// Rendered once per change of the view, once more when a verdict goes stale (so a
    /// stuck monitor shows), and when the drain's figures have moved (its phase, the
    /// requests in flight, the long-lived connections: see [Freshness](super#freshness));
    /// every other call is a pointer load, a few atomic loads and a `Bytes` clone. Never runs
    /// a check. Counters (rounds, failures, transitions) are read with the view: they move
    /// with the round that publishes.
    #[must_use]
    pub fn exposition(&self) -> Bytes {
        self.with_current(|exposition| exposition.body.clone())
    }

    /// The content type of [`exposition`](Self::exposition):
    /// `application/openmetrics-text; version=1.0.0; charset=utf-8`.
    #[must_use]
    pub fn content_type(&self) -> &'static str {
        CONTENT_TYPE
    }

    /// Adds these metrics to `registry` (prometheus-client 0.26), under the registry's
    /// prefix if it has one. They are read from the view at each of the registry's scrapes,
    /// never by running a check.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(LiveCollector(self.inner.handle.clone())));
    }

    /// The response to a scrape (GET, or HEAD without the body): 200, the exposition,
    /// `Cache-Control: no-store`. What the metrics endpoints serve.
    pub(crate) fn response(&self, mode: BodyMode) -> Response<ProbeBody> {
        self.with_current(|exposition| exposition.response.response(mode))
    }

    /// How many times the exposition was rendered.
    #[cfg(test)]
    pub(crate) fn renders(&self) -> u64 {
        self.inner.renders.load(Ordering::Relaxed)
    }

    /// Calls `f` with a current rendering, rendering one first if the last is not.
    fn with_current<T>(&self, f: impl FnOnce(&Exposition) -> T) -> T {
        let inner = &*self.inner;
        let health = &inner.handle;
        let last = inner.last.load();
        if last.snapshot.is_current(health) {
            return f(&last);
        }
        drop(last);
        let _rendering = inner
            .rendering
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Another scrape may have rendered while this one waited.
        let last = inner.last.load_full();
        if last.snapshot.is_current(health) {
            return f(&last);
        }
        let exposition = Arc::new(Exposition::render(health));
        inner.renders.fetch_add(1, Ordering::Relaxed);
        inner.last.store(Arc::clone(&exposition));
        f(&exposition)
    }
}

impl fmt::Debug for HealthMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { inner } = self;
        let Inner {
            handle,
            last,
            rendering: _,
            renders,
        } = &**inner;
        let last = last.load();
        let Exposition {
            snapshot,
            body,
            response: _,
        } = &**last;
        f.debug_struct("HealthMetrics")
            .field("monitor", handle)
            .field("generation", &snapshot.generation)
            .field("draining", &snapshot.view.draining)
            .field("bytes", &body.len())
            .field("renders", &renders.load(Ordering::Relaxed))
            .finish()
    }
}
