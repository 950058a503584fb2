//! One check (a database's or a component's), shared by every round that wants it.
//!
//! A slot runs at most one check at a time. A round that finds a check in flight (started by
//! an earlier round, the other cadence, or a `?nocache=true` bypass) waits for that check
//! instead of starting another: a stalled database never gets a pile of connection attempts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::spawner::Spawner;
use crate::check::{
    CheckError, CheckErrorKind, CheckFuture, CheckReport, DatabaseCheck, PoolStats,
};
use crate::component::{Component, ComponentSpec};
use crate::config::DatabaseEntry;
use crate::util::panic_message;
use crate::verdict::{CheckOutcome, CheckStatus, TimeoutDetail};

/// What a finished check reports: its result and how long it ran.
type Finished = Option<(Result<CheckReport, CheckError>, Duration)>;

#[derive(Debug)]
pub(crate) struct CheckSlot {
    inner: Arc<SlotInner>,
}

/// What a slot checks: the two kinds share the one mechanism.
#[derive(Clone, Debug)]
enum Checked {
    Database(Arc<dyn DatabaseCheck>),
    Component(Arc<dyn Component>),
}

impl Checked {
    fn check(&self) -> CheckFuture {
        match self {
            Self::Database(check) => check.check(),
            Self::Component(component) => component.check(),
        }
    }
}

#[derive(Debug)]
struct SlotInner {
    name: Arc<str>,
    check: Checked,
    /// Reported on every outcome.
    critical: bool,
    /// What the check connects to, asked once (redacted): shown unless a passing check's
    /// report names another.
    target: Option<Arc<str>>,
    /// How long a check may run before it is dropped.
    limit: Duration,
    in_flight: Mutex<Option<InFlight>>,
    checks_started: AtomicU64,
    /// Checks that finished with an error, by category: written once per finished check.
    failures: Mutex<Vec<(CheckErrorKind, u64)>>,
}

#[derive(Clone, Debug)]
struct InFlight {
    started_at: Instant,
    finished: watch::Receiver<Finished>,
}

/// A round's claim on a slot's check, to be waited on until the round's deadline.
#[derive(Debug)]
pub(crate) struct Claim {
    name: Arc<str>,
    critical: bool,
    target: Option<Arc<str>>,
    in_flight: InFlight,
    /// Whether the check was already running before this round began.
    inherited: bool,
    round_started: Instant,
}

impl CheckSlot {
    fn with(name: Arc<str>, check: Checked, critical: bool, limit: Duration) -> Self {
        let target = match &check {
            Checked::Database(check) => check.target(),
            Checked::Component(component) => component.target(),
        };
        Self {
            inner: Arc::new(SlotInner {
                name,
                check,
                critical,
                target: target.map(|target| Arc::from(crate::redact(&target))),
                limit,
                in_flight: Mutex::new(None),
                checks_started: AtomicU64::new(0),
                failures: Mutex::new(Vec::new()),
            }),
        }
    }

    pub(crate) fn database(entry: &DatabaseEntry, critical: bool, limit: Duration) -> Self {
        Self::with(
            entry.name.clone(),
            Checked::Database(entry.check.clone()),
            critical,
            limit,
        )
    }

    pub(crate) fn component(spec: &ComponentSpec, limit: Duration) -> Self {
        Self::with(
            spec.name.clone(),
            Checked::Component(spec.component.clone()),
            spec.critical,
            limit,
        )
    }

    /// The configured name.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.inner.name
    }

    /// What it checks, redacted.
    pub(crate) fn target(&self) -> Option<Arc<str>> {
        self.inner.target.clone()
    }

    /// Whether its outcomes are critical.
    pub(crate) fn is_critical(&self) -> bool {
        self.inner.critical
    }

    /// The database's vendor; `"component"` for a component.
    pub(crate) fn vendor(&self) -> &'static str {
        match &self.inner.check {
            Checked::Database(check) => check.vendor(),
            Checked::Component(_) => "component",
        }
    }

    pub(crate) fn pool_stats(&self) -> Option<PoolStats> {
        match &self.inner.check {
            Checked::Database(check) => check.pool_stats(),
            Checked::Component(_) => None,
        }
    }

    pub(crate) fn checks_started(&self) -> u64 {
        self.inner.checks_started.load(Ordering::Relaxed)
    }

    /// The checks that finished with an error so far: this slot's name, the category, and
    /// how many.
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    pub(crate) fn failures(&self) -> Vec<(Arc<str>, CheckErrorKind, u64)> {
        let failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        failures
            .iter()
            .map(|&(kind, count)| (self.inner.name.clone(), kind, count))
            .collect()
    }

    /// Joins the check in flight, or starts one on `spawner`. Synchronous, so that a round
    /// starts every check before it waits on any.
    pub(crate) fn claim(&self, round_started: Instant, spawner: &Spawner) -> Claim {
        let mut slot = self
            .inner
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(in_flight) = &*slot {
            return Claim {
                name: self.inner.name.clone(),
                critical: self.inner.critical,
                target: self.inner.target.clone(),
                inherited: in_flight.started_at < round_started,
                in_flight: in_flight.clone(),
                round_started,
            };
        }
        let (finished_tx, finished) = watch::channel(None);
        let in_flight = InFlight {
            started_at: Instant::now(),
            finished,
        };
        *slot = Some(in_flight.clone());
        drop(slot);
        let started_at = in_flight.started_at;
        self.inner.checks_started.fetch_add(1, Ordering::Relaxed);
        let inner = self.inner.clone();
        // Frees the slot however the task ends: made before spawning, because a task dropped
        // before its first poll (its runtime shut down) never runs a line of its own.
        let free = FreeOnDrop(inner.clone());
        spawner.spawn(async move {
            let check = inner.check.clone();
            // A task of its own, so that a panic (even in the synchronous part of `check`)
            // becomes this round's error instead of taking the monitor down.
            let mut task = tokio::spawn(async move { check.check().await });
            let result = match tokio::time::timeout(inner.limit, &mut task).await {
                Ok(Ok(result)) => result,
                Ok(Err(error)) if error.is_panic() => Err(CheckError::new(
                    CheckErrorKind::Panicked,
                    format!(
                        "the check panicked: {}",
                        panic_message(&*error.into_panic())
                    ),
                )),
                Ok(Err(_)) => Err(CheckError::new(
                    CheckErrorKind::Other,
                    "the check was cancelled",
                )),
                Err(_) => {
                    // Dropping the check releases what it holds (PostgresCheck discards the
                    // connection), so the next round starts afresh.
                    task.abort();
                    Err(CheckError::new(
                        CheckErrorKind::Timeout,
                        format!(
                            "the check was abandoned after {}; the next round starts a new one",
                            humantime::format_duration(inner.limit)
                        ),
                    ))
                }
            };
            let elapsed = started_at.elapsed();
            if let Err(error) = &result {
                inner.count_failure(error.kind());
            }
            // Free the slot first: whoever sees the result may start the next check at once.
            drop(free);
            let _ = finished_tx.send(Some((result, elapsed)));
        });
        Claim {
            name: self.inner.name.clone(),
            critical: self.inner.critical,
            target: self.inner.target.clone(),
            in_flight,
            inherited: false,
            round_started,
        }
    }
}

impl SlotInner {
    /// Counts a check that finished with an error of `kind`.
    fn count_failure(&self, kind: CheckErrorKind) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        match failures.iter_mut().find(|(counted, _)| *counted == kind) {
            Some((_, count)) => *count += 1,
            None => failures.push((kind, 1)),
        }
    }
}

/// Empties a slot when dropped.
struct FreeOnDrop(Arc<SlotInner>);

impl Drop for FreeOnDrop {
    fn drop(&mut self) {
        *self
            .0
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl Claim {
    /// When the check this claim waits for started: the same for every round that joined it.
    pub(crate) fn check_started_at(&self) -> Instant {
        self.in_flight.started_at
    }

    /// Waits for the check until `deadline`, and reports what it concluded.
    pub(crate) async fn outcome(mut self, deadline: Instant) -> CheckOutcome {
        let waited = tokio::time::timeout_at(
            deadline.into(),
            self.in_flight.finished.wait_for(Option::is_some),
        )
        .await;
        let mut running_for = None;
        let mut report = None;
        let (status, elapsed, error, detail) = match waited {
            Ok(Ok(finished)) => {
                let (result, elapsed) = finished.clone().expect("waited for Some");
                match result {
                    Ok(passed) => {
                        report = Some(passed);
                        (CheckStatus::Passed, elapsed, None, None)
                    }
                    // A check that gave up waiting (a connect timeout, the pool's own timeout,
                    // the check limit) says the same as our deadline: the database did not
                    // answer in time. Reporting it `not_ready` would flip a stalled database
                    // between the two, and past the fail direction. A saturated pool waited
                    // too: the application is busy, which is no reason to depool it harder
                    // than a stall.
                    Err(error)
                        if error.kind().is_timeout()
                            || error.kind() == CheckErrorKind::PoolSaturated =>
                    {
                        (CheckStatus::TimedOut, elapsed, Some(error), None)
                    }
                    Err(error) => (CheckStatus::Failed, elapsed, Some(error), None),
                }
            }
            Ok(Err(_)) => (
                CheckStatus::Failed,
                self.in_flight.started_at.elapsed(),
                Some(CheckError::new(
                    CheckErrorKind::Other,
                    "the check ended without a result (runtime shutting down?)",
                )),
                None,
            ),
            Err(_) => {
                // `elapsed` is what this round waited (its deadline); how long the check has
                // been running goes beside it, so the two are never confused.
                let detail = if self.inherited {
                    running_for = Some(self.in_flight.started_at.elapsed());
                    TimeoutDetail::EarlierCheckRunning
                } else {
                    TimeoutDetail::DeadlinePassed
                };
                let waited = self.round_started.elapsed();
                (CheckStatus::TimedOut, waited, None, Some(detail))
            }
        };
        // What a passing check reported: its own target for this result, and its details,
        // shared by every round that reads this outcome.
        let (target, details) = match report {
            Some(CheckReport { target, details }) => (
                target.or(self.target),
                (!details.is_empty()).then(|| Arc::new(details)),
            ),
            None => (self.target, None),
        };
        CheckOutcome {
            name: self.name,
            status,
            elapsed,
            running_for,
            error,
            detail,
            critical: self.critical,
            target,
            details,
        }
    }
}
