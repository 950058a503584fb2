//! Whether the process has finished starting: the answer of `/health/startup`.
//!
//! Started means the first readiness round has completed and, when the application asked to
//! declare it ([`HealthConfig::startup_waits_for_mark`](crate::HealthConfig::startup_waits_for_mark)),
//! that it has called [`HealthHandle::mark_started`](crate::HealthHandle::mark_started). Both
//! only ever turn on, so once started, always started: a startup probe that failed later
//! would restart a pod that is merely busy or draining.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub(crate) struct Startup {
    waits_for_mark: bool,
    first_round: AtomicBool,
    marked: AtomicBool,
}

impl Startup {
    pub(crate) fn new(waits_for_mark: bool) -> Self {
        Self {
            waits_for_mark,
            first_round: AtomicBool::new(false),
            marked: AtomicBool::new(false),
        }
    }

    /// Returns whether this call was the first.
    pub(crate) fn first_round_completed(&self) -> bool {
        !self.first_round.swap(true, Ordering::AcqRel)
    }

    /// Returns whether this call was the first.
    pub(crate) fn mark(&self) -> bool {
        !self.marked.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn is_started(&self) -> bool {
        self.first_round.load(Ordering::Acquire)
            && (!self.waits_for_mark || self.marked.load(Ordering::Acquire))
    }

    /// Where the start is.
    pub(crate) fn phase(&self) -> Phase {
        if !self.first_round.load(Ordering::Acquire) {
            Phase::FirstRound
        } else if self.waits_for_mark && !self.marked.load(Ordering::Acquire) {
            Phase::Application
        } else {
            Phase::Started
        }
    }
}

/// Where the start is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The first readiness round has not completed.
    FirstRound,
    /// The application has not called `mark_started()`, and the configuration waits for it.
    Application,
    Started,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_after_the_first_round() {
        let startup = Startup::new(false);
        assert!(!startup.is_started());
        assert_eq!(startup.phase(), Phase::FirstRound);
        startup.first_round_completed();
        assert!(startup.is_started());
        assert_eq!(startup.phase(), Phase::Started);
    }

    #[test]
    fn waits_for_the_application_when_asked() {
        let startup = Startup::new(true);
        assert!(startup.mark(), "the first mark counts");
        assert!(!startup.mark());
        assert!(!startup.is_started(), "the first round has not completed");
        let startup = Startup::new(true);
        startup.first_round_completed();
        assert_eq!(startup.phase(), Phase::Application);
        startup.mark();
        assert!(startup.is_started());
        assert_eq!(startup.phase(), Phase::Started);
    }
}
