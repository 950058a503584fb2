use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

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

    /// When a failure that began at an instant lasts `debounce`: the instant the readers that
    /// wait it out change their answer. `None` for a passing answer, one failing from the
    /// start (it has lasted already), or an instant out of the clock's range.
    pub(crate) fn lasts_at(self, debounce: Duration) -> Option<Instant> {
        match self {
            Self::Since(since) => since.checked_add(debounce),
            Self::No | Self::FromTheStart => None,
        }
    }

    /// Whether a failure has lasted `debounce` at `now`: a consumer that acts on one answer
    /// may act on it. A passing answer is no failure.
    pub(crate) fn lasted(self, debounce: Duration, now: Instant) -> bool {
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

/// When readiness came back into rotation last: the instant the HAProxy agent's slow start
/// ramps from ([`AgentConfig::slow_start`](crate::haproxy::AgentConfig::slow_start)), and,
/// while it lies ahead, what keeps readiness out after an outage
/// ([`HealthConfig::return_jitter`](crate::HealthConfig::return_jitter)). Set by the monitor
/// as it publishes each verdict, from the one before: one instant every reader judges by.
///
/// What counts as a return: the first verdict that passes after the start; a verdict that
/// passes after a hold, a stale verdict or a stopped monitor; and one that passes after a
/// failure that lasted the [debounce](crate::HealthConfig::debounce) (an outage, which the
/// debounced readers said). A failure shorter than the debounce (a blip: the agent lowered
/// its weight and never said `down`) is no return: the one before stands. A drain is never
/// left: the process ends with it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Return {
    /// From when readiness passes again; `None` while it never has.
    pub(crate) at: Option<Instant>,
    /// The random delay of `at` after the recovery: the return's jitter after an outage,
    /// zero after a start or a release, which come back at once.
    pub(crate) jitter: Duration,
}

impl Return {
    /// Why readiness fails while it is on its way back, in a sentence every reader uses.
    pub(crate) const REASON: &'static str = "returning after an outage: readiness passes again once a random delay has run out, so that the fleet does not return at once";

    /// The return of a verdict that `passes` (as judged on the verdict and the hold) at
    /// `now`, after `previous`, the verdict published before it (`previous_out`: served as
    /// stale by now, or a placeholder); `jitter` draws an outage's delay, and `debounce`
    /// tells an outage from a blip. A verdict the fleet guard keeps in rotation (`kept_by_guard`)
    /// comes back at once: the guard counted it in, and the delay is for a fleet returning
    /// together, not for the capacity the guard keeps.
    pub(crate) fn after(
        previous: &ReadinessVerdict,
        previous_out: bool,
        passes: bool,
        kept_by_guard: bool,
        debounce: Duration,
        jitter: impl FnOnce() -> Duration,
        now: Instant,
    ) -> Self {
        let kept = previous.returned;
        // Failing: kept, so that the end of a blip finds it. A return still ahead stays
        // ahead: a hold placed and released meanwhile does not cut its jitter short.
        if !passes || kept.at.is_some_and(|at| at > now) {
            return kept;
        }
        if previous.passes() && !previous_out {
            return kept;
        }
        let streak = previous.streaks.verdict;
        let outage =
            !previous.ready && matches!(streak, Failing::Since(_)) && streak.lasted(debounce, now);
        let blip = !previous.ready
            && !outage
            && matches!(streak, Failing::Since(_))
            && previous.held.is_none()
            && !previous_out;
        if blip {
            return kept;
        }
        let jitter = if outage && !kept_by_guard {
            jitter()
        } else {
            Duration::ZERO
        };
        Self {
            // Cannot overflow: the config bounds the jitter by a year.
            at: Some(now + jitter),
            jitter,
        }
    }

    /// Whether the return still lies ahead at `now`: its jitter has not run out (a verdict
    /// that passes is then held out: see [`Condition::Returning`](crate::view::Condition::Returning)).
    pub(crate) fn is_pending(self, now: Instant) -> bool {
        self.at.is_some_and(|at| now < at)
    }

    /// How long readiness has been back at `now`; `None` while it never was, or is still on
    /// its way back.
    #[cfg(any(feature = "haproxy-agent", test))]
    pub(crate) fn lasted(self, now: Instant) -> Option<Duration> {
        now.checked_duration_since(self.at?)
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
    /// When it came back into rotation last, set when it is published.
    pub(crate) returned: Return,
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
            returned: Return::default(),
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

    /// The verdict with its return after `previous`, the verdict published before it
    /// (`previous_out`: served as stale by now, or a placeholder), at `now`: see
    /// [`Return::after`].
    pub(crate) fn with_return(
        mut self,
        previous: &Self,
        previous_out: bool,
        debounce: Duration,
        jitter: impl FnOnce() -> Duration,
        now: Instant,
    ) -> Self {
        let kept = self.is_kept_by_fleet_guard();
        self.returned = Return::after(
            previous,
            previous_out,
            self.passes(),
            kept,
            debounce,
            jitter,
            now,
        );
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
            returned: Return::default(),
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
            returned: Return::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::verdict::{CheckError, CheckErrorKind};
    use crate::verdict::{CheckStatus, FailDirection, Fraction};

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

    /// A verdict of `ready` checks under the hold `held`, published at `now` after
    /// `previous`, with a debounce of 4 s and a drawn jitter of 3 s.
    fn next(
        previous: &ReadinessVerdict,
        ready: bool,
        held: bool,
        now: Instant,
    ) -> ReadinessVerdict {
        let outcomes = if ready { Vec::new() } else { vec![refused()] };
        ReadinessVerdict::from_outcomes(
            outcomes,
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            held.then(|| Arc::from("deploy freeze")),
        )
        .with_streaks(previous, FailDirection::NotReady, now)
        .with_return(previous, false, DEBOUNCE, || JITTER, now)
    }

    const DEBOUNCE: Duration = Duration::from_secs(4);
    const JITTER: Duration = Duration::from_secs(3);

    /// Which transitions are a return, and which of them wait out the jitter: the start, a
    /// release and a stale verdict come back at once; an outage (a failure that lasted the
    /// debounce) after the jitter; a blip (shorter) is no return at all.
    #[test]
    fn a_return_is_jittered_after_an_outage_only() {
        let t0 = Instant::now();
        let at = |seconds: u64| t0 + Duration::from_secs(seconds);
        let placeholder = ReadinessVerdict::unavailable("no round has completed yet");

        // The start: back at once (no jitter), from the first verdict that passes.
        let started = next(&placeholder, true, false, at(0));
        assert_eq!(
            started.returned,
            Return {
                at: Some(at(0)),
                jitter: Duration::ZERO
            }
        );
        let later = next(&started, true, false, at(1));
        assert_eq!(
            later.returned, started.returned,
            "passing on: the same return"
        );

        // A blip (fails for 3 s, less than the debounce): no return, the one before stands.
        let failing = next(&later, false, false, at(2));
        let failing = next(&failing, false, false, at(4));
        assert_eq!(failing.returned, started.returned, "kept while failing");
        let after_blip = next(&failing, true, false, at(5));
        assert_eq!(after_blip.returned, started.returned, "a blip is no return");

        // An outage (fails for 5 s): back after the jitter drawn.
        let failing = next(&after_blip, false, false, at(10));
        let failing = next(&failing, false, false, at(15));
        let back = next(&failing, true, false, at(15) + Duration::from_millis(1));
        let returns_at = at(15) + Duration::from_millis(1) + JITTER;
        assert_eq!(
            back.returned,
            Return {
                at: Some(returns_at),
                jitter: JITTER
            }
        );
        assert!(back.returned.is_pending(at(16)));
        assert_eq!(back.returned.lasted(at(16)), None, "not back yet");
        assert!(!back.returned.is_pending(returns_at));
        assert_eq!(back.returned.lasted(returns_at), Some(Duration::ZERO));
        // Rounds during the jitter keep it; a hold placed and released meanwhile does too.
        let held = next(&back, true, true, at(17));
        let released = next(&held, true, false, at(17));
        assert_eq!(
            released.returned, back.returned,
            "a pending return stays ahead"
        );

        // A hold's release, long after: back at once, the slow start from the release.
        let held = next(&released, true, true, at(30));
        assert_eq!(held.returned, back.returned, "kept while held");
        let released = next(&held, true, false, at(40));
        assert_eq!(
            released.returned,
            Return {
                at: Some(at(40)),
                jitter: Duration::ZERO
            }
        );

        // A verdict that was stale (the monitor was stuck): back at once.
        let after_stale = ReadinessVerdict::from_outcomes(
            Vec::new(),
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            None,
        )
        .with_streaks(&released, FailDirection::NotReady, at(60))
        .with_return(&released, true, DEBOUNCE, || JITTER, at(60));
        assert_eq!(
            after_stale.returned,
            Return {
                at: Some(at(60)),
                jitter: Duration::ZERO
            }
        );
    }

    /// A verdict the fleet guard keeps in rotation comes back at once, whatever the outage
    /// before: the guard counted it in.
    #[test]
    fn a_verdict_the_fleet_guard_keeps_in_comes_back_at_once() {
        let t0 = Instant::now();
        let at = |seconds: u64| t0 + Duration::from_secs(seconds);
        let placeholder = ReadinessVerdict::unavailable("no round has completed yet");
        let up = next(&placeholder, true, false, at(0));
        let failing = next(&up, false, false, at(1));
        let failing = next(&failing, false, false, at(10));
        let guard = FleetGuard::decide(
            "a",
            Arc::from("database `default`"),
            &[],
            Fraction::new(0.5).unwrap(),
        );
        let kept = ReadinessVerdict::from_outcomes(
            vec![refused()],
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            None,
        )
        .with_fleet_guard(guard)
        .with_streaks(&failing, FailDirection::NotReady, at(11))
        .with_return(&failing, false, DEBOUNCE, || JITTER, at(11));
        assert!(kept.passes());
        assert_eq!(
            kept.returned,
            Return {
                at: Some(at(11)),
                jitter: Duration::ZERO
            }
        );
    }

    /// With a zero debounce every failure is an outage, and the jitter drawn is what the
    /// setting's draw gives: `[0, jitter)`, zero when it is off.
    #[test]
    fn the_jitter_drawn_stays_within_its_setting() {
        let t0 = Instant::now();
        let jitter = Duration::from_secs(5);
        let placeholder = ReadinessVerdict::unavailable("no round has completed yet");
        let start = |ready: bool, previous: &ReadinessVerdict, now: Instant, jitter: Duration| {
            ReadinessVerdict::from_outcomes(
                if ready { Vec::new() } else { vec![refused()] },
                Vec::new(),
                ReadinessRules::default(),
                SystemTime::now(),
                None,
            )
            .with_streaks(previous, FailDirection::NotReady, now)
            .with_return(
                previous,
                false,
                Duration::ZERO,
                || crate::random::part_of(jitter),
                now,
            )
        };
        let up = start(true, &placeholder, t0, jitter);
        for round in 1..200 {
            let now = t0 + Duration::from_secs(round * 10);
            let down = start(false, &up, now, jitter);
            let back = start(true, &down, now + Duration::from_secs(1), jitter);
            assert!(back.returned.jitter < jitter, "{:?}", back.returned);
            let off = start(true, &down, now + Duration::from_secs(1), Duration::ZERO);
            assert_eq!(off.returned.jitter, Duration::ZERO);
            assert_eq!(off.returned.at, Some(now + Duration::from_secs(1)));
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
