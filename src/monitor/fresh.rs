//! Fresh computations for `?nocache=true`: concurrent bypasses share one computation, and a
//! bypass within `nocache_min_interval` of the last one reuses its result.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::verdict::{HealthVerdict, PoolVerdict};
use crate::view::published::Published;

/// A fresh computation's result: both verdicts it published.
#[derive(Clone, Debug)]
pub(crate) struct Fresh {
    pub(crate) health: Arc<Published<HealthVerdict>>,
    pub(crate) pool: Arc<Published<PoolVerdict>>,
}

/// The computation in flight, if any, and the last one's result.
#[derive(Debug, Default)]
pub(crate) struct FreshRounds {
    state: Mutex<FreshState>,
}

#[derive(Debug, Default)]
struct FreshState {
    running: Option<watch::Receiver<Option<Fresh>>>,
    last: Option<Fresh>,
}

impl FreshRounds {
    fn lock(&self) -> MutexGuard<'_, FreshState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What a bypass at `now` waits on: the last computation's result when it is younger than
    /// `min_interval`, else the computation in flight, else a new one ([`Begun::New`]): the
    /// caller runs it, and ends it with [`finish`](Self::finish) and
    /// [`abandon`](Self::abandon).
    pub(crate) fn begin(&self, min_interval: Duration, now: Instant) -> Begun {
        let mut state = self.lock();
        if let Some(last) = &state.last
            && last.health.age(now) < min_interval
        {
            return Begun::Existing(FreshWait::Ready(last.clone()));
        }
        if let Some(running) = &state.running {
            return Begun::Existing(FreshWait::Wait(running.clone()));
        }
        let (sender, receiver) = watch::channel(None);
        state.running = Some(receiver.clone());
        Begun::New {
            sender,
            wait: FreshWait::Wait(receiver),
        }
    }

    /// Records a computation's result, for the bypasses within the rate limit.
    pub(crate) fn finish(&self, fresh: Fresh) {
        self.lock().last = Some(fresh);
    }

    /// Ends the computation in flight, finished or not: the next bypass starts over instead
    /// of waiting on a dead channel.
    pub(crate) fn abandon(&self) {
        self.lock().running = None;
    }
}

/// What [`FreshRounds::begin`] found.
#[derive(Debug)]
pub(crate) enum Begun {
    /// A result to reuse or a computation to join.
    Existing(FreshWait),
    /// Nothing to join: the caller computes, and sends the result on `sender`; `wait` is
    /// this bypass's own wait.
    New {
        sender: watch::Sender<Option<Fresh>>,
        wait: FreshWait,
    },
}

/// Where a bypass gets its fresh verdicts from.
#[derive(Debug)]
pub(crate) enum FreshWait {
    /// A computation finished within the rate limit: reuse it.
    Ready(Fresh),
    /// Wait for the computation in flight.
    Wait(watch::Receiver<Option<Fresh>>),
}

impl FreshWait {
    /// The fresh verdicts; `None` when the computation could not finish (runtime shutdown).
    pub(crate) async fn fresh(self) -> Option<Fresh> {
        match self {
            Self::Ready(fresh) => Some(fresh),
            Self::Wait(mut receiver) => receiver
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|fresh| fresh.clone()),
        }
    }
}
