//! One check (a database's or a component's), shared by every round that wants it.
//!
//! A slot runs at most one check at a time. A round that finds a check in flight (started by
//! an earlier round, the other cadence, or a `?nocache=true` bypass) waits for that check
//! instead of starting another: a stalled database never gets a pile of connection attempts.
//!
//! A round whose deadline fires late, past [`STARVED_AFTER`], was not run on time: the
//! runtime was starved or blocked, and its timeouts say nothing of the check. Such a timeout
//! gives way to what the slot last heard from the check ([`TimeoutDetail::Starved`]), as long
//! as the rounds since then heard it on time and that result is no older than the slot's
//! bound; otherwise it counts. One starved round never turns a passing check into a failing
//! one, and a starved process whose check really stopped answering is still told so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::history::History;
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
enum Checker {
    Database(Arc<dyn DatabaseCheck>),
    Component(Arc<dyn Component>),
}

impl Checker {
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
    check: Checker,
    /// Reported on every outcome.
    critical: bool,
    /// What the check connects to, asked once (redacted): shown unless a passing check's
    /// report names another.
    target: Option<Arc<str>>,
    /// How long a check may run before it is dropped.
    limit: Duration,
    in_flight: Mutex<Option<RunningCheck>>,
    /// What the rounds last heard from the check, for a round too starved to tell.
    heard: Mutex<Heard>,
    /// How old a result may be and still stand in for a starved round's timeout: the
    /// staleness bound of the cadence the slot is checked at.
    carry_for: Duration,
    checks_started: AtomicU64,
    /// Checks that finished with an error, by category: written once per finished check.
    failures: Mutex<Vec<(CheckErrorKind, u64)>>,
    /// What the rounds learnt, for the admin server's history.
    history: History,
}

/// How late past its deadline a round may wake before its timeouts say more of the process
/// than of the checks: the timer fired that late because the runtime did not run the monitor
/// (a blocked worker thread, CPU starvation). Scheduling jitter on a loaded machine stays
/// well below it; the rounds that overran in the rollout this rule comes from woke 640 ms late.
pub(crate) const STARVED_AFTER: Duration = Duration::from_millis(100);

/// What a slot's rounds last heard from its check.
#[derive(Debug, Default)]
struct Heard {
    /// The last outcome that said something of the check (it passed, it failed, or it gave up
    /// waiting itself), and when it was reported.
    last: Option<(CheckOutcome, Instant)>,
    /// Whether a round since then, run on time, waited for the check in vain: the check is
    /// silent, and a starved round's timeout is no news.
    silent: bool,
}

/// The check a slot runs now: when it started, and its result once it finishes (every round
/// that claims the slot meanwhile waits on the same run).
#[derive(Clone, Debug)]
struct RunningCheck {
    started_at: Instant,
    finished: watch::Receiver<Finished>,
}

/// A round's claim on a slot's check, to be waited on until the round's deadline.
#[derive(Debug)]
pub(crate) struct Claim {
    slot: Arc<SlotInner>,
    name: Arc<str>,
    critical: bool,
    target: Option<Arc<str>>,
    in_flight: RunningCheck,
    /// Whether the check was already running before this round began.
    inherited: bool,
    round_started: Instant,
}

impl CheckSlot {
    fn with(
        name: Arc<str>,
        check: Checker,
        critical: bool,
        limit: Duration,
        carry_for: Duration,
    ) -> Self {
        let target = match &check {
            Checker::Database(check) => check.target(),
            Checker::Component(component) => component.target(),
        };
        Self {
            inner: Arc::new(SlotInner {
                name,
                check,
                critical,
                target: target.map(|target| Arc::from(crate::redact(&target))),
                limit,
                in_flight: Mutex::new(None),
                heard: Mutex::new(Heard::default()),
                carry_for,
                checks_started: AtomicU64::new(0),
                failures: Mutex::new(Vec::new()),
                history: History::new(),
            }),
        }
    }

    /// A database's slot; its checks run at most `limit`, and a result stands in for a
    /// starved round's timeout for `carry_for` (see the [module docs](self)).
    pub(crate) fn database(
        entry: &DatabaseEntry,
        critical: bool,
        limit: Duration,
        carry_for: Duration,
    ) -> Self {
        Self::with(
            entry.name.clone(),
            Checker::Database(entry.check.clone()),
            critical,
            limit,
            carry_for,
        )
    }

    /// A component's slot, as [`database`](Self::database)'s.
    pub(crate) fn component(spec: &ComponentSpec, limit: Duration, carry_for: Duration) -> Self {
        Self::with(
            spec.name.clone(),
            Checker::Component(spec.component.clone()),
            spec.critical,
            limit,
            carry_for,
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
            Checker::Database(check) => check.vendor(),
            Checker::Component(_) => "component",
        }
    }

    pub(crate) fn pool_stats(&self) -> Option<PoolStats> {
        match &self.inner.check {
            Checker::Database(check) => check.pool_stats(),
            Checker::Component(_) => None,
        }
    }

    /// What the rounds learnt from this check.
    pub(crate) fn history(&self) -> &History {
        &self.inner.history
    }

    pub(crate) fn checks_started(&self) -> u64 {
        self.inner.checks_started.load(Ordering::Relaxed)
    }

    /// The checks that finished with an error so far: this slot's name, the category, and
    /// how many.
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
                slot: self.inner.clone(),
                name: self.inner.name.clone(),
                critical: self.inner.critical,
                target: self.inner.target.clone(),
                inherited: in_flight.started_at < round_started,
                in_flight: in_flight.clone(),
                round_started,
            };
        }
        let (finished_tx, finished) = watch::channel(None);
        let in_flight = RunningCheck {
            started_at: crate::clock::now(),
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
            let elapsed = crate::clock::since(started_at);
            if let Err(error) = &result {
                inner.count_failure(error.kind());
            }
            // Free the slot first: whoever sees the result may start the next check at once.
            drop(free);
            let _ = finished_tx.send(Some((result, elapsed)));
        });
        Claim {
            slot: self.inner.clone(),
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

    /// Notes what a round heard from the check: `outcome`, or (`None`) nothing by a deadline
    /// the round kept.
    fn hear(&self, outcome: Option<&CheckOutcome>) {
        let mut heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Some(outcome) => {
                heard.last = Some((outcome.clone(), crate::clock::now()));
                heard.silent = false;
            }
            None => heard.silent = true,
        }
    }

    /// What stands in for the timeout of a round that woke `late` past its deadline: the
    /// last result heard, when the rounds since heard the check on time and it is no older
    /// than the slot's bound.
    fn stand_in(&self, late: Duration) -> Option<CheckOutcome> {
        if late <= STARVED_AFTER {
            return None;
        }
        let heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        let (last, at) = heard.last.as_ref().filter(|_| !heard.silent)?;
        (crate::clock::since(*at) <= self.carry_for).then(|| CheckOutcome {
            detail: Some(TimeoutDetail::Starved),
            ..last.clone()
        })
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
        // The check this outcome is the result of, when it finished.
        let finished = matches!(waited, Ok(Ok(_))).then_some(self.in_flight.started_at);
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
                crate::clock::since(self.in_flight.started_at),
                Some(CheckError::new(
                    CheckErrorKind::Other,
                    "the check ended without a result (runtime shutting down?)",
                )),
                None,
            ),
            Err(_) => {
                // A round the runtime woke late cannot tell a silent check from its own
                // starvation: the last result heard stands in, when there is one to trust.
                // The lateness is the timer's: a round waits for all its checks together
                // (`util::join_all`), so a wait is never begun past its deadline by the
                // order of the awaits.
                let late = crate::clock::now().saturating_duration_since(deadline);
                if let Some(stand_in) = self.slot.stand_in(late) {
                    return stand_in;
                }
                if late <= STARVED_AFTER {
                    self.slot.hear(None);
                }
                // `elapsed` is what this round waited (its deadline); how long the check has
                // been running goes beside it, so the two are never confused.
                let detail = if self.inherited {
                    running_for = Some(crate::clock::since(self.in_flight.started_at));
                    TimeoutDetail::EarlierCheckRunning
                } else {
                    TimeoutDetail::DeadlinePassed
                };
                let waited = crate::clock::since(self.round_started);
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
        let outcome = CheckOutcome {
            name: self.name,
            status,
            elapsed,
            running_for,
            error,
            detail,
            critical: self.critical,
            target,
            details,
        };
        if outcome.detail.is_none() {
            self.slot.hear(Some(&outcome));
        }
        self.slot.history.record(&outcome, finished);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::check::CheckReport;

    /// Passes its first check, then never answers: a database that went dark.
    #[derive(Debug, Default)]
    struct PassesThenHangs(AtomicUsize);

    impl DatabaseCheck for PassesThenHangs {
        fn vendor(&self) -> &'static str {
            "fake"
        }

        fn check(&self) -> CheckFuture {
            let first = self.0.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                if !first {
                    std::future::pending::<()>().await;
                }
                Ok(CheckReport::default())
            })
        }
    }

    fn slot(carry_for: Duration) -> CheckSlot {
        let entry = DatabaseEntry {
            name: "default".into(),
            check: Arc::new(PassesThenHangs::default()),
            variable: None,
        };
        CheckSlot::database(&entry, true, Duration::from_secs(60), carry_for)
    }

    /// One round over `slot` with a `deadline` from now; `starve` blocks the runtime's only
    /// thread that long meanwhile, as a starved process does not run the monitor.
    async fn round(slot: &CheckSlot, deadline: Duration, starve: Duration) -> CheckOutcome {
        let started = Instant::now();
        let claim = slot.claim(started, &Spawner::default());
        if !starve.is_zero() {
            tokio::spawn(async move { std::thread::sleep(starve) });
        }
        claim.outcome(started + deadline).await
    }

    const DEADLINE: Duration = Duration::from_millis(50);
    const STARVED: Duration = Duration::from_millis(400);

    #[tokio::test]
    async fn a_starved_round_keeps_the_result_heard_until_a_round_on_time_hears_nothing() {
        let slot = slot(Duration::from_secs(60));
        let first = round(&slot, Duration::from_secs(10), Duration::ZERO).await;
        assert_eq!((first.status, first.detail), (CheckStatus::Passed, None));

        // The check now hangs, and the round wakes 350 ms past its deadline.
        let starved = round(&slot, DEADLINE, STARVED).await;
        assert_eq!(
            (starved.status, starved.detail),
            (CheckStatus::Passed, Some(TimeoutDetail::Starved)),
            "a starved round is no news: the result heard stands in"
        );

        // A round run on time waits in vain: the check is silent, and that counts.
        let on_time = round(&slot, DEADLINE, Duration::ZERO).await;
        assert_eq!(on_time.status, CheckStatus::TimedOut);
        assert_eq!(on_time.detail, Some(TimeoutDetail::EarlierCheckRunning));
        // From then on a starved round no longer hides the silence.
        let starved = round(&slot, DEADLINE, STARVED).await;
        assert_eq!(starved.status, CheckStatus::TimedOut);
        assert_ne!(starved.detail, Some(TimeoutDetail::Starved));
    }

    #[tokio::test]
    async fn a_result_older_than_the_bound_stands_in_for_nothing() {
        let slot = slot(Duration::from_millis(1));
        round(&slot, Duration::from_secs(10), Duration::ZERO).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let starved = round(&slot, DEADLINE, STARVED).await;
        assert_eq!(starved.status, CheckStatus::TimedOut);
        assert_eq!(starved.detail, Some(TimeoutDetail::DeadlinePassed));
    }
}
