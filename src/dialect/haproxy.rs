//! HAProxy's agent dialect: what the agent tells HAProxy, a pure function of the judgement
//! every other reader applies.
//!
//! HAProxy reads one line of words and acts on each one it knows; a word it is not sent
//! leaves its part of the server's state as it was, and only the agent undoes what the agent
//! did. So every line states the whole state (the administrative word and, where it applies,
//! the operational one and the weight): whatever an earlier line said (this process's, or a
//! previous process's on the same address that drained before it exited), the next line
//! puts the server where this process's view says it belongs.

use bytes::Bytes;

use crate::probe::Probe;
use crate::verdict::Status;
use crate::verdict::{Audience, Cause, ReadinessVerdict};
use crate::view::{Condition, View};

/// The longest reason a `down` line carries, in bytes: HAProxy shows it on its stats page
/// and in its logs, where a sentence is enough.
const MAX_REASON: usize = 200;

/// Where HAProxy should put the server, from readiness's judgement and health's status.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentState {
    /// Ready and healthy: `up ready 100%`.
    Up,
    /// Ready and `degraded`, or not ready for less than the debounce
    /// ([`HealthConfig::debounce`](crate::HealthConfig::debounce)): `up ready <degraded weight>%`.
    Degraded,
    /// The monitor's drain has started: `drain`.
    Drain,
    /// An operator's hold ([`HealthHandle::hold`](crate::HealthHandle::hold)): `maint`.
    Maint,
    /// Not ready for any other reason (a database, no verdict yet, a stale verdict):
    /// `down ready`.
    Down,
}

impl AgentState {
    /// The state for readiness's `condition`, whether it `passes` (the judgement
    /// `/health/ready` answers from) and whether it passes once `debounced`
    /// ([`passes_debounced`](crate::view::passes_debounced)), with whether the health
    /// verdict, as judged, is `degraded` (asked only of a ready instance, for its weight).
    ///
    /// The judgement's order decides: a drain first, then a verdict that is missing or
    /// stale, then a hold, then the verdict itself. A hold on a monitor whose verdict went
    /// stale is `down`, as `/health/ready` says `not_ready` for staleness then. HAProxy acts
    /// on `down` at once, whatever `fall` says: a verdict that has failed for less than the
    /// debounce lowers the weight instead, and the HTTP check beside the agent, which
    /// debounces, decides meanwhile.
    pub(crate) fn of(
        condition: Condition,
        passes: bool,
        debounced: bool,
        degraded: impl FnOnce() -> bool,
    ) -> Self {
        match condition {
            Condition::Draining => Self::Drain,
            Condition::Held => Self::Maint,
            Condition::Verdict if passes && degraded() => Self::Degraded,
            Condition::Verdict if passes => Self::Up,
            Condition::Verdict if debounced => Self::Degraded,
            Condition::Verdict
            | Condition::Stale
            | Condition::Unavailable
            | Condition::Starting => Self::Down,
        }
    }
}

/// The lines the agent writes, rendered once when it starts: answering is choosing one.
#[derive(Clone, Debug)]
pub(crate) struct Lines {
    degraded: Bytes,
    /// Whether a `down` line carries its reason ([`Details::Always`](crate::config::Details)).
    reasons: bool,
}

/// `ready` with `up` clears a drain or maintenance this agent (or an earlier process on the
/// same address) put the server in, and `up` clears a `down`; `100%` restores a weight a
/// degraded answer lowered.
const UP: &[u8] = b"up ready 100%\n";
const DRAIN: &[u8] = b"drain\n";
const MAINT: &[u8] = b"maint\n";
/// `ready` beside `down`: a server an earlier line put in maintenance or drain shows as what
/// it is now, down, rather than as held by someone who has since released it.
const DOWN: &[u8] = b"down ready\n";

impl Lines {
    /// The lines for a degraded weight of `degraded_weight` percent; `reasons`: whether a
    /// `down` line says why.
    pub(crate) fn new(degraded_weight: u8, reasons: bool) -> Self {
        Self {
            degraded: Bytes::from(format!("up ready {degraded_weight}%\n")),
            reasons,
        }
    }

    /// The line for `state`; `view` is read only for the reason of a `down` line, and only
    /// when reasons are shown, so that the answers of a serving instance cost a pointer load
    /// and a reference count.
    pub(crate) fn line(&self, state: AgentState, view: impl FnOnce() -> View) -> Bytes {
        match state {
            AgentState::Up => Bytes::from_static(UP),
            AgentState::Degraded => self.degraded.clone(),
            AgentState::Drain => Bytes::from_static(DRAIN),
            AgentState::Maint => Bytes::from_static(MAINT),
            AgentState::Down if self.reasons => down_with(&reason(&view())),
            AgentState::Down => Bytes::from_static(DOWN),
        }
    }
}

/// `down ready #<reason>`, the reason cut to [`MAX_REASON`] bytes of printable ASCII, so that
/// nothing a check reported can end the line early or reach HAProxy's log as a control
/// character.
fn down_with(reason: &str) -> Bytes {
    let mut line = Vec::with_capacity(DOWN.len() + 2 + MAX_REASON);
    line.extend_from_slice(b"down ready #");
    line.extend(reason.chars().take(MAX_REASON).map(|c| {
        if c == ' ' || c.is_ascii_graphic() {
            c as u8
        } else {
            b'?'
        }
    }));
    line.push(b'\n');
    Bytes::from(line)
}

/// Why readiness fails, in a sentence naming configured names and error categories only:
/// what [`Cause`] says for the minimal audience.
fn reason(view: &View) -> String {
    match view.answer(Probe::Ready).condition {
        Condition::Stale => {
            "the readiness verdict is stale (the monitor is stuck or stopped)".into()
        }
        Condition::Verdict
        | Condition::Unavailable
        | Condition::Draining
        | Condition::Held
        | Condition::Starting => readiness_cause(&view.readiness).map_or_else(
            || "not ready".into(),
            |cause| cause.describe_for(Audience::Minimal),
        ),
    }
}

/// The headline cause of a readiness verdict that fails: the first critical database that
/// did not pass, else the first component gating readiness that is in trouble, else the
/// verdict's own reason (no round yet, the monitor stopped, a round that panicked).
fn readiness_cause(verdict: &ReadinessVerdict) -> Option<Cause> {
    if let Some(outcome) = verdict
        .databases
        .iter()
        .find(|outcome| outcome.critical && !outcome.passed())
    {
        return Some(Cause::Database {
            name: outcome.name.clone(),
            status: outcome.status,
            kind: outcome.error_kind(),
            optional: false,
        });
    }
    if let Some(report) = verdict
        .components
        .iter()
        .find(|report| report.status.is_in_trouble())
    {
        return Some(Cause::Component {
            name: report.name.clone(),
            status: report.status,
            critical: report.critical,
        });
    }
    verdict.reason.map(|why| Cause::NoVerdict { why })
}

/// Whether health, as judged (`status` of [`Probe::Health`]'s judgement with its
/// `condition`), is `degraded`: a fresh verdict that says so.
pub(crate) fn degraded(condition: Condition, status: &str) -> bool {
    condition == Condition::Verdict && status == Status::Degraded.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_has_its_word() {
        use AgentState::*;
        use Condition::*;
        // (condition, passes, passes once debounced, health degraded): the word.
        for (condition, passes, debounced, degraded, expected) in [
            (Verdict, true, true, false, Up),
            (Verdict, true, true, true, Degraded),
            (Verdict, false, false, false, Down),
            (Verdict, false, false, true, Down),
            // Failing for less than the debounce: a lower weight, never `down`.
            (Verdict, false, true, false, Degraded),
            (Verdict, false, true, true, Degraded),
            (Draining, false, false, false, Drain),
            (Draining, false, false, true, Drain),
            (Held, false, false, false, Maint),
            (Held, false, false, true, Maint),
            (Stale, false, false, false, Down),
            (Unavailable, false, false, false, Down),
            (Starting, false, false, false, Down),
        ] {
            assert_eq!(
                AgentState::of(condition, passes, debounced, || degraded),
                expected,
                "{condition:?} passes={passes} debounced={debounced} degraded={degraded}"
            );
        }
    }

    #[test]
    fn the_lines_are_haproxys_words() {
        let lines = Lines::new(35, false);
        let unused = || -> View { panic!("no reason is shown: the view is not read") };
        for (state, expected) in [
            (AgentState::Up, "up ready 100%\n"),
            (AgentState::Degraded, "up ready 35%\n"),
            (AgentState::Drain, "drain\n"),
            (AgentState::Maint, "maint\n"),
            (AgentState::Down, "down ready\n"),
        ] {
            assert_eq!(lines.line(state, unused), expected.as_bytes(), "{state:?}");
        }
    }

    #[test]
    fn a_reason_is_one_line_of_printable_ascii() {
        let line = down_with("database main is not_ready (refused)");
        assert_eq!(line, "down ready #database main is not_ready (refused)\n");
        let line = down_with("a\r\nb\u{7}c\u{e9}#d");
        assert_eq!(line, "down ready #a??b?c?#d\n");
        let long = "x".repeat(1000);
        let line = down_with(&long);
        assert_eq!(line.len(), "down ready #".len() + MAX_REASON + 1);
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
    }

    #[test]
    fn degraded_needs_a_fresh_verdict_that_says_so() {
        assert!(degraded(Condition::Verdict, "degraded"));
        assert!(!degraded(Condition::Verdict, "healthy"));
        assert!(!degraded(Condition::Verdict, "unhealthy"));
        assert!(!degraded(Condition::Stale, "unavailable"));
        assert!(!degraded(Condition::Draining, "draining"));
    }
}
