//! The rules of what the monitor publishes (9 to 15 of the [timeline test](super::super)),
//! against what the checks did, within each documented bound: a round's conclusion and each
//! outcome in it, the cadence, a component's state, the answers that must agree, the
//! transitions logged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    COMPONENT, Entry, Fresh, Gap, Model, Readiness, SLACK, default_database, passes_readiness,
};
use crate::component::ComponentStatus;
use crate::timeline_tests::schedule::{Behaviour, What, ms};
use crate::verdict::{
    CheckErrorKind, CheckOutcome, CheckStatus, HealthVerdict, Status, TimeoutDetail,
};

pub(super) const ONE_CLOCK: &str =
    "rule 13, one clock: /health and readiness agree within a readiness interval";
pub(super) const HISTORY: &str =
    "rule 14: the history holds what was published, within a readiness interval";

impl Model<'_> {
    /// A readiness round's verdict: its conclusion follows its outcomes, each outcome what
    /// its check did, the hold the operator's, the history what the round learnt.
    pub(super) fn check_readiness_round(&mut self, entry: &Entry) {
        let verdict = &entry.readiness.verdict;
        let setup = &self.schedule.setup;
        let database_fails = verdict.databases.iter().any(|outcome| {
            outcome.critical && !passes_readiness(outcome.status, setup.fail_direction)
        });
        let component_fails = verdict
            .components
            .iter()
            .any(|report| report.status.is_in_trouble());
        if verdict.ready == (database_fails || component_fails) {
            self.find(
                entry.at,
                "rule 9: readiness is its checks' conclusion",
                format!(
                    "readiness published ready={} from database={:?}, gating components={:?}",
                    verdict.ready,
                    verdict
                        .databases
                        .iter()
                        .map(|o| o.status)
                        .collect::<Vec<_>>(),
                    verdict
                        .components
                        .iter()
                        .map(|r| r.status)
                        .collect::<Vec<_>>(),
                ),
            );
        }
        // A hold placed or released at the instant of a round may come before or after it.
        let held_before = self.held(
            entry
                .at
                .checked_sub(Duration::from_nanos(1))
                .unwrap_or(entry.at),
        );
        if verdict.held.is_some() != self.held(entry.at) && verdict.held.is_some() != held_before {
            self.find(
                entry.at,
                "rule 9: a hold acts at once",
                format!("readiness published held={:?}", verdict.held),
            );
        }
        if let (Some(made), Some(outcome)) = (
            entry.readiness.when_made(),
            default_database(&verdict.databases),
        ) {
            self.check_outcome("readiness", made.round_started, entry.at, outcome);
        }
    }

    /// A health round's verdict (or one a readiness round republished with its outcomes):
    /// its status follows its outcomes, each outcome what its check did.
    pub(super) fn check_health_round(&mut self, entry: &Entry) {
        let verdict = &entry.health.verdict;
        let status = health_status(verdict);
        if verdict.status != status {
            self.find(
                entry.at,
                "rule 9: health's status follows its checks",
                format!(
                    "/health published {} where its database {:?} and components {:?} make it {}",
                    verdict.status.as_str(),
                    verdict.database.as_ref().map(|o| o.status),
                    verdict
                        .components
                        .iter()
                        .map(|r| (r.critical, r.status))
                        .collect::<Vec<_>>(),
                    status.as_str()
                ),
            );
        }
        if let (Some(made), Some(outcome)) = (entry.health.when_made(), &verdict.database) {
            self.check_outcome("health", made.round_started, entry.at, outcome);
        }
    }

    /// An outcome of a round that started at `started` and was published at `at`: what its
    /// check did meanwhile, or, in a round the runtime woke late, the last result heard.
    fn check_outcome(
        &mut self,
        round: &str,
        started: Instant,
        at: Instant,
        outcome: &CheckOutcome,
    ) {
        // A round may join a check started up to the longest check before it, and a block
        // meanwhile delays that check's end by as much.
        let to = self.since(at);
        let reach = self.longest_check() + SLACK;
        let mut from = self.since(started).saturating_sub(reach);
        loop {
            // Each block from then to the round's end held that check's end back as long.
            let held_back: Duration = self
                .events
                .iter()
                .filter_map(|event| match event.what {
                    What::Block(long) if event.at <= to && event.at + long >= from => Some(long),
                    _ => None,
                })
                .sum();
            let earlier = self.since(started).saturating_sub(reach + held_back);
            if earlier >= from {
                break;
            }
            from = earlier;
        }
        if outcome.detail == Some(TimeoutDetail::Starved) {
            if !self.blocked(self.since(started), to) {
                self.find(
                    at,
                    "rule 10: starvation is the runtime's lateness",
                    format!(
                        "a {round} round started at {} and published at {} carried the last result heard as if starved, with the runtime never blocked",
                        ms(self.since(started)),
                        ms(to)
                    ),
                );
            }
            return;
        }
        let behaviours = self.behaviours(true, from, to);
        let mut allowed: Vec<CheckStatus> = behaviours
            .iter()
            .flat_map(|b| outcomes(*b).iter().copied())
            .collect();
        // A runtime woken late may see a round's deadline before the check that answered
        // meanwhile: less than `STARVED_AFTER` late, or once the result heard last is older
        // than its bound, that timeout counts (`monitor/slot.rs`).
        if self.blocked(self.since(started), to) {
            allowed.push(CheckStatus::TimedOut);
        }
        if !allowed.contains(&outcome.status) {
            self.find(
                at,
                "rule 10: an outcome is what its check did",
                format!(
                    "a {round} round started at {} published the database {} while it {} meanwhile",
                    ms(self.since(started)),
                    outcome.status.as_str(),
                    behaviours
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", then "),
                ),
            );
        }
    }

    /// A gap that lasted until `until`: past one readiness interval and its deadline, while
    /// the verdicts were fresh, the runtime not blocked, and (for the probes' answers) the
    /// process not draining, it is a contradiction the rules forbid.
    pub(super) fn check_gap(&mut self, gap: &Gap, until: Instant) {
        let setup = &self.schedule.setup;
        let bound = setup.readiness_interval + setup.deadline + SLACK;
        let stale = [gap.since, until]
            .iter()
            .any(|at| self.stale(*at).iter().any(|s| *s));
        let judged = !self.blocked(self.since(gap.since), self.since(until))
            && !stale
            && (gap.rule != ONE_CLOCK || !self.draining(until));
        if judged && until.saturating_duration_since(gap.since) > bound {
            let what = format!(
                "{} from {} to {} (bound {})",
                gap.what,
                ms(self.since(gap.since)),
                ms(self.since(until)),
                ms(bound)
            );
            self.find(until, gap.rule, what);
        }
    }

    /// The rules that hold at every instant: the cadence, a component's state against its
    /// checks, and how long a contradiction may last.
    pub(in crate::timeline_tests) fn check_at(&mut self, t: Instant) {
        let setup = self.schedule.setup.clone();
        let now = self.since(t);
        let state = self.state_at(t).cloned();
        // Rule 11: readiness publishes every interval (once its first round had time to).
        let window = setup.readiness_interval + setup.deadline + SLACK;
        if now > setup.deadline + SLACK && !self.blocked(now.saturating_sub(window * 2), now) {
            let fresh_from = state
                .as_ref()
                .and_then(|s| s.readiness.as_ref())
                .map(|r| self.since(r.fresh.fresh_from));
            if fresh_from.is_none_or(|from| now - from > window) {
                self.find(
                    t,
                    "rule 11: readiness publishes every interval",
                    format!(
                        "the last readiness round was published at {fresh_from:?} (bound {})",
                        ms(window)
                    ),
                );
            }
        }
        // Rules 13 and 14: a gap that goes on.
        for gap in state.as_ref().map(|s| s.gaps.clone()).unwrap_or_default() {
            self.check_gap(&gap, t);
        }
        // Rule 12: a component's state follows its checks within its rounds.
        let (Some(component), Some(state)) = (setup.component.as_ref(), state) else {
            return;
        };
        let Some(health) = state.health.as_ref().filter(|_| !self.stale(t)[1]) else {
            return;
        };
        let status = health
            .verdict
            .components
            .iter()
            .find(|r| *r.name == *COMPONENT)
            .map_or(ComponentStatus::Unknown, |r| r.status);
        // Its rounds, their deadline, and one readiness interval: a health round that ends
        // after a readiness round republished `/health` (SPEC 14) is not published, and its
        // components show with the next readiness round.
        let round = |rounds: u32| {
            setup.health_interval * rounds + setup.deadline + setup.readiness_interval + SLACK
        };
        let (trouble_after, healthy_after) = (
            round(component.failures_before_trouble),
            round(component.successes_before_recovery),
        );
        if self.blocked(now.saturating_sub(trouble_after.max(healthy_after)), now) {
            return;
        }
        let bad = |b: &Behaviour| !matches!(b, Behaviour::Passes(_));
        // A check that hung answers as the next behaviour says from the instant it changes:
        // a slow answer after a hang may still come within a round that joined it.
        let failing_from = now.saturating_sub(trouble_after);
        let during = self.behaviours(false, failing_from, now);
        let mut sequence = self.behaviours(
            false,
            failing_from.saturating_sub(self.longest_check()),
            failing_from,
        );
        sequence.pop();
        let first = sequence.len();
        sequence.extend(&during);
        let resumed_slowly = (first.max(1)..sequence.len())
            .any(|i| matches!(sequence[i - 1..=i], [Behaviour::Hangs, Behaviour::Slow(_)]));
        let must_trouble = now >= trouble_after && during.iter().all(bad) && !resumed_slowly;
        let must_not = self
            .behaviours(false, now.saturating_sub(healthy_after), now)
            .iter()
            .all(|b| !bad(b));
        let trouble = if component.critical {
            ComponentStatus::Unhealthy
        } else {
            ComponentStatus::Degraded
        };
        if must_trouble && status != trouble {
            self.find(
                t,
                "rule 12: a failing component is in trouble within its rounds",
                format!(
                    "component `cache` is {} although its checks failed for the last {} ({} failure(s) needed, health every {})",
                    status.as_str(),
                    ms(trouble_after),
                    component.failures_before_trouble,
                    ms(setup.health_interval)
                ),
            );
        }
        if must_not && status.is_in_trouble() {
            self.find(
                t,
                "rule 12: a passing component recovers within its rounds",
                format!(
                    "component `cache` is {} although its checks passed for the last {}",
                    status.as_str(),
                    ms(healthy_after)
                ),
            );
        }
    }

    /// The transitions logged (`readiness is now ...`, at the instant each was written)
    /// against the instants readiness's answer changed: each change logged once, when it
    /// happens (a return when its jitter runs out), and nothing else. A drain and a stale
    /// verdict are not transitions of the verdict: lines around them are not judged.
    pub(in crate::timeline_tests) fn check_log(
        &mut self,
        lines: &[(Instant, String)],
        end: Instant,
    ) {
        let setup = self.schedule.setup.clone();
        let bound = setup.readiness_interval + setup.deadline + SLACK;
        // Readiness's answer as the log names it, at each instant it changes.
        let mut changes: Vec<(Instant, bool)> = Vec::new();
        let mut last: Option<bool> = None;
        for (index, state) in self.states.iter().enumerate() {
            let Some(r) = &state.readiness else { continue };
            let next_at = self.states.get(index + 1).map_or(end, |next| next.at);
            let mut note = |at: Instant, passes: bool| {
                if last != Some(passes) {
                    changes.push((at, passes));
                    last = Some(passes);
                }
            };
            let returning = |at: Instant| r.returns_at.is_some_and(|back| at < back);
            note(state.at, r.passes() && !returning(state.at));
            if let Some(back) = r
                .returns_at
                .filter(|back| *back > state.at && *back < next_at)
            {
                note(back, r.passes());
            }
        }
        let unjudged = |model: &Self, at: Instant| {
            let around = model.since(at).saturating_sub(bound);
            model.draining(at)
                || model.stale(at)[0]
                || model.stale(at.checked_sub(bound).unwrap_or(at))[0]
                || model.blocked(around, model.since(at))
        };
        let mut lines = lines.iter().peekable();
        let nexts: Vec<Instant> = changes.iter().skip(1).map(|(at, _)| *at).collect();
        for (index, (at, passes)) in changes.into_iter().enumerate() {
            if at + bound > end || unjudged(self, at) {
                // Too near the end to be logged yet, or not the verdict's change: its lines
                // are let go, those of the change after it kept.
                let until = nexts
                    .get(index)
                    .map_or(at + bound, |next| (at + bound).min(*next));
                while lines
                    .peek()
                    .is_some_and(|(logged, _)| *logged + SLACK < until || *logged <= at)
                {
                    lines.next();
                }
                continue;
            }
            let word = if passes { "ready" } else { "not_ready" };
            // Lines before the change say something that had not happened.
            while let Some((logged, line)) = lines.peek() {
                if *logged + SLACK >= at {
                    break;
                }
                if !unjudged(self, *logged) {
                    let what = format!(
                        "`{line}` logged at {} where readiness had not changed",
                        ms(self.since(*logged))
                    );
                    self.find(
                        *logged,
                        "rule 15: a transition is logged when the answer changes",
                        what,
                    );
                    return;
                }
                lines.next();
            }
            match lines.next() {
                Some((logged, line))
                    if line.ends_with(&format!("now {word}")) && *logged <= at + bound => {}
                other => {
                    let what = format!(
                        "readiness became {word} at {}; the log's next line: {:?}",
                        ms(self.since(at)),
                        other.map(|(logged, line)| (ms(self.since(*logged)), line))
                    );
                    self.find(
                        at,
                        "rule 15: a transition is logged when the answer changes",
                        what,
                    );
                    return;
                }
            }
        }
    }
}

/// Where two answers of the process say different things of one check: `/health` and
/// readiness of the default database and of the component (rule 13), and each check's history
/// and what was published of it last (rule 14: readiness's database, `/health`'s component).
pub(super) fn gaps(
    readiness: Option<&Readiness>,
    health: Option<&Fresh<HealthVerdict>>,
    history: &[(Arc<str>, Option<CheckStatus>)],
) -> Vec<(&'static str, String)> {
    let mut gaps = Vec::new();
    let readiness = readiness.map(|r| &r.fresh.verdict);
    let health = health.map(|h| &h.verdict);
    let ready_database = readiness.and_then(|r| default_database(&r.databases));
    let health_database = health.and_then(|h| h.database.as_ref());
    if let (Some(ready), Some(healthy)) = (ready_database, health_database)
        && ready.passed() != healthy.passed()
    {
        let what = format!(
            "readiness's database is {}, /health's {}",
            ready.status.as_str(),
            healthy.status.as_str()
        );
        gaps.push((ONE_CLOCK, what));
    }
    let component = |reports: &[crate::verdict::ComponentReport]| {
        reports.iter().find(|r| *r.name == *COMPONENT).cloned()
    };
    let gating = readiness.and_then(|r| component(&r.components));
    let shown = health.and_then(|h| component(&h.components));
    if let (Some(gating), Some(shown)) = (&gating, &shown)
        && gating.status != shown.status
    {
        let what = format!(
            "readiness's component is {}, /health's {}",
            gating.status.as_str(),
            shown.status.as_str()
        );
        gaps.push((ONE_CLOCK, what));
    }
    let recorded = |name: &str| {
        history
            .iter()
            .find(|(check, _)| **check == *name)
            .and_then(|(_, last)| *last)
    };
    // A starved round's outcome stands in for nothing it heard: nothing is recorded.
    let published = [
        (
            "default",
            ready_database
                .filter(|o| o.detail != Some(TimeoutDetail::Starved))
                .cloned(),
        ),
        (COMPONENT, shown.and_then(|report| report.outcome)),
    ];
    for (name, outcome) in published {
        if let Some(outcome) = outcome {
            let recorded = recorded(name);
            if recorded != Some(outcome.status) {
                let what = format!(
                    "`{name}` was published {} while its history's last round is {}",
                    outcome.status.as_str(),
                    recorded.map_or("none", CheckStatus::as_str)
                );
                gaps.push((HISTORY, what));
            }
        }
    }
    gaps
}

/// `/health`'s status from its checks (SPEC 2, 6): the default database down is unhealthy
/// (an error when its check panicked), a critical component in trouble unhealthy, another
/// degraded.
fn health_status(verdict: &HealthVerdict) -> Status {
    let Some(database) = &verdict.database else {
        return Status::Unhealthy;
    };
    let trouble = |critical: bool| {
        verdict
            .components
            .iter()
            .any(|report| report.critical == critical && report.status.is_in_trouble())
    };
    if database.critical && !database.passed() {
        let panicked = database
            .error
            .as_ref()
            .is_some_and(|e| e.kind() == CheckErrorKind::Panicked);
        if panicked {
            Status::Error
        } else {
            Status::Unhealthy
        }
    } else if trouble(true) {
        Status::Unhealthy
    } else if trouble(false) {
        Status::Degraded
    } else {
        Status::Healthy
    }
}

/// What a round may conclude of a check that behaves so.
fn outcomes(behaviour: Behaviour) -> &'static [CheckStatus] {
    match behaviour {
        Behaviour::Passes(_) => &[CheckStatus::Passed],
        Behaviour::Refused | Behaviour::QueryFails(_) => &[CheckStatus::Failed],
        Behaviour::Hangs => &[CheckStatus::TimedOut],
        // Past the deadline, unless a later round joins the check before it ends.
        Behaviour::Slow(_) => &[CheckStatus::TimedOut, CheckStatus::Passed],
    }
}
