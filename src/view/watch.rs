//! Following the view: woken by every change of any answer, pushed, never polled.

use std::fmt;
use std::future::pending;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;

use super::{Store, View};
use crate::util::race;

/// A subscription to a monitor's [`View`]: [`changed`](ViewWatch::changed) returns each view
/// that answers differently from the last one returned (a new verdict published, the drain
/// started, a hold placed or released, the start, a verdict gone stale, a return's delay
/// run out, a failure of readiness that has lasted the
/// [debounce](crate::HealthConfig::debounce)).
///
/// A watcher that keeps up sees every change; a slow one gets the latest view, never a queue.
/// The watch does not keep the monitor alive: once every [`HealthHandle`] and layer is gone,
/// `changed` returns `None`, as a channel's `recv` does once its senders are gone.
///
/// Staleness is found on time by the watcher itself (it sleeps until the next verdict would
/// go stale), so a monitor that is stuck, and publishes nothing, still shows up as stale; the
/// end of a return's delay and of a debounce likewise.
///
/// [`HealthHandle`]: crate::HealthHandle
pub struct ViewWatch {
    /// The monitor's store, held weakly: the monitor alone holds it.
    store: Weak<Store>,
    changes: watch::Receiver<()>,
    last: Option<View>,
}

/// How long past a verdict's staleness bound (or a return's instant, or a debounce's end) the watcher looks
/// again: `is_stale` is strict.
const PAST_THE_BOUND: Duration = Duration::from_millis(1);

impl ViewWatch {
    pub(crate) fn new(store: &Arc<Store>) -> Self {
        Self {
            changes: store.changes(),
            store: Arc::downgrade(store),
            last: None,
        }
    }

    /// The view now; the next [`changed`](Self::changed) waits for one that differs from it.
    /// `None` once the monitor is gone (every handle on it was dropped).
    pub fn current(&mut self) -> Option<View> {
        let store = self.store.upgrade()?;
        self.changes.borrow_and_update();
        let view = store.view();
        self.last = Some(view.clone());
        Some(view)
    }

    /// Waits for a view that answers differently from the last one returned; the first call
    /// returns the current view at once. `None` once the monitor is gone.
    pub async fn changed(&mut self) -> Option<View> {
        loop {
            let (view, drain) = {
                let store = self.store.upgrade()?;
                // Seen before reading, so that a change in between wakes the wait below.
                self.changes.borrow_and_update();
                let view = store.view();
                let drain = (!view.draining).then(|| {
                    let drain = store.drain().clone();
                    async move { drain.started().await }
                });
                (view, drain)
            };
            if self.last.as_ref().is_none_or(|last| !last.same_as(&view)) {
                self.last = Some(view.clone());
                return Some(view);
            }
            let change_at = view.next_change_at;
            let mut closed = false;
            race(
                async {
                    closed = self.changes.changed().await.is_err();
                },
                race(
                    async {
                        match change_at {
                            Some(at) => {
                                tokio::time::sleep_until((at + PAST_THE_BOUND).into()).await
                            }
                            None => pending().await,
                        }
                    },
                    async {
                        match drain {
                            Some(started) => started.await,
                            None => pending().await,
                        }
                    },
                ),
            )
            .await;
            if closed {
                return None;
            }
        }
    }

    /// The first view that `ready` accepts: the current one if it does, else the next
    /// changes, one by one, until one does. `None` once the monitor is gone.
    pub async fn wait_for(&mut self, mut ready: impl FnMut(&View) -> bool) -> Option<View> {
        let mut view = self.current()?;
        while !ready(&view) {
            view = self.changed().await?;
        }
        Some(view)
    }
}

impl fmt::Debug for ViewWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            store,
            changes: _,
            last,
        } = self;
        f.debug_struct("ViewWatch")
            .field("monitor_alive", &(store.strong_count() > 0))
            .field("last", last)
            .finish()
    }
}
