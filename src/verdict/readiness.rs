use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::{CheckOutcome, ComponentReport, FleetGuard, GroupVerdict};
use super::{FailDirection, ReadinessRules};

/// Since when an answer of readiness (the verdict's, a database's, a group's) has failed
/// without a break: what the readers whose consumers act on a single answer wait out
/// ([`HealthConfig::debounce`](crate::HealthConfig::debounce)). Set by the monitor as it
/// publishes each verdict, from the one before.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Failing {
    /// It passes.
    No,
    /// It has failed since this instant, and passed before.
    Since(Instant),
    /// It has failed since the first round: it never passed, so there is no passing answer
    /// to hold on to.
    #[default]
    FromTheStart,
}

impl Failing {
    /// What an answer that `fails` now is, after `previous`.
    pub(crate) fn after(previous: Self, fails: bool, now: Instant) -> Self {
        match (fails, previous) {
            (false, _) => Self::No,
            (true, Self::No) => Self::Since(now),
            (true, failing) => failing,
        }
    }

    /// Whether a failure has lasted `debounce` at `now`: a consumer that acts on one answer
    /// may act on it. A passing answer is no failure.
    #[cfg(any(feature = "grpc", feature = "haproxy-agent", test))]
    pub(crate) fn lasted(self, debounce: std::time::Duration, now: Instant) -> bool {
        match self {
            Self::No => false,
            Self::Since(since) => now.saturating_duration_since(since) >= debounce,
            Self::FromTheStart => true,
        }
    }
}

/// The failure streaks of one readiness verdict: see [`Failing`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Streaks {
    /// The verdict's own ([`ReadinessVerdict::ready`]).
    pub(crate) verdict: Failing,
    /// Each database's, by name.
    pub(crate) databases: Vec<(Arc<str>, Failing)>,
    /// Each group's, by name.
    pub(crate) groups: Vec<(Arc<str>, Failing)>,
}

impl Streaks {
    /// The streak of the database or group `name`.
    pub(crate) fn of(streaks: &[(Arc<str>, Failing)], name: &str) -> Failing {
        streaks
            .iter()
            .find(|(known, _)| **known == *name)
            .map_or(Failing::FromTheStart, |(_, failing)| *failing)
    }

    /// The streaks after `previous` of the answers `now` (each a name and whether it
    /// fails); a name `now` does not list keeps its streak.
    fn each<'a>(
        previous: &[(Arc<str>, Failing)],
        now_failing: impl Iterator<Item = (&'a Arc<str>, bool)>,
        now: Instant,
    ) -> Vec<(Arc<str>, Failing)> {
        let mut streaks = previous.to_vec();
        for (name, fails) in now_failing {
            let after = Failing::after(Self::of(previous, name), fails, now);
            match streaks.iter_mut().find(|(known, _)| known == name) {
                Some((_, streak)) => *streak = after,
                None => streaks.push((name.clone(), after)),
            }
        }
        streaks
    }
}

/// Can this instance serve traffic? The answer of `/health/ready`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadinessVerdict {
    /// What the checks conclude: every critical database is usable (a timed-out one counts
    /// as usable only under [`FailDirection::Ready`]; an
    /// [optional](crate::HealthConfig::optional_database) one is shown and does not count),
    /// and no component that [gates readiness](crate::component::ComponentSpec::gates_readiness)
    /// is in trouble; or the fleet guard keeps this process in rotation
    /// ([`fleet_guard`](Self::fleet_guard)). An operator's [hold](Self::held) takes the
    /// process out on top of this: readiness passes when both allow it
    /// ([`passes`](Self::passes)), and placing or releasing a hold changes nothing else.
    pub ready: bool,
    /// One outcome per configured database, in configuration order.
    pub databases: Vec<CheckOutcome>,
    /// The components that gate readiness, as the last health round left them.
    pub components: Vec<ComponentReport>,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why there is no real verdict (before the first round, after the monitor stopped, or
    /// after a round that panicked).
    pub reason: Option<&'static str>,
    /// The reason of a manual hold, while one is in place
    /// ([`HealthHandle::hold`](crate::HealthHandle::hold)): readiness does not pass then,
    /// whatever [`ready`](Self::ready) says.
    pub held: Option<Arc<str>>,
    /// The [health groups](crate::config::HealthGroup), in the order they were added, from
    /// the same round.
    pub groups: Vec<GroupVerdict>,
    /// What the fleet guard concluded, when it is on
    /// (`redis::SharedCache::fleet_guard`) and this
    /// process fails only on dependencies the fleet shares: `ready` is then `true` when the
    /// guard keeps it in rotation (status `degraded`).
    pub fleet_guard: Option<FleetGuard>,
    /// Since when each of its answers has failed, set when it is published.
    pub(crate) streaks: Streaks,
}

impl ReadinessVerdict {
    pub(crate) fn from_outcomes(
        databases: Vec<CheckOutcome>,
        components: Vec<ComponentReport>,
        rules: ReadinessRules,
        checked_at: SystemTime,
        held: Option<Arc<str>>,
    ) -> Self {
        let databases_ready = !databases
            .iter()
            .any(|outcome| rules.database_fails(outcome));
        let components_ready = !components
            .iter()
            .any(|report| rules.component_fails(report));
        let ready = databases_ready && components_ready;
        Self {
            ready,
            databases,
            components,
            checked_at: Some(checked_at),
            reason: None,
            held,
            groups: Vec::new(),
            fleet_guard: None,
            streaks: Streaks::default(),
        }
    }

    /// Whether readiness passes: the checks allow it ([`ready`](Self::ready)) and no hold is
    /// in place.
    #[must_use]
    pub fn passes(&self) -> bool {
        self.ready && self.held.is_none()
    }

    /// Since when each answer of this verdict has failed, after `previous` (the verdict
    /// published before it), at `now`. A database or a group this verdict does not list (a
    /// round that panicked lists none) keeps its streak.
    pub(crate) fn with_streaks(
        mut self,
        previous: &Self,
        fail_direction: FailDirection,
        now: Instant,
    ) -> Self {
        let databases = self.databases.iter().map(|outcome| {
            let fails = !outcome.status.passes_readiness(fail_direction);
            (&outcome.name, fails)
        });
        let groups = self
            .groups
            .iter()
            .map(|group| (&group.name, !group.passes()));
        self.streaks = Streaks {
            verdict: Failing::after(previous.streaks.verdict, !self.ready, now),
            databases: Streaks::each(&previous.streaks.databases, databases, now),
            groups: Streaks::each(&previous.streaks.groups, groups, now),
        };
        self
    }

    /// The same verdict under the hold `held` (`None`: released): nothing else changes, so
    /// that a release restores what the round concluded (the fleet guard's decision and a
    /// panicked round's reason included) until the next round.
    pub(crate) fn with_hold(&self, held: Option<Arc<str>>) -> Self {
        Self {
            held,
            ..self.clone()
        }
    }

    /// The `status` readiness answers with: `ready`, `degraded` (kept in rotation by the
    /// fleet guard) or `not_ready` (the checks, or a hold).
    #[must_use]
    pub fn status(&self) -> &'static str {
        match (self.passes(), self.is_kept_by_fleet_guard()) {
            (true, true) => "degraded",
            (true, false) => "ready",
            (false, _) => "not_ready",
        }
    }

    /// Whether the fleet guard keeps this process in rotation.
    pub(crate) fn is_kept_by_fleet_guard(&self) -> bool {
        self.fleet_guard.as_ref().is_some_and(|guard| guard.kept)
    }

    /// The verdict with the fleet guard's conclusion: kept, a verdict that failed only on
    /// shared dependencies becomes ready. A verdict that is not a round's (no round, a
    /// panicked one) is never kept in; a hold still takes a kept process out.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn with_fleet_guard(mut self, guard: FleetGuard) -> Self {
        if guard.kept && self.reason.is_none() {
            self.ready = true;
        }
        self.fleet_guard = Some(guard).filter(|guard| !guard.kept || self.ready);
        self
    }

    /// The verdict of a round that panicked: not ready, with `reason`, until the next
    /// round.
    pub(crate) fn panicked(
        reason: &'static str,
        checked_at: SystemTime,
        held: Option<Arc<str>>,
    ) -> Self {
        Self {
            ready: false,
            databases: Vec::new(),
            components: Vec::new(),
            checked_at: Some(checked_at),
            reason: Some(reason),
            held,
            groups: Vec::new(),
            fleet_guard: None,
            streaks: Streaks::default(),
        }
    }

    pub(crate) fn unavailable(reason: &'static str) -> Self {
        Self {
            ready: false,
            databases: Vec::new(),
            components: Vec::new(),
            checked_at: None,
            reason: Some(reason),
            held: None,
            groups: Vec::new(),
            fleet_guard: None,
            streaks: Streaks::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::verdict::{CheckError, CheckErrorKind};
    use crate::verdict::{CheckStatus, Fraction};

    fn refused() -> CheckOutcome {
        CheckOutcome {
            name: "default".into(),
            status: CheckStatus::Failed,
            elapsed: Duration::ZERO,
            running_for: None,
            error: Some(CheckError::new(CheckErrorKind::Refused, "refused")),
            detail: None,
            critical: true,
            target: None,
            details: None,
        }
    }

    /// A hold is beside the round's conclusion: placing and releasing one leaves the fleet
    /// guard's decision as the round made it (a release once dropped it until the next
    /// round, and a kept process read 503 `not_ready`).
    #[test]
    fn a_hold_and_its_release_leave_the_fleet_guards_decision_alone() {
        let verdict = ReadinessVerdict::from_outcomes(
            vec![refused()],
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            None,
        );
        assert_eq!(verdict.status(), "not_ready");
        let guard = FleetGuard::decide(
            "a",
            Arc::from("database `default`"),
            &[],
            Fraction::new(0.5).unwrap(),
        );
        let kept = verdict.with_fleet_guard(guard);
        assert_eq!((kept.status(), kept.passes()), ("degraded", true));

        let held = kept.with_hold(Some(Arc::from("deploy freeze")));
        assert_eq!((held.status(), held.passes()), ("not_ready", false));
        assert!(held.ready, "the round's conclusion is untouched");

        let released = held.with_hold(None);
        assert_eq!((released.status(), released.passes()), ("degraded", true));
        assert_eq!(released.fleet_guard, kept.fleet_guard);
    }
}
