//! A check's last hour as an inline SVG, drawn on the server: its statuses as a strip, its
//! transitions as marks, and (with details) its latency as a sparkline. Pure geometry over
//! the history; the template writes the numbers and the titles (escaped like every text).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::monitor::history::{Sample, Transition};
use crate::verdict::CheckStatus;

/// The time the timeline spans, ending now.
pub(super) const WINDOW: Duration = Duration::from_secs(3_600);

/// Columns across the window: 30 s each. A column shows its worst status and its slowest
/// round, so a spike or a failure of one round stays visible however many rounds share it.
const COLUMNS: u64 = 120;

/// The drawing's size in SVG units (the page scales it to its width).
pub(super) const WIDTH: u64 = 720;
pub(super) const HEIGHT: u64 = 56;

const COLUMN_WIDTH: u64 = WIDTH / COLUMNS;
/// The latency sparkline's band: from the top to above the strip.
const SPARK_TOP: f64 = 4.0;
const SPARK_HEIGHT: f64 = 34.0;
/// The status strip's band, at the bottom.
pub(super) const STRIP_Y: u64 = 42;
pub(super) const STRIP_HEIGHT: u64 = 14;

/// What the template draws for one check.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Timeline {
    /// The status strip: one cell per column that holds a round.
    pub(super) cells: Vec<Cell>,
    /// One mark per transition within the window.
    pub(super) marks: Vec<Mark>,
    /// The latency sparkline, with details only.
    pub(super) latency: Option<Latency>,
}

/// One column of the status strip.
#[derive(Debug, PartialEq)]
pub(super) struct Cell {
    pub(super) x: u64,
    pub(super) width: u64,
    /// `ok`, `warn` or `fail`: the worst status of its rounds.
    pub(super) class: &'static str,
    /// What the column holds, in words.
    pub(super) title: String,
}

/// A transition on the timeline.
#[derive(Debug, PartialEq)]
pub(super) struct Mark {
    pub(super) x: u64,
    /// The class of the status it went to.
    pub(super) class: &'static str,
    pub(super) title: String,
}

/// The latency sparkline: an SVG path, and the slowest round it shows.
#[derive(Debug, PartialEq)]
pub(super) struct Latency {
    /// `M x y L x y ...`: numbers only.
    pub(super) path: String,
    /// The slowest round of the window, in words (`12.3 ms`): the top of the scale.
    pub(super) peak: String,
}

/// The class a status is drawn with.
pub(super) const fn class(status: CheckStatus) -> &'static str {
    match status {
        CheckStatus::Passed => "ok",
        CheckStatus::TimedOut => "warn",
        CheckStatus::Failed => "fail",
    }
}

/// How bad a status is, for a column's worst.
const fn severity(status: CheckStatus) -> u8 {
    match status {
        CheckStatus::Passed => 0,
        CheckStatus::TimedOut => 1,
        CheckStatus::Failed => 2,
    }
}

/// What one column gathered.
#[derive(Clone, Copy)]
struct Column {
    rounds: u32,
    worst: CheckStatus,
    kind: Option<crate::check::CheckErrorKind>,
    slowest: Duration,
}

/// The timeline of `rounds` and `transitions` (oldest first) over the [`WINDOW`] ending at
/// `now`; the sparkline only when `details` (latencies are timings).
pub(super) fn timeline(
    rounds: &[Sample],
    transitions: &[Transition],
    now: SystemTime,
    details: bool,
) -> Timeline {
    let end = millis(now);
    let start = end.saturating_sub(millis_of(WINDOW));
    let span = end - start;
    let column_of = |at: u64| -> Option<u64> {
        (at >= start && at <= end).then(|| ((at - start) * COLUMNS / span.max(1)).min(COLUMNS - 1))
    };
    let mut columns: Vec<Option<Column>> = vec![None; usize::try_from(COLUMNS).unwrap_or(0)];
    for round in rounds {
        let Some(index) = column_of(round.at_ms()) else {
            continue;
        };
        let column = &mut columns[usize::try_from(index).unwrap_or(0)];
        let gathered = column.get_or_insert(Column {
            rounds: 0,
            worst: round.status,
            kind: round.kind,
            slowest: Duration::ZERO,
        });
        gathered.rounds += 1;
        if severity(round.status) > severity(gathered.worst) {
            gathered.worst = round.status;
            gathered.kind = round.kind;
        }
        gathered.slowest = gathered.slowest.max(round.elapsed());
    }
    let column_start = |index: u64| start + span * index / COLUMNS;
    let cells = (0..COLUMNS)
        .zip(&columns)
        .filter_map(|(index, column)| {
            let column = column.as_ref()?;
            let from = clock(column_start(index));
            let to = clock(column_start(index + 1));
            let kind = column
                .kind
                .map(|kind| format!(" ({kind})"))
                .unwrap_or_default();
            let rounds = column.rounds;
            let plural = if rounds == 1 { "" } else { "s" };
            let slowest = if details {
                format!(", slowest {}", duration_words(column.slowest))
            } else {
                String::new()
            };
            Some(Cell {
                x: index * COLUMN_WIDTH,
                width: COLUMN_WIDTH,
                class: class(column.worst),
                title: format!(
                    "{from}–{to} UTC: {}{kind}, {rounds} round{plural}{slowest}",
                    column.worst
                ),
            })
        })
        .collect();
    let marks = transitions
        .iter()
        .filter_map(|transition| {
            let at = millis(transition.at);
            column_of(at)?;
            let x = (at - start) * WIDTH / span.max(1);
            Some(Mark {
                x: x.min(WIDTH - 1),
                class: class(transition.to),
                title: transition_words(transition, details),
            })
        })
        .collect();
    let latency = details.then(|| sparkline(&columns)).flatten();
    Timeline {
        cells,
        marks,
        latency,
    }
}

/// The sparkline through each column's slowest round, scaled to the window's slowest; `None`
/// when no column holds a round.
fn sparkline(columns: &[Option<Column>]) -> Option<Latency> {
    let peak = columns
        .iter()
        .flatten()
        .map(|column| column.slowest)
        .max()?;
    // A scale of at least a millisecond: sub-millisecond noise does not fill the band.
    let scale = peak.max(Duration::from_millis(1)).as_secs_f64();
    let mut path = String::new();
    let mut drawing = false;
    for (index, column) in (0_u64..).zip(columns) {
        let Some(column) = column else {
            drawing = false;
            continue;
        };
        let x = index * COLUMN_WIDTH + COLUMN_WIDTH / 2;
        let y = SPARK_TOP + SPARK_HEIGHT * (1.0 - column.slowest.as_secs_f64() / scale);
        if !path.is_empty() {
            path.push(' ');
        }
        // A stretch starts with a dot (`h0`, drawn by the round line cap), so that a column
        // alone shows.
        if drawing {
            path.push_str(&format!("L{x} {y:.1}"));
        } else {
            path.push_str(&format!("M{x} {y:.1} h0"));
        }
        drawing = true;
    }
    Some(Latency {
        path,
        peak: duration_words(peak),
    })
}

/// A transition in words: when, from and to, its category and (with details) its cause.
pub(super) fn transition_words(transition: &Transition, details: bool) -> String {
    let at = clock(millis(transition.at));
    let from = transition
        .from
        .map_or_else(|| "first round".to_owned(), |from| from.to_string());
    let kind = transition
        .kind
        .map(|kind| format!(" ({kind})"))
        .unwrap_or_default();
    let cause = transition
        .cause
        .as_deref()
        .filter(|_| details)
        .map(|cause| format!(": {cause}"))
        .unwrap_or_default();
    format!("{at} UTC: {from} → {}{kind}{cause}", transition.to)
}

/// `12.3 ms`, `850 µs`, `2.5 s`.
pub(super) fn duration_words(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros < 1_000 {
        format!("{micros} µs")
    } else if micros < 1_000_000 {
        format!("{:.1} ms", duration.as_secs_f64() * 1_000.0)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// `HH:MM:SS` of `at_ms` (UTC).
pub(super) fn clock(at_ms: u64) -> String {
    let seconds = at_ms / 1_000;
    let (hours, minutes, seconds) = (seconds / 3_600 % 24, seconds / 60 % 60, seconds % 60);
    format!("{hours:02}:{minutes:02}:{seconds:02}")
}

pub(super) fn millis(at: SystemTime) -> u64 {
    millis_of(at.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::check::{CheckError, CheckErrorKind};
    use crate::monitor::history::History;
    use crate::verdict::CheckOutcome;

    fn outcome(status: CheckStatus, elapsed_ms: u64) -> CheckOutcome {
        CheckOutcome {
            name: "default".into(),
            status,
            elapsed: Duration::from_millis(elapsed_ms),
            running_for: None,
            error: (status == CheckStatus::Failed)
                .then(|| CheckError::new(CheckErrorKind::Refused, "Connection refused")),
            detail: None,
            critical: true,
            target: None,
            details: None,
        }
    }

    fn recorded(outcomes: &[CheckOutcome]) -> (Vec<Sample>, Vec<Transition>) {
        let history = History::new();
        for (check, outcome) in outcomes.iter().enumerate() {
            let started = Instant::now() + Duration::from_secs(u64::try_from(check).unwrap());
            history.record(outcome, Some(started));
        }
        let snapshot = history.snapshot(
            "default".into(),
            crate::monitor::history::CheckKind::Database,
            true,
            None,
        );
        (snapshot.rounds, snapshot.transitions)
    }

    #[test]
    fn the_last_rounds_fill_the_last_column() {
        let (rounds, transitions) = recorded(&[
            outcome(CheckStatus::Passed, 2),
            outcome(CheckStatus::Failed, 8),
            outcome(CheckStatus::Passed, 4),
        ]);
        let now = SystemTime::now() + Duration::from_millis(10);
        let timeline = timeline(&rounds, &transitions, now, true);
        assert_eq!(timeline.cells.len(), 1);
        let cell = &timeline.cells[0];
        assert_eq!((cell.x, cell.class), (WIDTH - COLUMN_WIDTH, "fail"));
        assert!(
            cell.title
                .ends_with("UTC: failed (refused), 3 rounds, slowest 8.0 ms"),
            "{}",
            cell.title
        );
        assert_eq!(timeline.marks.len(), 3);
        assert_eq!(timeline.marks[1].class, "fail");
        assert!(
            timeline.marks[1]
                .title
                .ends_with("UTC: passed → failed (refused): Connection refused"),
            "{}",
            timeline.marks[1].title
        );
        let latency = timeline.latency.unwrap();
        assert_eq!(latency.peak, "8.0 ms");
        assert_eq!(
            latency.path,
            format!("M{} 4.0 h0", WIDTH - COLUMN_WIDTH / 2)
        );
    }

    #[test]
    fn without_details_no_latency_and_no_cause() {
        let (rounds, transitions) = recorded(&[
            outcome(CheckStatus::Passed, 2),
            outcome(CheckStatus::Failed, 8),
        ]);
        let timeline = timeline(&rounds, &transitions, SystemTime::now(), false);
        assert_eq!(timeline.latency, None);
        assert!(
            timeline.marks[1]
                .title
                .ends_with("passed → failed (refused)")
        );
        assert!(!timeline.cells[0].title.contains("slowest"));
    }

    #[test]
    fn rounds_and_transitions_before_the_window_are_left_out() {
        let (rounds, transitions) = recorded(&[outcome(CheckStatus::Passed, 2)]);
        let later = SystemTime::now() + WINDOW + Duration::from_secs(60);
        assert_eq!(
            timeline(&rounds, &transitions, later, true),
            Timeline::default()
        );
    }

    #[test]
    fn words() {
        assert_eq!(duration_words(Duration::from_micros(850)), "850 µs");
        assert_eq!(duration_words(Duration::from_micros(12_345)), "12.3 ms");
        assert_eq!(duration_words(Duration::from_millis(2_500)), "2.5 s");
        assert_eq!(clock(3_723_000 + 86_400_000), "01:02:03");
    }
}
