//! Where the monitor's background work runs: checks and `?nocache=true` computations.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::Handle;

/// Spawns on the runtime that runs the monitor, once it has started; before that (or for a
/// monitor whose rounds a test drives by hand), on the current one.
///
/// A request can be served by another runtime than the monitor's (a second server, a test's
/// own), and that runtime may be dropped with the request's work still queued. Work that
/// other readers share (a database check that every round joins, a bypass that concurrent
/// requests wait on) must not go with it: a runtime's death costs at most its own requests.
#[derive(Debug, Default)]
pub(crate) struct Spawner {
    runtime: OnceLock<Handle>,
}

impl Spawner {
    /// Spawns from now on onto the current runtime (the monitor's, called from `run`).
    pub(crate) fn attach_to_current_runtime(&self) {
        let _ = self.runtime.set(Handle::current());
    }

    /// Spawns `task`. A runtime already shut down drops it at once, never polled: whatever
    /// it must release on every path belongs in a guard it owns from before this call.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match self.runtime.get() {
            Some(runtime) => drop(runtime.spawn(task)),
            None => drop(tokio::spawn(task)),
        }
    }
}
