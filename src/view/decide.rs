//! The one place that decides what a probe answers: the verdict, then the drain, the age of
//! the verdict, an operator's hold, the return after an outage and the start. Every reader
//! applies this function.

use std::time::Instant;

use super::published::Published;
use super::{Answer, Condition};
use crate::probe::Probe;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};

/// What the decision needs to know of a verdict.
pub(crate) trait Judged {
    /// Whether the verdict, as it is, passes.
    fn passes(&self) -> bool;
    /// The `status` of the verdict, as it is.
    fn status(&self) -> &'static str;
    /// The `status` of the verdict once it is stale, or while it is on its way back.
    const OUT_STATUS: &'static str;
    /// Whether an operator's hold is in the verdict (readiness only).
    fn held(&self) -> bool {
        false
    }
    /// Whether the verdict passes but is still on its way back into rotation at `now`
    /// (readiness only: the return's jitter after an outage).
    fn returning(&self, _now: Instant) -> bool {
        false
    }
}

impl Judged for ReadinessVerdict {
    fn passes(&self) -> bool {
        Self::passes(self)
    }

    fn status(&self) -> &'static str {
        // `degraded` while the fleet guard keeps it in rotation.
        Self::status(self)
    }

    const OUT_STATUS: &'static str = "not_ready";

    fn held(&self) -> bool {
        self.held.is_some()
    }

    fn returning(&self, now: Instant) -> bool {
        self.passes() && self.returned.is_pending(now)
    }
}

impl Judged for HealthVerdict {
    fn passes(&self) -> bool {
        self.status.is_serving()
    }

    fn status(&self) -> &'static str {
        self.status.as_str()
    }

    const OUT_STATUS: &'static str = "unavailable";
}

impl Judged for PoolVerdict {
    fn passes(&self) -> bool {
        self.is_usable()
    }

    fn status(&self) -> &'static str {
        self.status.as_str()
    }

    const OUT_STATUS: &'static str = "unavailable";
}

/// What decided the answer of a probe that reads `published` (readiness, health, pool) at
/// `now`, whether it passes, and its `status`: the order every answer follows, written once
/// (the drain, no verdict, a stale one, the hold, the return's jitter, the verdict; the fleet
/// guard's decision is in the verdict).
#[inline]
pub(crate) fn verdict_answer<V: Judged>(
    probe: Probe,
    published: &Published<V>,
    draining: bool,
    now: Instant,
) -> (Condition, bool, &'static str) {
    let verdict = &*published.verdict;
    if draining && probe.drains() {
        (Condition::Draining, false, "draining")
    } else if published.is_placeholder() {
        (Condition::Unavailable, false, verdict.status())
    } else if published.is_stale(now) {
        (Condition::Stale, false, V::OUT_STATUS)
    } else if verdict.held() {
        (Condition::Held, false, verdict.status())
    } else if verdict.returning(now) {
        // Out until the return's jitter runs out.
        (Condition::Returning, false, V::OUT_STATUS)
    } else {
        (Condition::Verdict, verdict.passes(), verdict.status())
    }
}

/// The answer of liveness and ping: always yes, while the process answers.
pub(crate) fn alive(probe: Probe) -> Answer {
    Answer {
        probe,
        passing: true,
        condition: Condition::Verdict,
        status: "alive",
        age: None,
    }
}

/// The answer of the startup probe: no until the process has started, then yes for good.
pub(crate) fn startup(started: bool) -> Answer {
    let (condition, status) = if started {
        (Condition::Verdict, "started")
    } else {
        (Condition::Starting, "starting")
    };
    Answer {
        probe: Probe::Startup,
        passing: started,
        condition,
        status,
        age: None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::verdict::{ReadinessRules, Return};
    use crate::view::published::Made;

    /// Readiness on its way back after an outage fails, as `Returning`, until the return's
    /// instant, then passes; the drain and the hold come first, as ever.
    #[test]
    fn a_pending_return_holds_readiness_out_until_its_instant() {
        let now = Instant::now();
        let returns_at = now + Duration::from_secs(3);
        let mut verdict = ReadinessVerdict::from_outcomes(
            Vec::new(),
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            None,
        );
        verdict.returned = Return {
            at: Some(returns_at),
            jitter: Duration::from_secs(3),
        };
        let made = Made::now(now, now, Duration::from_secs(3600));
        let published = Published::new(verdict.clone(), Some(made), None);
        let ready = |draining, at| verdict_answer(Probe::Ready, &published, draining, at);
        assert_eq!(
            ready(false, now),
            (Condition::Returning, false, "not_ready")
        );
        assert_eq!(
            ready(false, returns_at - Duration::from_millis(1)),
            (Condition::Returning, false, "not_ready")
        );
        assert_eq!(
            ready(false, returns_at),
            (Condition::Verdict, true, "ready")
        );
        assert_eq!(ready(true, now), (Condition::Draining, false, "draining"));
        let held = Published::new(
            verdict.with_hold(Some("deploy freeze".into())),
            Some(made),
            None,
        );
        assert_eq!(
            verdict_answer(Probe::Ready, &held, false, now),
            (Condition::Held, false, "not_ready")
        );
    }
}
