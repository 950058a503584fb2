//! HAProxy's agent dialect: what the agent tells HAProxy, a pure function of the judgement
//! every other reader applies.
//!
//! HAProxy reads one line of words and acts on each one it knows; a word it is not sent
//! leaves its part of the server's state as it was, and only the agent undoes what the agent
//! did. So every line states the whole state (the administrative word and, where it applies,
//! the operational one and the weight): whatever an earlier line said (this process's, or a
//! previous process's on the same address that drained before it exited), the next line
//! puts the server where this process's view says it belongs.

use std::num::NonZeroU32;
use std::time::Duration;

use bytes::Bytes;

use super::debounce;
use crate::load::Utilization;
use crate::probe::Probe;
use crate::verdict::Status;
use crate::verdict::{Audience, Cause, ReadinessVerdict, Return};
use crate::view::{Condition, Judgement, Reads, View};

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
    /// ([`passes_debounced`](super::debounce::passes_debounced)), with whether the health
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
            // On its way back after an outage, which the agent said: `down` until the
            // return's jitter runs out.
            Condition::Verdict
            | Condition::Stale
            | Condition::Unavailable
            | Condition::Starting
            | Condition::Returning => Self::Down,
        }
    }
}

/// Whether `judgement` passes once debounced by `debounce` (see
/// [`debounce::passes_debounced`]). Only readiness keeps the failure streaks this needs; the
/// other probes answer as they are.
pub(crate) fn passes_debounced(judgement: &Judgement, debounce: Duration) -> bool {
    let failing = match &judgement.read {
        Reads::Readiness(published) => published.verdict.streaks.verdict,
        _ => return judgement.passing,
    };
    debounce::passes_debounced(
        judgement.passing,
        judgement.condition,
        failing,
        debounce,
        judgement.now,
    )
}

/// How long ago readiness came back into rotation last (see [`Return`]), through a blip
/// since: what the slow start ramps by. `None` when `ready` is not readiness's judgement, or
/// readiness has not come back (never, or not yet).
pub(crate) fn back_for(ready: &Judgement) -> Option<Duration> {
    let Reads::Readiness(published) = &ready.read else {
        return None;
    };
    published.verdict.returned.lasted(ready.now)
}

/// The weight, in percent, that the slow start allows `back_for` after readiness came back
/// into rotation (see [`Return`]), over `window`: from 1% at the return, one more percent
/// every hundredth of the window, 100% once the window has passed; 100% with no window, or
/// when readiness has not come back (the state alone decides then). HAProxy reads it every
/// `agent-inter`, so its weight rises in steps of that interval.
pub(crate) fn slow_start(back_for: Option<Duration>, window: Duration) -> u8 {
    match back_for {
        Some(back) if back < window => {
            // Below 100: `back < window`.
            let hundredths = back.as_nanos() * 100 / window.as_nanos();
            u8::try_from(hundredths + 1).unwrap_or(100)
        }
        _ => 100,
    }
}

/// The lowest weight load alone asks for, in percent: a busy server takes a smaller share of
/// new sessions, never none. Load never makes the agent say `0%`, `drain`, `down` or
/// `maint`: those are the state's, and leaving rotation is for what fails, not for what is
/// busy (a fleet that is busy everywhere would otherwise depool itself).
pub(crate) const LOAD_FLOOR: u8 = 10;

/// The weight, in percent, that the load estimate allows: the capacity left, rounded
/// (`round(100 × (1 − utilization))`), never below [`LOAD_FLOOR`]; 100% without an estimate
/// ([`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity) unset).
pub(crate) fn load_weight(load: Option<Utilization>) -> u8 {
    let Some(load) = load else {
        return 100;
    };
    // In [0, 100]: a utilization is in [0, 1], never NaN.
    let left = (100.0 * (1.0 - load.get())).round() as u8;
    left.max(LOAD_FLOOR)
}

/// The highest weight a serving instance may ask for now, in percent: the lower of the slow
/// start's `ramp` (see [`slow_start`]) and the `load`'s weight (see [`load_weight`]). A
/// degraded weight lowers it further ([`Lines::line`]).
pub(crate) fn weight_ceiling(ramp: u8, load: Option<Utilization>) -> u8 {
    ramp.min(load_weight(load))
}

/// The lines the agent writes, rendered once when it starts (a weight's at compile time):
/// answering is choosing one.
#[derive(Clone, Debug)]
pub(crate) struct Lines {
    degraded_weight: u8,
    /// Whether a `down` line carries its reason ([`Details::Always`](crate::config::Details)).
    reasons: bool,
    /// `maxconn:<n>`, said on every line (`AgentConfig::maxconn`).
    maxconn: Option<NonZeroU32>,
}

/// `up ready <n>%` for every weight from 0 to 100, each with its length: rendered at compile
/// time, so that a weight the slow start asks for is a line chosen, never written, and a
/// static one (no reference count): the storm bench's agent row, median of three runs, went
/// from 9,507 to 9,027 instructions a line with this table (window zero, as the bench asks
/// for `up ready 100%`), within its run-to-run spread of about 5%.
///
/// `ready` with `up` clears a drain or maintenance this agent (or an earlier process on the
/// same address) put the server in, and `up` clears a `down`; `100%` restores a weight a
/// degraded answer or the slow start lowered.
static WEIGHTS: [([u8; 14], usize); 101] = {
    let mut lines = [([0; 14], 0); 101];
    let mut percent = 0;
    while percent <= 100 {
        lines[percent] = weight_line(percent as u8);
        percent += 1;
    }
    lines
};

/// `up ready <percent>%\n`, in a buffer of the longest's size, and its length.
const fn weight_line(percent: u8) -> ([u8; 14], usize) {
    let mut line = *b"up ready 100%\n";
    let mut len = b"up ready ".len();
    if percent >= 100 {
        len += 3;
    } else if percent >= 10 {
        line[len] = b'0' + percent / 10;
        line[len + 1] = b'0' + percent % 10;
        len += 2;
    } else {
        line[len] = b'0' + percent;
        len += 1;
    }
    line[len] = b'%';
    line[len + 1] = b'\n';
    (line, len + 2)
}

/// The line `up ready <percent>%` (at most 100).
fn up(percent: u8) -> Bytes {
    let (line, len) = &WEIGHTS[usize::from(percent.min(100))];
    Bytes::from_static(&line[..*len])
}

const DRAIN: &[u8] = b"drain\n";
const MAINT: &[u8] = b"maint\n";
/// `ready` beside `down`: a server an earlier line put in maintenance or drain shows as what
/// it is now, down, rather than as held by someone who has since released it.
const DOWN: &[u8] = b"down ready\n";

impl Lines {
    /// The lines for a degraded weight of `degraded_weight` percent; `reasons`: whether a
    /// `down` line says why; `maxconn`: the server's `maxconn` every line says.
    pub(crate) fn new(degraded_weight: u8, reasons: bool, maxconn: Option<NonZeroU32>) -> Self {
        Self {
            degraded_weight,
            reasons,
            maxconn,
        }
    }

    /// The line for `state`, under the weight the slow start and the load allow now
    /// (`ceiling`, percent: see [`weight_ceiling`]), which a degraded weight never exceeds;
    /// `view` is read only for the reason of a `down` line, and only when reasons are shown,
    /// so that the answers of a serving instance cost a pointer load and a static line.
    pub(crate) fn line(
        &self,
        state: AgentState,
        ceiling: u8,
        view: impl FnOnce() -> View,
    ) -> Bytes {
        let line = match state {
            AgentState::Up => up(ceiling),
            AgentState::Degraded => up(ceiling.min(self.degraded_weight)),
            AgentState::Drain => Bytes::from_static(DRAIN),
            AgentState::Maint => Bytes::from_static(MAINT),
            AgentState::Down if self.reasons => down_with(&reason(&view())),
            AgentState::Down => Bytes::from_static(DOWN),
        };
        match self.maxconn {
            Some(maxconn) => with_maxconn(&line, maxconn),
            None => line,
        }
    }
}

/// `line` with `maxconn:<maxconn>` after its words, before its reason (HAProxy reads what
/// follows a `#` as the reason, to the end of the line). Written per answer: the agent
/// answers once per `agent-inter`, and only when the setting is on.
fn with_maxconn(line: &[u8], maxconn: NonZeroU32) -> Bytes {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let (words, reason) = match line.iter().position(|&byte| byte == b'#') {
        Some(at) => (line[..at].trim_ascii_end(), &line[at..]),
        None => (line, &b""[..]),
    };
    let mut out = Vec::with_capacity(line.len() + 20);
    out.extend_from_slice(words);
    out.extend_from_slice(format!(" maxconn:{maxconn}").as_bytes());
    if !reason.is_empty() {
        out.push(b' ');
        out.extend_from_slice(reason);
    }
    out.push(b'\n');
    Bytes::from(out)
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
        Condition::Returning => Return::REASON.into(),
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
            // On its way back after an outage: still `down` until the jitter runs out.
            (Returning, false, false, false, Down),
            (Returning, false, false, true, Down),
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
        let lines = Lines::new(35, false, None);
        let unused = || -> View { panic!("no reason is shown: the view is not read") };
        // (state, the slow start's ramp): the line.
        for (state, ramp, expected) in [
            (AgentState::Up, 100, "up ready 100%\n"),
            (AgentState::Degraded, 100, "up ready 35%\n"),
            (AgentState::Drain, 100, "drain\n"),
            (AgentState::Maint, 100, "maint\n"),
            (AgentState::Down, 100, "down ready\n"),
            // The slow start lowers the weight; a degraded weight never exceeds it.
            (AgentState::Up, 1, "up ready 1%\n"),
            (AgentState::Up, 42, "up ready 42%\n"),
            (AgentState::Degraded, 20, "up ready 20%\n"),
            (AgentState::Degraded, 60, "up ready 35%\n"),
            (AgentState::Drain, 1, "drain\n"),
            (AgentState::Maint, 1, "maint\n"),
            (AgentState::Down, 1, "down ready\n"),
        ] {
            assert_eq!(
                lines.line(state, ramp, unused),
                expected.as_bytes(),
                "{state:?} at {ramp}%"
            );
        }
    }

    #[test]
    fn load_lowers_the_weight_never_below_its_floor() {
        let load = |fraction| Some(Utilization::new(fraction));
        // (utilization): the load's weight.
        for (utilization, weight) in [
            (None, 100),
            (load(0.0), 100),
            (load(0.004), 100),
            (load(0.006), 99),
            (load(0.25), 75),
            (load(0.5), 50),
            (load(0.85), 15),
            (load(0.9), LOAD_FLOOR),
            (load(0.97), LOAD_FLOOR),
            (load(1.0), LOAD_FLOOR),
            (load(f64::NAN), 100),
        ] {
            assert_eq!(load_weight(utilization), weight, "{utilization:?}");
        }
    }

    #[test]
    fn maxconn_rides_every_line_before_its_reason() {
        let maxconn = NonZeroU32::new(64);
        let lines = Lines::new(50, false, maxconn);
        let unused = || -> View { panic!("no reason is shown: the view is not read") };
        for (state, expected) in [
            (AgentState::Up, "up ready 70% maxconn:64\n"),
            (AgentState::Degraded, "up ready 50% maxconn:64\n"),
            (AgentState::Drain, "drain maxconn:64\n"),
            (AgentState::Maint, "maint maxconn:64\n"),
            (AgentState::Down, "down ready maxconn:64\n"),
        ] {
            assert_eq!(
                lines.line(state, 70, unused),
                expected.as_bytes(),
                "{state:?}"
            );
        }
        // HAProxy reads everything after `#` as the reason: the word goes before it.
        assert_eq!(
            with_maxconn(
                b"down ready #database default is not_ready (refused)\n",
                maxconn.unwrap()
            ),
            "down ready maxconn:64 #database default is not_ready (refused)\n".as_bytes()
        );
    }

    #[test]
    fn load_composes_with_the_state_the_slow_start_and_the_degraded_weight() {
        let lines = Lines::new(35, false, None);
        let unused = || -> View { panic!("no reason is shown: the view is not read") };
        let load = |fraction| Some(Utilization::new(fraction));
        // (state, the slow start's ramp, the load): the line. The lowest weight wins, and
        // no load turns a word into another.
        for (state, ramp, utilization, expected) in [
            (AgentState::Up, 100, None, "up ready 100%\n"),
            (AgentState::Up, 100, load(0.0), "up ready 100%\n"),
            (AgentState::Up, 100, load(0.3), "up ready 70%\n"),
            (AgentState::Up, 100, load(1.0), "up ready 10%\n"),
            // The slow start's ramp below the load's weight: the ramp.
            (AgentState::Up, 5, load(0.3), "up ready 5%\n"),
            (AgentState::Up, 1, load(1.0), "up ready 1%\n"),
            // Degraded: the lowest of the three.
            (AgentState::Degraded, 100, load(0.3), "up ready 35%\n"),
            (AgentState::Degraded, 100, load(0.8), "up ready 20%\n"),
            (AgentState::Degraded, 100, load(1.0), "up ready 10%\n"),
            (AgentState::Degraded, 8, load(0.8), "up ready 8%\n"),
            // The words the load never says, and never changes.
            (AgentState::Drain, 100, load(1.0), "drain\n"),
            (AgentState::Maint, 100, load(1.0), "maint\n"),
            (AgentState::Down, 100, load(1.0), "down ready\n"),
            (AgentState::Drain, 100, load(0.0), "drain\n"),
        ] {
            assert_eq!(
                lines.line(state, weight_ceiling(ramp, utilization), unused),
                expected.as_bytes(),
                "{state:?} at {ramp}% under {utilization:?}"
            );
        }
        // No load, whatever it is, makes a serving instance's line anything but `up ready`
        // with a weight of at least the floor.
        for percent in 0..=1000 {
            let line = lines.line(
                AgentState::Up,
                weight_ceiling(100, load(f64::from(percent) / 1000.0)),
                unused,
            );
            let weight: u8 = std::str::from_utf8(&line)
                .unwrap()
                .strip_prefix("up ready ")
                .and_then(|rest| rest.strip_suffix("%\n"))
                .unwrap()
                .parse()
                .unwrap();
            assert!((LOAD_FLOOR..=100).contains(&weight), "{percent}‰: {weight}");
        }
    }

    #[test]
    fn every_weight_has_its_line() {
        for percent in 0..=100 {
            assert_eq!(up(percent), format!("up ready {percent}%\n").as_bytes());
        }
        assert_eq!(up(200), "up ready 100%\n", "never above 100%");
    }

    #[test]
    fn the_slow_start_ramps_over_its_window() {
        let window = Duration::from_secs(10);
        let at = |millis| slow_start(Some(Duration::from_millis(millis)), window);
        // (time since the return, the weight): 1% at the return, linear, 100% at the end.
        for (millis, percent) in [
            (0, 1),
            (99, 1),
            (100, 2),
            (1_000, 11),
            (5_000, 51),
            (9_900, 100),
            (9_999, 100),
            (10_000, 100),
            (3_600_000, 100),
        ] {
            assert_eq!(at(millis), percent, "{millis} ms after the return");
        }
        // Sampled every `agent-inter` (1 s): the steps never go down, and reach 100%.
        let samples: Vec<u8> = (0..=11_000).step_by(1_000).map(at).collect();
        assert!(
            samples.windows(2).all(|pair| pair[0] <= pair[1]),
            "{samples:?}"
        );
        assert_eq!((samples[0], samples[11]), (1, 100), "{samples:?}");
        // Off, or not back (the state decides alone): the full weight.
        assert_eq!(slow_start(Some(Duration::ZERO), Duration::ZERO), 100);
        assert_eq!(slow_start(None, window), 100);
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
