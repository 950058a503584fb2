//! The HTTP side's [`Prerender`]: registered on a monitor's store by the first HTTP reader, it
//! renders each verdict once, as it is published, into every response a probe may get
//! ([`RenderedVerdict`]), so that answering a probe never encodes JSON.

use std::sync::Arc;
use std::time::Duration;

use super::{RenderedVerdict, render_health, render_pool, render_readiness};
use crate::monitor::HealthHandle;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessRules, ReadinessVerdict};
use crate::view::PublishedVerdict;
use crate::view::published::{Prerender, Prerendered};

/// What the bodies need of the monitor's configuration.
#[derive(Debug)]
pub(crate) struct HttpPrerender {
    rules: ReadinessRules,
    /// The staleness bound of readiness's and pool's verdicts, which the stale bodies name.
    readiness_stale: Duration,
    health_stale: Duration,
    /// This process's id when it shares its verdicts through Redis: `_cache` then names who
    /// computed each verdict, this process included.
    own_id: Option<Arc<str>>,
}

impl HttpPrerender {
    fn of(health: &HealthHandle) -> Self {
        let known = health.known();
        Self {
            rules: known.rules,
            readiness_stale: known.readiness_stale,
            health_stale: known.health_stale,
            own_id: health.process_id(),
        }
    }
}

impl Prerender for HttpPrerender {
    fn readiness(&self, verdict: &ReadinessVerdict) -> Prerendered {
        Arc::new(render_readiness(verdict, self.rules, self.readiness_stale))
    }

    fn health(&self, verdict: &HealthVerdict) -> Prerendered {
        Arc::new(render_health(
            verdict,
            self.health_stale,
            self.own_id.as_deref(),
        ))
    }

    fn pool(&self, verdict: &PoolVerdict) -> Prerendered {
        Arc::new(render_pool(verdict, self.readiness_stale))
    }
}

/// Registers the HTTP renderer on `health`'s monitor, once for every HTTP reader of it: one
/// atomic load when it is there already.
pub(crate) fn attach(health: &HealthHandle) {
    if health.registered_render().is_none() {
        health.render_with(|| Arc::new(HttpPrerender::of(health)));
    }
}

/// Calls `answer` with the responses rendered for `published`: those of its publication, or
/// (for a verdict published in the moment before the first HTTP reader registered its
/// renderer) rendered now, once for this request.
#[inline]
pub(crate) fn with_rendered<T>(
    health: &HealthHandle,
    published: &dyn PublishedVerdict,
    answer: impl FnOnce(&RenderedVerdict) -> T,
) -> T {
    match published
        .prerendered()
        .and_then(|rendered| rendered.downcast_ref::<RenderedVerdict>())
    {
        Some(rendered) => answer(rendered),
        None => answer(&rendered_now(health, published)),
    }
}

#[cold]
#[inline(never)]
fn rendered_now(health: &HealthHandle, published: &dyn PublishedVerdict) -> RenderedVerdict {
    attach(health);
    let render = health.registered_render();
    let rendering = published.prerender_now(&**render.expect("attached just now"));
    rendering
        .downcast_ref::<RenderedVerdict>()
        .expect("the HTTP renderer renders RenderedVerdict")
        .clone()
}
