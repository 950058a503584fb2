//! Where a drain stands, for the readers that show it (metrics, the operator's page): its
//! phase with its times, the requests in flight and the long-lived connections open by name.
//! Read from the drain's own state: nothing here decides when the drain ends.
// Read by the readers that show a drain (features `metrics`, `opentelemetry`, `page`); the
// timeout's log line reads `by_name` in every build.
#![cfg_attr(
    not(any(feature = "metrics", feature = "opentelemetry", feature = "page")),
    allow(dead_code)
)]

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

/// The phase a drain is in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DrainPhase {
    /// No drain has started: the server serves.
    Serving,
    /// The drain delay: readiness answers 503 while requests are still served, so that the
    /// load balancers stop sending them.
    Delay,
    /// The close window: the registered long-lived connections are told to close, each at
    /// its turn.
    CloseWindow,
    /// After the close window, waiting for what is still in flight, until the timeout.
    Waiting,
    /// The timeout ended the drain with requests or connections still in flight.
    TimedOut,
    /// The drain is over: nothing was left in flight.
    Drained,
}

impl DrainPhase {
    /// Every phase, in the order a drain goes through them (tied to [`Self::as_str`]'s
    /// exhaustive `match` by a test).
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry")),
        allow(dead_code)
    )]
    pub(crate) const ALL: [Self; 6] = [
        Self::Serving,
        Self::Delay,
        Self::CloseWindow,
        Self::Waiting,
        Self::TimedOut,
        Self::Drained,
    ];

    /// Its name in metrics' labels: `serving`, `delay`, `close_window`, `waiting`,
    /// `timed_out` or `drained`.
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry")),
        allow(dead_code)
    )]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Serving => "serving",
            Self::Delay => "delay",
            Self::CloseWindow => "close_window",
            Self::Waiting => "waiting",
            Self::TimedOut => "timed_out",
            Self::Drained => "drained",
        }
    }

    /// Whether the drain runs: started, and not over.
    pub(crate) const fn is_running(self) -> bool {
        match self {
            Self::Delay | Self::CloseWindow | Self::Waiting => true,
            Self::Serving | Self::TimedOut | Self::Drained => false,
        }
    }
}

/// When a started drain's phases begin and end, on the wall clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct DrainTimes {
    pub(crate) started: SystemTime,
    /// The end of the delay: the start of the close window.
    pub(crate) delay_over: SystemTime,
    pub(crate) close_window_over: SystemTime,
    /// The latest the drain can end.
    pub(crate) timeout: SystemTime,
    /// When it ended, once it has.
    pub(crate) ended: Option<SystemTime>,
}

impl DrainTimes {
    /// The times of a drain started at `started` with these settings, ended after `ended`
    /// (from the start) if it has.
    pub(crate) fn new(
        started: SystemTime,
        delay: Duration,
        close_window: Duration,
        timeout: Duration,
        ended: Option<Duration>,
    ) -> Self {
        let at = |after: Duration| started.checked_add(after).unwrap_or(started);
        Self {
            started,
            delay_over: at(delay),
            close_window_over: at(delay + close_window),
            timeout: at(timeout),
            ended: ended.map(at),
        }
    }
}

/// A drain's figures at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DrainProgress {
    pub(crate) phase: DrainPhase,
    /// `None` before the drain starts.
    pub(crate) times: Option<DrainTimes>,
    /// Requests in flight, the long-lived connections included (what the drain waits for).
    pub(crate) in_flight: usize,
    /// The long-lived connections open under every name registered so far (zero for a name
    /// whose connections have all closed), in the order of the names.
    pub(crate) long_lived: Vec<(&'static str, usize)>,
}

/// What changes when a drain's figures do, read without a lock: a rendering of a
/// [`DrainProgress`] is current while its stamp is the drain's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DrainStamp {
    pub(crate) phase: DrainPhase,
    pub(crate) in_flight: usize,
    /// The long-lived connections' registrations and drops so far.
    pub(crate) long_lived_changes: u64,
}

/// The most names a log line lists: the others are counted.
const MAX_NAMES: usize = 8;

/// `chat: 2, events: 1`: the connections open under each name, the most first (then by
/// name), at most [`MAX_NAMES`] of them, then `and N more names`; names with none open are
/// left out.
pub(crate) fn by_name(named: &[(&'static str, usize)]) -> String {
    let mut named: Vec<_> = named.iter().filter(|(_, open)| *open > 0).collect();
    named.sort_by(|(a, open_a), (b, open_b)| open_b.cmp(open_a).then(a.cmp(b)));
    let mut text = String::new();
    for (index, (name, open)) in named.iter().take(MAX_NAMES).enumerate() {
        if index > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{name}: {open}");
    }
    if named.len() > MAX_NAMES {
        let _ = write!(text, ", and {} more names", named.len() - MAX_NAMES);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_is_listed_once_in_its_order() {
        let names: Vec<_> = DrainPhase::ALL.iter().map(|phase| phase.as_str()).collect();
        assert_eq!(
            names,
            [
                "serving",
                "delay",
                "close_window",
                "waiting",
                "timed_out",
                "drained"
            ]
        );
        // A new phase fails to compile here until it is listed above.
        for phase in DrainPhase::ALL {
            match phase {
                DrainPhase::Serving
                | DrainPhase::Delay
                | DrainPhase::CloseWindow
                | DrainPhase::Waiting
                | DrainPhase::TimedOut
                | DrainPhase::Drained => {}
            }
        }
    }

    #[test]
    fn names_are_listed_the_most_first_and_bounded() {
        assert_eq!(by_name(&[]), "");
        assert_eq!(by_name(&[("events", 1), ("chat", 2)]), "chat: 2, events: 1");
        assert_eq!(by_name(&[("closed", 0), ("chat", 2)]), "chat: 2");
        assert_eq!(by_name(&[("b", 1), ("a", 1)]), "a: 1, b: 1");
        const NAMES: [&str; 10] = ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"];
        let many: Vec<_> = NAMES.iter().map(|name| (*name, 1)).collect();
        assert_eq!(
            by_name(&many),
            "n0: 1, n1: 1, n2: 1, n3: 1, n4: 1, n5: 1, n6: 1, n7: 1, and 2 more names"
        );
    }

    #[test]
    fn the_times_follow_the_settings() {
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let times = DrainTimes::new(
            started,
            Duration::from_secs(5),
            Duration::from_secs(7),
            Duration::from_secs(20),
            Some(Duration::from_secs(13)),
        );
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(times.delay_over, at(105));
        assert_eq!(times.close_window_over, at(112));
        assert_eq!(times.timeout, at(120));
        assert_eq!(times.ended, Some(at(113)));
    }
}
