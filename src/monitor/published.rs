//! A verdict as published: the verdict itself and its responses, rendered ahead of time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use http::Response;
use http::header::{self, HeaderValue};

use crate::body::ProbeBody;
use crate::probe::{BodyMode, Freshness};
use crate::rendered::RenderedVerdict;
use crate::verdict::Audience;
use crate::view::Condition;

#[derive(Debug)]
pub(crate) struct Published<V> {
    pub(crate) verdict: Arc<V>,
    /// When the round that produced the verdict finished: the origin of `age_ms`.
    pub(crate) computed_at: Instant,
    /// From this instant on, the verdict is served as stale; `None` for placeholders and for
    /// a bound too far to represent. An instant rather than a duration, so that a probe
    /// compares two clock readings instead of subtracting them.
    stale_at: Option<Instant>,
    /// A response of its own rather than a round's verdict: no round yet, monitor stopped.
    placeholder: bool,
    rendered: RenderedVerdict,
}

/// Which of a verdict's rendered responses a request gets: what [`decide`](crate::view)
/// concluded, and whether the verdict is a bypass's.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Variant<'a> {
    /// The published verdict.
    Published,
    /// A fresh computation's verdict, for `?nocache=true`.
    Bypassed,
    /// The server is draining; the response carries this `Retry-After`.
    Draining(&'a HeaderValue),
    /// The verdict is older than its staleness bound.
    Stale,
}

impl<'a> Variant<'a> {
    /// The response for a decided `condition`; `retry_after` goes with a drain's.
    pub(crate) fn of(
        condition: Condition,
        freshness: Freshness,
        retry_after: Option<&'a HeaderValue>,
    ) -> Self {
        match (condition, freshness) {
            (Condition::Draining, _) => retry_after.map_or(Self::Published, Self::Draining),
            (Condition::Stale, _) => Self::Stale,
            (
                Condition::Verdict | Condition::Held | Condition::Unavailable | Condition::Starting,
                Freshness::Published,
            ) => Self::Published,
            (
                Condition::Verdict | Condition::Held | Condition::Unavailable | Condition::Starting,
                Freshness::Bypass,
            ) => Self::Bypassed,
        }
    }
}

impl<V> Published<V> {
    pub(crate) fn new(
        verdict: V,
        rendered: RenderedVerdict,
        stale_after: Option<Duration>,
    ) -> Self {
        Self::computed_at(verdict, rendered, stale_after, Instant::now())
    }

    /// A verdict computed at `computed_at`: a re-rendering of an earlier round's (a manual
    /// hold placed or released) keeps that round's age, so it goes stale on time.
    pub(crate) fn computed_at(
        verdict: V,
        rendered: RenderedVerdict,
        stale_after: Option<Duration>,
        computed_at: Instant,
    ) -> Self {
        Self {
            verdict: Arc::new(verdict),
            computed_at,
            // A bound too far to represent is no bound.
            stale_at: stale_after.and_then(|bound| computed_at.checked_add(bound)),
            placeholder: stale_after.is_none(),
            rendered,
        }
    }

    /// Whether this is a placeholder (no round yet, monitor stopped) rather than a verdict.
    pub(crate) fn is_placeholder(&self) -> bool {
        self.placeholder
    }

    /// Whether the verdict is older than its staleness bound at `now`.
    pub(crate) fn is_stale(&self, now: Instant) -> bool {
        self.stale_at.is_some_and(|stale_at| now > stale_at)
    }

    /// When the verdict goes stale, if ever.
    pub(crate) fn stale_at(&self) -> Option<Instant> {
        self.stale_at
    }

    /// How old the verdict is at `now`.
    pub(crate) fn age(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.computed_at)
    }

    /// The response to one request, in the variant decided for it, for `audience`.
    pub(crate) fn response(
        &self,
        variant: Variant<'_>,
        audience: Audience,
        mode: BodyMode,
        now: Instant,
    ) -> Response<ProbeBody> {
        let variants = self.rendered.for_audience(audience);
        let (rendered, retry_after) = match variant {
            Variant::Draining(retry_after) => (&variants.draining, Some(retry_after)),
            Variant::Stale => (&variants.stale, None),
            Variant::Bypassed => (&variants.bypassed, None),
            Variant::Published => (&variants.published, None),
        };
        let extra = retry_after.map(|value| (header::RETRY_AFTER, value));
        let age_ms = if rendered.has_age() {
            u64::try_from(self.age(now).as_millis()).unwrap_or(u64::MAX)
        } else {
            0
        };
        rendered.response_aged(mode, age_ms, extra)
    }
}

/// Publishes `new` unless what is published is newer (two cadences and the bypass publish
/// the same verdict; a slow round must not overwrite a fresher one), or the monitor is not
/// running (then the "not running" placeholder must stay: a bypass's verdict goes to its
/// requester only). Returns what was published before, or `None` when `new` was refused:
/// subscribers and transition logs follow exactly what readers were served.
pub(crate) fn publish_newer<V>(
    slot: &ArcSwap<Published<V>>,
    new: &Arc<Published<V>>,
    monitor_running: &AtomicBool,
) -> Option<Arc<Published<V>>> {
    let mut published = false;
    let previous = slot.rcu(|current| {
        // Read inside the closure: `rcu` retries if the monitor stopped (and stored its
        // placeholder) in between, and the last try is the one that counts.
        // A placeholder ("no round yet") gives way to any round's verdict, even one computed
        // before it by another process (the shared cache).
        published = monitor_running.load(Ordering::Acquire)
            && (current.placeholder || current.computed_at <= new.computed_at);
        if published {
            Arc::clone(new)
        } else {
            Arc::clone(current)
        }
    });
    published.then_some(previous)
}
