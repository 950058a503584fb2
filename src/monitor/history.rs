//! What each check did over the last hour: per database and component, the rounds' outcomes
//! in a ring of fixed capacity, the last transitions with their causes, and a flap count.
//!
//! Fed from the one place where a round learns a check's result,
//! [`Claim::outcome`](super::slot::Claim::outcome), for every round that asks (readiness,
//! health, `?nocache=true`): a finished check is recorded once, however many rounds joined
//! it; a round that waited in vain for a check still running records its timeout. A starved
//! round (see [`TimeoutDetail::Starved`](crate::verdict::TimeoutDetail)) heard nothing new
//! and records nothing.
//!
//! Read only by the admin server's history (`/health/history`, the page) and the flap metric,
//! each time they are asked: a probe never reads it, and the published verdicts the probes
//! read carry none of it.
//!
//! # Memory
//!
//! Bounded per check whatever the cadence: faster rounds cover less time, never more
//! memory.
//!
//! - A round's sample is [`Sample`], 16 bytes; [`ROUNDS_KEPT`] (3,600, an hour at the default
//!   one-second readiness cadence) are kept, allocated with the monitor: 57,600 bytes.
//! - A transition is [`Transition`], 40 bytes, plus its cause: at most [`MAX_CAUSE_CHARS`]
//!   characters (800 bytes of UTF-8 at most); [`TRANSITIONS_KEPT`] (20) are kept: at most
//!   16,800 bytes.
//! - The flap count's buckets and the ring's bookkeeping: under 300 bytes.
//!
//! So at most 74,400 bytes per check (58,400 for a check that never failed), under 1.5 MB for
//! 20 checks; 20 checks that flapped every round of an hour hold 1,248,000 bytes, as
//! `tests::twenty_checks_over_an_hour_of_rounds` measures from the rings' allocations.

// Kept whatever the features, so that every build records the same way; only the admin
// server (`/health/history`, the page) reads it whole, the metrics its flap counts.
#![cfg_attr(
    not(feature = "admin"),
    allow(dead_code, reason = "read whole by the admin server alone")
)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::check::CheckErrorKind;
use crate::verdict::{CheckOutcome, CheckStatus};

/// The rounds kept per check: an hour at the default readiness cadence (one second).
pub(crate) const ROUNDS_KEPT: usize = 3_600;

/// The transitions kept per check, the newest ones.
pub(crate) const TRANSITIONS_KEPT: usize = 20;

/// The longest cause kept with a transition, in characters; the rest is cut.
pub(crate) const MAX_CAUSE_CHARS: usize = 200;

/// The flap count's window, in whole minutes: the current minute and the nine before it.
pub(crate) const FLAP_WINDOW_MINUTES: u64 = 10;

/// A check's history: written by the rounds, read by the page, its JSON and the metric.
#[derive(Debug)]
pub(crate) struct History {
    /// What the flap count's minutes are counted from (monotonic, unlike the wall clock the
    /// rounds are stamped with for display).
    created: Instant,
    rings: Mutex<Rings>,
}

#[derive(Debug)]
struct Rings {
    rounds: VecDeque<Sample>,
    transitions: VecDeque<Transition>,
    /// When the last finished check recorded started: a round that joined it adds nothing.
    last_check: Option<Instant>,
    flaps: FlapCounts,
}

/// One round's outcome for one check: 16 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// When the round learnt it, in milliseconds since the Unix epoch.
    at_ms: u64,
    /// How long the round waited for the check, in microseconds (saturating at 71 minutes,
    /// far past any check limit).
    elapsed_us: u32,
    pub(crate) status: CheckStatus,
    /// The category of what went wrong (`None` when the check passed).
    pub(crate) kind: Option<CheckErrorKind>,
}

impl Sample {
    /// When the round learnt the outcome, in milliseconds since the Unix epoch.
    pub(crate) fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// How long the round waited for the check.
    pub(crate) fn elapsed(&self) -> Duration {
        Duration::from_micros(u64::from(self.elapsed_us))
    }
}

/// A change of a check's status between two rounds, with its cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Transition {
    pub(crate) at: SystemTime,
    /// `None` for the check's first outcome.
    pub(crate) from: Option<CheckStatus>,
    pub(crate) to: CheckStatus,
    pub(crate) kind: Option<CheckErrorKind>,
    /// What went wrong (the error, redacted as every error is, or the monitor's note on a
    /// timeout), without control characters and cut to [`MAX_CAUSE_CHARS`]; `None` when the
    /// check passed.
    pub(crate) cause: Option<Box<str>>,
}

/// Flaps counted by the minute, over the last [`FLAP_WINDOW_MINUTES`]: exact whatever the
/// cadence, in a fixed room.
#[derive(Debug, Default)]
struct FlapCounts {
    /// `(minute, flaps in it)`, the minute at `minute % FLAP_WINDOW_MINUTES`.
    minutes: [(u64, u32); FLAP_WINDOW_MINUTES as usize],
}

impl FlapCounts {
    fn add(&mut self, minute: u64) {
        // In range: the index is below the array's length.
        #[allow(clippy::cast_possible_truncation)]
        let bucket = &mut self.minutes[(minute % FLAP_WINDOW_MINUTES) as usize];
        if bucket.0 != minute {
            *bucket = (minute, 0);
        }
        bucket.1 = bucket.1.saturating_add(1);
    }

    fn within(&self, now: u64) -> u32 {
        self.minutes
            .iter()
            .filter(|(minute, _)| *minute <= now && now - minute < FLAP_WINDOW_MINUTES)
            .map(|(_, flaps)| flaps)
            .sum()
    }
}

impl History {
    pub(crate) fn new() -> Self {
        Self {
            created: crate::clock::now(),
            rings: Mutex::new(Rings {
                rounds: VecDeque::with_capacity(ROUNDS_KEPT),
                transitions: VecDeque::with_capacity(TRANSITIONS_KEPT),
                last_check: None,
                flaps: FlapCounts::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rings> {
        self.rings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records what a round learnt: `outcome`, from the check that started at `finished`
    /// (`None` when the round's deadline cut the check short). A finished check already
    /// recorded (another round joined it) is not recorded again.
    pub(crate) fn record(&self, outcome: &CheckOutcome, finished: Option<Instant>) {
        let at = SystemTime::now();
        let minute = crate::clock::since(self.created).as_secs() / 60;
        let mut rings = self.lock();
        if finished.is_some() {
            if finished == rings.last_check {
                return;
            }
            rings.last_check = finished;
        }
        let previous = rings.rounds.back().map(|round| round.status);
        if rings.rounds.len() == ROUNDS_KEPT {
            rings.rounds.pop_front();
        }
        rings.rounds.push_back(Sample {
            at_ms: u64::try_from(
                at.duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis(),
            )
            .unwrap_or(u64::MAX),
            elapsed_us: u32::try_from(outcome.elapsed.as_micros()).unwrap_or(u32::MAX),
            status: outcome.status,
            kind: outcome.error_kind(),
        });
        if previous == Some(outcome.status) {
            return;
        }
        let passed = |status| status == CheckStatus::Passed;
        if previous.is_some_and(|previous| passed(previous) != passed(outcome.status)) {
            rings.flaps.add(minute);
        }
        if rings.transitions.len() == TRANSITIONS_KEPT {
            rings.transitions.pop_front();
        }
        rings.transitions.push_back(Transition {
            at,
            from: previous,
            to: outcome.status,
            kind: outcome.error_kind(),
            cause: cause(outcome).map(|cause| {
                cause
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(MAX_CAUSE_CHARS)
                    .collect()
            }),
        });
    }

    /// The times the check went from passing to not passing or back over the last
    /// [`FLAP_WINDOW_MINUTES`] (the current minute and the nine before it).
    pub(crate) fn flaps(&self) -> u32 {
        let now = crate::clock::since(self.created).as_secs() / 60;
        self.lock().flaps.within(now)
    }

    /// A copy of this history, for a reader: the check's `name`, what it is, whether it is
    /// `critical` and its (redacted) `target` beside it.
    pub(crate) fn snapshot(
        &self,
        name: Arc<str>,
        kind: CheckKind,
        critical: bool,
        target: Option<Arc<str>>,
    ) -> CheckHistory {
        let (rounds, transitions, flaps) = self.read();
        CheckHistory {
            name,
            kind,
            critical,
            target,
            rounds,
            transitions,
            flaps,
        }
    }

    /// A copy of the rounds (oldest first) and transitions (oldest first), and the flap count.
    fn read(&self) -> (Vec<Sample>, Vec<Transition>, u32) {
        let now = crate::clock::since(self.created).as_secs() / 60;
        let rings = self.lock();
        (
            rings.rounds.iter().copied().collect(),
            rings.transitions.iter().cloned().collect(),
            rings.flaps.within(now),
        )
    }
}

/// What went wrong in `outcome`: the error's message (its category is kept beside it), or
/// the monitor's note on a timeout.
fn cause(outcome: &CheckOutcome) -> Option<&str> {
    match (&outcome.error, outcome.detail) {
        (Some(error), _) => Some(error.message()),
        (None, Some(detail)) => Some(detail.describe()),
        (None, None) => None,
    }
}

/// What a check is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CheckKind {
    Database,
    Component,
}

impl CheckKind {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Database => "database",
            Self::Component => "component",
        }
    }
}

/// One check's history, copied out for a reader.
#[derive(Clone, Debug)]
pub(crate) struct CheckHistory {
    pub(crate) name: Arc<str>,
    pub(crate) kind: CheckKind,
    pub(crate) critical: bool,
    /// What the check connects to, redacted.
    pub(crate) target: Option<Arc<str>>,
    /// Oldest first, at most [`ROUNDS_KEPT`].
    pub(crate) rounds: Vec<Sample>,
    /// Oldest first, at most [`TRANSITIONS_KEPT`].
    pub(crate) transitions: Vec<Transition>,
    /// See [`History::flaps`].
    pub(crate) flaps: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::CheckError;

    fn outcome(status: CheckStatus, error: Option<&str>) -> CheckOutcome {
        CheckOutcome {
            name: "default".into(),
            status,
            elapsed: Duration::from_millis(3),
            running_for: None,
            error: error.map(|message| CheckError::new(CheckErrorKind::Refused, message)),
            detail: None,
            critical: true,
            target: None,
            details: None,
        }
    }

    #[test]
    fn a_round_is_sixteen_bytes() {
        assert_eq!(size_of::<Sample>(), 16);
        assert_eq!(size_of::<Transition>(), 40);
    }

    #[test]
    fn transitions_carry_their_causes_and_flaps_are_counted() {
        let history = History::new();
        let passed = outcome(CheckStatus::Passed, None);
        let refused = outcome(
            CheckStatus::Failed,
            Some("connecting to postgres://app:hunter2@db/app: Connection refused\n<script>"),
        );
        for each in [&passed, &passed, &refused, &refused, &passed] {
            history.record(each, None);
        }
        let (rounds, transitions, flaps) = history.read();
        assert_eq!(rounds.len(), 5);
        assert_eq!(rounds[2].kind, Some(CheckErrorKind::Refused));
        assert_eq!(rounds[0].elapsed(), Duration::from_millis(3));
        let changes: Vec<_> = transitions.iter().map(|t| (t.from, t.to)).collect();
        assert_eq!(
            changes,
            [
                (None, CheckStatus::Passed),
                (Some(CheckStatus::Passed), CheckStatus::Failed),
                (Some(CheckStatus::Failed), CheckStatus::Passed),
            ]
        );
        let cause = transitions[1].cause.as_deref().unwrap();
        assert!(cause.contains("Connection refused"), "{cause}");
        assert!(!cause.contains("hunter2"), "redacted: {cause}");
        assert!(!cause.contains('\n'), "no control characters: {cause:?}");
        assert_eq!(transitions[2].cause, None);
        assert_eq!(flaps, 2, "down and up again");
        // Failed to timed out is a transition, not a flap.
        history.record(&refused, None);
        history.record(&outcome(CheckStatus::TimedOut, None), None);
        assert_eq!(history.flaps(), 3);
        assert_eq!(history.read().1.len(), 5);
    }

    #[test]
    fn a_finished_check_counts_once_however_many_rounds_joined_it() {
        let history = History::new();
        let check = Instant::now();
        let passed = outcome(CheckStatus::Passed, None);
        history.record(&passed, Some(check));
        history.record(&passed, Some(check));
        assert_eq!(history.read().0.len(), 1);
        // Rounds that waited in vain count, each.
        let timed_out = outcome(CheckStatus::TimedOut, None);
        history.record(&timed_out, None);
        history.record(&timed_out, None);
        history.record(&passed, Some(check + Duration::from_secs(1)));
        assert_eq!(history.read().0.len(), 4);
    }

    #[test]
    fn the_rings_keep_the_newest_and_the_causes_are_bounded() {
        let history = History::new();
        let long = "x".repeat(1_000);
        for round in 0..ROUNDS_KEPT + 100 {
            let status = if round % 2 == 0 {
                CheckStatus::Passed
            } else {
                CheckStatus::Failed
            };
            let error = (status == CheckStatus::Failed).then_some(long.as_str());
            history.record(&outcome(status, error), None);
        }
        let (rounds, transitions, _) = history.read();
        assert_eq!(rounds.len(), ROUNDS_KEPT);
        assert_eq!(transitions.len(), TRANSITIONS_KEPT);
        assert_eq!(transitions.last().unwrap().to, CheckStatus::Failed);
        let cause = transitions.last().unwrap().cause.as_deref().unwrap();
        assert_eq!(cause.chars().count(), MAX_CAUSE_CHARS);
    }

    #[test]
    fn flaps_are_counted_by_the_minute_over_the_window() {
        let mut counts = FlapCounts::default();
        counts.add(3);
        counts.add(3);
        counts.add(7);
        assert_eq!(counts.within(7), 3);
        assert_eq!(counts.within(12), 3, "minute 3 is the oldest of 3..=12");
        assert_eq!(counts.within(13), 1, "minute 3 has left the window");
        // Minute 13 takes minute 3's bucket.
        counts.add(13);
        assert_eq!(counts.within(13), 2);
        assert_eq!(counts.within(17), 1);
        assert_eq!(counts.within(2), 0, "nothing is counted before it happened");
    }

    /// The memory the module docs state, for 20 checks each over an hour's worth of rounds
    /// at a one-second cadence (3,600 rounds), flapping as often as a check can (every round
    /// a transition, half of them with a cause past the bound): computed from what the rings
    /// really hold (their capacity, which never grows past the room allocated with the
    /// monitor, and each cause's length). `benches/history.rs` measures a whole monitor's
    /// heap against a counting allocator.
    #[test]
    fn twenty_checks_over_an_hour_of_rounds() {
        const CHECKS: usize = 20;
        let long = "é".repeat(MAX_CAUSE_CHARS + 50);
        let failed = outcome(CheckStatus::Failed, Some(&long));
        let passed = outcome(CheckStatus::Passed, None);
        let histories: Vec<History> = (0..CHECKS).map(|_| History::new()).collect();
        let held = |history: &History| {
            let rings = history.lock();
            rings.rounds.capacity() * size_of::<Sample>()
                + rings.transitions.capacity() * size_of::<Transition>()
                + rings
                    .transitions
                    .iter()
                    .filter_map(|transition| transition.cause.as_deref())
                    .map(str::len)
                    .sum::<usize>()
        };
        let allocated: usize = histories.iter().map(held).sum();
        for history in &histories {
            for round in 0..ROUNDS_KEPT {
                history.record(if round % 2 == 0 { &failed } else { &passed }, None);
            }
        }
        let filled: usize = histories.iter().map(held).sum();
        let rounds = ROUNDS_KEPT * size_of::<Sample>();
        let transitions = TRANSITIONS_KEPT * size_of::<Transition>();
        assert_eq!(allocated, CHECKS * (rounds + transitions));
        // Half the transitions kept carry a cause of 200 two-byte characters.
        let causes = TRANSITIONS_KEPT / 2 * MAX_CAUSE_CHARS * 2;
        assert_eq!(filled, CHECKS * (rounds + transitions + causes));
        assert!(filled / CHECKS < 75_000, "{filled}");
        let _ = writeln!(
            std::io::stderr(),
            "history of {CHECKS} checks over {ROUNDS_KEPT} rounds: {allocated} bytes with the monitor, {filled} bytes filled ({} per check)",
            filled / CHECKS,
        );
    }

    use std::io::Write as _;
}
