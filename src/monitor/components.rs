//! The registered components: their slots, their hysteresis, and their transitions.
//!
//! The health round and a `?nocache=true` computation both check the components and record
//! the results (a forced check counts toward the hysteresis like any other), and each
//! finished check counts once, however many rounds joined it.

use std::borrow::Cow;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::slot::{CheckSlot, Claim};
use super::spawner::Spawner;
use crate::component::{ComponentSpec, ComponentStatus};
use crate::config::{HealthConfig, stale_bound};
use crate::verdict::{CheckOutcome, CheckStatus, ComponentReport, TimeoutDetail};

/// Whether a round checks every component now, cadence or not (`?nocache=true`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Forced {
    No,
    Yes,
}

/// One registered component.
#[derive(Debug)]
pub(crate) struct TrackedComponent {
    spec: ComponentSpec,
    /// The component's own target, asked once (redacted): shown before its first check.
    target: Option<String>,
    pub(crate) slot: CheckSlot,
    state: Mutex<Tracked>,
}

/// Where the component stands between rounds.
#[derive(Debug)]
struct Tracked {
    /// `Unknown`, `Healthy`, or in trouble (`Degraded` / `Unhealthy` per criticality).
    status: ComponentStatus,
    since: SystemTime,
    failures: u32,
    successes: u32,
    last: Option<CheckOutcome>,
    /// When the last check this component was asked for was claimed, for its cadence.
    last_claimed: Option<Instant>,
    /// When the last finished check that was recorded started: a round that joined the same
    /// check (the health round and a bypass, say) does not count it again.
    last_recorded: Option<Instant>,
}

/// A component's part in one round: a claim on its check, or its last result reused.
#[derive(Debug)]
pub(crate) struct ComponentClaim<'a> {
    component: &'a TrackedComponent,
    claim: Option<Claim>,
}

impl TrackedComponent {
    /// Tracks `spec`'s component; see [`CheckSlot::component`] for `limit` and `carry_for`.
    pub(crate) fn new(spec: &ComponentSpec, limit: Duration, carry_for: Duration) -> Self {
        Self {
            slot: CheckSlot::component(spec, limit, carry_for),
            target: spec.component.target().map(|target| crate::redact(&target)),
            spec: spec.clone(),
            state: Mutex::new(Tracked {
                status: ComponentStatus::Unknown,
                since: SystemTime::now(),
                failures: 0,
                successes: 0,
                last: None,
                last_claimed: None,
                last_recorded: None,
            }),
        }
    }

    pub(crate) fn gates_readiness(&self) -> bool {
        self.spec.gates_readiness
    }

    /// Whether its result is shared across processes ([`ComponentSpec::shared`]).
    #[cfg(feature = "redis")]
    pub(crate) fn is_shared(&self) -> bool {
        self.spec.shared
    }

    #[cfg(feature = "redis")]
    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the shared cache's fingerprint knows of it.
    #[cfg(feature = "redis")]
    pub(crate) fn subject(&self) -> crate::redis::Subject {
        crate::redis::Subject {
            name: self.spec.name.clone(),
            target: self.target.as_deref().map(std::sync::Arc::from),
            critical: self.spec.critical,
        }
    }

    /// Takes the state another process's checks left it in (from the shared cache), and
    /// logs the transition this makes, if any: its hysteresis then counts across the fleet.
    #[cfg(feature = "redis")]
    pub(crate) fn adopt(&self, shared: &ComponentReport) {
        let mut state = self.lock();
        let previous = state.status;
        let trouble = if self.spec.critical {
            ComponentStatus::Unhealthy
        } else {
            ComponentStatus::Degraded
        };
        // The criticality is this process's to decide.
        state.status = if shared.status.is_in_trouble() {
            trouble
        } else {
            shared.status
        };
        state.since = shared.since;
        state.failures = shared.consecutive_failures;
        state.successes = shared.consecutive_successes;
        state.last.clone_from(&shared.outcome);
        let next = state.status;
        let report = self.report_of(&state);
        drop(state);
        if next != previous {
            log_transition(previous, &report);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracked> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims a check when one is due (every round without a cadence; always when
    /// `forced`, for `?nocache=true`), or reuses the last result. Synchronous, like
    /// [`CheckSlot::claim`].
    pub(crate) fn claim(
        &self,
        round_started: Instant,
        spawner: &Spawner,
        forced: Forced,
    ) -> ComponentClaim<'_> {
        let mut state = self.lock();
        let due = match (forced, self.spec.cadence, state.last_claimed) {
            (Forced::No, Some(cadence), Some(last)) => {
                round_started.saturating_duration_since(last) >= cadence
            }
            _ => true,
        };
        let claim = due.then(|| {
            state.last_claimed = Some(round_started);
            self.slot.claim(round_started, spawner)
        });
        ComponentClaim {
            component: self,
            claim,
        }
    }

    /// Where the component stands now.
    pub(crate) fn report(&self) -> ComponentReport {
        let state = self.lock();
        self.report_of(&state)
    }

    fn report_of(&self, state: &Tracked) -> ComponentReport {
        ComponentReport {
            name: self.spec.name.clone(),
            status: state.status,
            critical: self.spec.critical,
            gates_readiness: self.spec.gates_readiness,
            target: self.target.clone(),
            outcome: state.last.clone(),
            reason: self.reason(state),
            since: state.since,
            consecutive_failures: state.failures,
            consecutive_successes: state.successes,
        }
    }

    /// The rule that put the component where it is.
    fn reason(&self, state: &Tracked) -> Cow<'static, str> {
        let needed_failures = self.spec.failures_before_trouble;
        let needed_successes = self.spec.successes_before_recovery;
        let plural = |n: u32| if n == 1 { "" } else { "s" };
        match state.status {
            ComponentStatus::Unknown if state.last.is_none() => "no check has finished yet".into(),
            ComponentStatus::Unknown | ComponentStatus::Healthy if state.failures > 0 => format!(
                "{} failed check{} in a row, below failures_before_trouble ({needed_failures})",
                state.failures,
                plural(state.failures),
            )
            .into(),
            ComponentStatus::Unknown | ComponentStatus::Healthy => "the last check succeeded".into(),
            ComponentStatus::Degraded | ComponentStatus::Unhealthy if state.successes > 0 => {
                format!(
                    "{} successful check{} in a row, below successes_before_recovery ({needed_successes})",
                    state.successes,
                    plural(state.successes),
                )
                .into()
            }
            ComponentStatus::Degraded | ComponentStatus::Unhealthy => format!(
                "{} failed check{} in a row, failures_before_trouble is {needed_failures}",
                state.failures,
                plural(state.failures),
            )
            .into(),
        }
    }

    /// Records one round's result and logs the transition it makes, if any. A finished
    /// check (started at `finished_check`) already recorded by another round is not counted
    /// again.
    fn record(&self, outcome: CheckOutcome, finished_check: Option<Instant>) -> ComponentReport {
        let mut state = self.lock();
        if finished_check.is_some() && finished_check == state.last_recorded {
            return self.report_of(&state);
        }
        if finished_check.is_some() {
            state.last_recorded = finished_check;
        }
        let ok = outcome.passed();
        if ok {
            state.successes = state.successes.saturating_add(1);
            state.failures = 0;
        } else {
            state.failures = state.failures.saturating_add(1);
            state.successes = 0;
        }
        state.last = Some(outcome);
        let trouble = if self.spec.critical {
            ComponentStatus::Unhealthy
        } else {
            ComponentStatus::Degraded
        };
        let previous = state.status;
        let next = match previous {
            ComponentStatus::Unknown | ComponentStatus::Healthy
                if state.failures >= self.spec.failures_before_trouble =>
            {
                trouble
            }
            ComponentStatus::Unknown if ok => ComponentStatus::Healthy,
            ComponentStatus::Degraded | ComponentStatus::Unhealthy
                if state.successes >= self.spec.successes_before_recovery =>
            {
                ComponentStatus::Healthy
            }
            unchanged => unchanged,
        };
        if next != previous {
            state.status = next;
            state.since = SystemTime::now();
        }
        let report = self.report_of(&state);
        drop(state);
        if next != previous {
            log_transition(previous, &report);
        }
        report
    }
}

impl ComponentClaim<'_> {
    /// Waits for the check until `deadline` or the component's own timeout, whichever comes
    /// first, records the result, and reports where the component stands.
    pub(crate) async fn report(self, round_started: Instant, deadline: Instant) -> ComponentReport {
        let Some(claim) = self.claim else {
            return self.component.report();
        };
        let deadline = match self.component.spec.timeout {
            Some(timeout) => deadline.min(round_started + timeout),
            None => deadline,
        };
        let check_started = claim.check_started_at();
        let outcome = claim.outcome(deadline).await;
        // A starved round heard nothing new: the component stands where it stood.
        if outcome.detail == Some(TimeoutDetail::Starved) {
            return self.component.report();
        }
        // Cut short by this round's deadline, the check is still running: each round that
        // waits for it in vain counts, as before. A result counts once.
        let cut_short = outcome.status == CheckStatus::TimedOut && outcome.error.is_none();
        let finished_check = (!cut_short).then_some(check_started);
        self.component.record(outcome, finished_check)
    }
}

fn log_transition(previous: ComponentStatus, report: &ComponentReport) {
    let (from, to) = (previous, report.status);
    let component = &*report.name;
    let reason = &*report.reason;
    let error = report
        .outcome
        .as_ref()
        .and_then(CheckOutcome::error_or_detail)
        .unwrap_or_default();
    if to.is_in_trouble() {
        tracing::warn!(%component, %from, %to, %reason, %error, "component status changed");
    } else {
        tracing::info!(%component, %from, %to, %reason, "component status changed");
    }
}

/// How long a component's result stands in for a starved round's timeout: a health
/// verdict's staleness bound, over the component's own cadence when it is slower.
pub(crate) fn carry_for(config: &HealthConfig, spec: &ComponentSpec) -> Duration {
    let cadence = spec.cadence.unwrap_or_default().max(config.health_interval);
    stale_bound(cadence, config.readiness_timeout)
}
