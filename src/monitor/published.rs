//! A verdict as published: the verdict itself and its answers, rendered ahead of time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::answer::Answer;
use crate::render::Answers;

#[derive(Debug)]
pub(crate) struct Published<V> {
    pub(crate) verdict: Arc<V>,
    /// When the round that produced the verdict finished: the origin of `age_ms`.
    pub(crate) computed_at: Instant,
    /// Older than this, the verdict is served as stale; `None` for placeholders that are
    /// answers of their own (no round yet, monitor stopped).
    stale_after: Option<Duration>,
    answers: Answers,
}

impl<V> Published<V> {
    pub(crate) fn new(verdict: V, answers: Answers, stale_after: Option<Duration>) -> Self {
        Self {
            verdict: Arc::new(verdict),
            computed_at: Instant::now(),
            stale_after,
            answers,
        }
    }

    /// The answer for one probe, and the verdict's age in milliseconds.
    pub(crate) fn answer(&self, now: Instant, draining: bool, bypassed: bool) -> (&Answer, u64) {
        let age = now.saturating_duration_since(self.computed_at);
        let answer = if draining {
            &self.answers.draining
        } else if self.stale_after.is_some_and(|bound| age > bound) {
            &self.answers.stale
        } else if bypassed {
            &self.answers.bypassed
        } else {
            &self.answers.normal
        };
        (answer, u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
    }
}

/// Publishes `new` unless what is published is newer (two cadences and the bypass publish
/// the same verdict; a slow round must not overwrite a fresher one), or the monitor is not
/// running (then the "not running" placeholder must stay: a bypass's answer goes to its
/// requester only). Returns what was published before.
pub(crate) fn publish_newer<V>(
    slot: &ArcSwap<Published<V>>,
    new: &Arc<Published<V>>,
    monitor_running: &AtomicBool,
) -> Arc<Published<V>> {
    slot.rcu(|current| {
        // Read inside the closure: `rcu` retries if the monitor stopped (and stored its
        // placeholder) in between.
        if !monitor_running.load(Ordering::Acquire) || current.computed_at > new.computed_at {
            Arc::clone(current)
        } else {
            Arc::clone(new)
        }
    })
}
