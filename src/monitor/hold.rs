//! The manual hold: readiness 503 with the operator's reason, until released.

use std::sync::{Arc, PoisonError};

use super::state::MonitorState;

impl MonitorState {
    /// Places (`Some`) or releases (`None`) the manual hold, and republishes readiness at
    /// once. Returns whether anything changed.
    pub(crate) fn set_hold(&self, reason: Option<Arc<str>>) -> bool {
        let mut hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        if *hold == reason {
            return false;
        }
        hold.clone_from(&reason);
        let current = arc_swap::Guard::into_inner(self.store.readiness());
        // Before the first round (or once the monitor stopped) there is nothing to
        // re-render: the next round applies the hold.
        if let Some(made) = current.when_made() {
            // The hold and nothing else: the round's conclusion (the fleet guard's, a
            // panicked round's reason) is what a release restores. The same round's verdict:
            // it keeps its age and its staleness.
            self.publish_readiness(current.verdict.with_hold(reason.clone()), made);
        }
        drop(hold);
        self.lifecycle_changed(reason.clone());
        match reason {
            Some(reason) => tracing::warn!(%reason, "readiness held by the operator"),
            None => tracing::info!("readiness hold released"),
        }
        true
    }

    /// The manual hold's reason, if one is in place.
    pub(crate) fn held(&self) -> Option<Arc<str>> {
        self.hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
