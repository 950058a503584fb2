//! The timeline test: every reader of a monitor, at every step of random schedules, against
//! one model of SPEC's rules over time (issue 35, part C).
//!
//! # The design
//!
//! Each schedule ([`schedule`], named by a seed) is a configuration (readiness interval and
//! deadline, health interval, debounce, return jitter, fail direction, a component with its
//! own timeout, criticality, gating and hysteresis) and events over time: the database and
//! the component pass, fail, hang and answer slowly (below or past their deadline); the
//! operator holds and releases; the drain starts; the runtime is blocked. The real monitor
//! (`HealthMonitor::new` and `run`, in-process) runs it in virtual time, on Tokio's paused
//! clock, which `crate::clock` reads in the crate's tests: a minute of rounds takes tens of
//! milliseconds, and a seed replays the same schedule (every random draw of the monitor returns
//! the fraction the seed drew, so the model knows each return's delay). A blocked runtime is
//! the clock advanced by hand while no task runs: every timer due meanwhile fires late, as
//! after a blocking call on the runtime's only thread; what the schedule has during a block
//! happens as it ends.
//!
//! A recorder notes each publication as it happens. The model ([`model`]) takes each in,
//! checks it against what the checks did, and says what every reader must answer at any
//! instant; at each step (each event, a spread of instants, and just after each instant the
//! answers change without a publication: a debounce's end, a return's end, a verdict going
//! stale) every reader ([`readers`]) is asked and compared with it. The first disagreement
//! fails the schedule; it is shortened (events left out, the run cut) to what still breaks
//! the same rule, and printed with its seed and the publications before it.
//!
//! # The rules
//!
//! What every reader answers, at every instant (compared exactly; a reader that pushes may
//! follow an instant [`model::PUSH_TOLERANCE`], 3 ms, late):
//!
//! 1. Liveness and ping: 200. Startup: 503 until the first readiness round is published,
//!    then 200 for good (SPEC 2).
//! 2. Readiness, health and pool, in SPEC's order: draining (503 `draining`); no verdict
//!    yet; a verdict older than three of its rounds and the deadline since its round was
//!    published (stale: 503); held (readiness); returning (readiness); the verdict (SPEC 2,
//!    4, 5, 12, 14).
//! 3. The return: the first verdict that passes after the start, a hold or a stale verdict
//!    comes back at once; one that passes after a failure that lasted the debounce comes
//!    back after the jitter drawn; a shorter failure is no return; a return ahead stays
//!    ahead ([`HealthConfig::return_jitter`]).
//! 4. The readers that act on one answer (the HAProxy agent, gRPC `Watch`) say a failure of
//!    the verdict once it lasted the debounce; a drain, a hold, a stale or missing verdict and
//!    a return act at once (SPEC 11).
//! 5. The agent: `drain`, `maint`, `down ready`, or `up ready <n>%`, the weight ramping
//!    from the last return over the slow start and capped by the degraded weight while
//!    `/health` is degraded or the verdict fails within the debounce.
//! 6. gRPC: `""` is readiness (`UNKNOWN` before the first round), `database/default` its
//!    outcome under the fail direction, `component/cache` its state; a drain is
//!    `NOT_SERVING` everywhere; `Watch` as `Check`, debounced, pushed when it changes.
//! 7. The Prometheus gauges are the answers (passing and condition per probe, the status,
//!    the database and the component, drain, hold, start, each verdict's staleness).
//! 8. The page's headline and `<title>` are `/health`'s answer; its updates push it.
//!
//! What the monitor publishes, against what the checks did, within each documented bound:
//!
//! 9. Readiness is its checks' conclusion (a critical database under the fail direction,
//!    a gating component in trouble); a hold is in it at once; `/health`'s status follows
//!    its checks (SPEC 2, 6).
//! 10. An outcome is what its check did during its round; only a round the runtime woke late
//!     may carry the last result heard, or count a timeout the lateness caused (SPEC 11,
//!     14: starvation is the runtime's lateness, never the order of the awaits).
//! 11. Readiness publishes at least every interval plus the deadline.
//! 12. A component is in trouble once it failed for its failures' worth of health rounds
//!     (plus the deadline and one readiness interval), and healthy once it passed for its
//!     successes' worth.
//! 13. One clock: `/health` and readiness do not say different things of the database or
//!     the component for longer than one readiness interval plus the deadline (SPEC 14).
//! 14. The history's last round of each check agrees with what was published of it within
//!     the same bound (SPEC 13, 14).
//! 15. A transition is logged when readiness's answer changes (a return when its jitter
//!     runs out), within one readiness interval, and no line says what did not happen (SPEC
//!     14).
//!
//! And for a fleet ([`fleet`]: several monitors sharing the real Redis, in real time):
//!
//! 16. A process waiting out its return never stands `ready` in the fleet (SPEC 14).
//! 17. Once every process had three rounds since the last change, at least
//!     `min(ceil(fraction × members), eligible)` processes answer readiness 200 (SPEC 10, 12).
//! 18. Load feedback (requests in flight, a blocked runtime's lag) never changes an answer:
//!     every reader says what the model says without it, but the HAProxy agent, whose
//!     `up ready` weight it may lower, never below 10% unless the state's own is lower
//!     (issue 39: load alone never takes a server out).
//!
//! # Running it
//!
//! - `cargo test --all-features --lib timeline` runs 1,000 schedules (seeds 0 to 999) and
//!   six fleet schedules.
//! - `TIMELINE_SEED=<n>` replays one seed, shortening it again when it fails;
//!   `TIMELINE_SCHEDULES=<n>` and `TIMELINE_FIRST_SEED=<n>` set the range;
//!   `TIMELINE_SURVEY=1` runs them all and lists the first seed that broke each rule;
//!   `TIMELINE_RULE=<text>` looks only at the rules (and readers) whose name holds it;
//!   `TIMELINE_READERS=all` asks the costly readers in every schedule (see
//!   [`schedule::Costly`]). The ignored test runs 100,000.
//! - `TIMELINE_FLEET_SEED=<n>` and `TIMELINE_FLEET_SCHEDULES=<n>` do the same for the fleet.
//!
//! [`HealthConfig::return_jitter`]: crate::HealthConfig::return_jitter

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tracing_subscriber::layer::SubscriberExt;

use self::model::{Entry, Finding, Model, PUSH_TOLERANCE};
use self::readers::Readers;
use self::schedule::{Schedule, What, ms};
use self::scripted::{Lines, Scripted, Transitions};
use crate::component::ComponentSpec;
use crate::monitor::HealthHandle;
use crate::{HealthConfig, HealthMonitor};

#[cfg(feature = "redis")]
mod fleet;
mod model;
mod readers;
mod schedule;
mod scripted;

/// The schedules CI runs.
const SCHEDULES: u64 = 1_000;

/// Every reader against the model, over [`SCHEDULES`] schedules (or as the variables say).
#[test]
fn every_reader_follows_the_rules_over_time() {
    run(count_from_env(SCHEDULES));
}

/// The long run: 100,000 schedules.
#[test]
#[ignore = "the long run: 100,000 schedules, about half an hour on two cores; `--ignored` runs it"]
fn every_reader_follows_the_rules_over_a_long_run() {
    run(count_from_env(100_000));
}

fn count_from_env(default: u64) -> u64 {
    std::env::var("TIMELINE_SCHEDULES")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(default)
}

/// Runs the schedules of the seeds asked for on every core, stopping at the first that
/// fails, which is shortened and reported. With `TIMELINE_SURVEY` set, runs them all and
/// reports the first seed that broke each rule instead.
fn run(count: u64) {
    let seeds = match std::env::var("TIMELINE_SEED") {
        Ok(seed) => {
            let seed = seed.parse().expect("TIMELINE_SEED is a number");
            seed..seed + 1
        }
        Err(_) => {
            let first = std::env::var("TIMELINE_FIRST_SEED")
                .ok()
                .and_then(|seed| seed.parse().ok())
                .unwrap_or(0);
            first..first + count
        }
    };
    let survey = std::env::var_os("TIMELINE_SURVEY").is_some();
    // Only the rules (or readers) whose name holds this, when set: one defect at a time.
    let rule = std::env::var("TIMELINE_RULE").ok();
    let started = Instant::now();
    let next = AtomicU64::new(seeds.start);
    let stop = AtomicBool::new(false);
    let found: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= seeds.end {
                        return;
                    }
                    let schedule = Schedule::of(seed);
                    let mut failures = run_one(&schedule, survey || rule.is_some());
                    if let Some(rule) = &rule {
                        failures.retain(|failure| failure.finding.rule.contains(rule.as_str()));
                        failures.truncate(if survey { usize::MAX } else { 1 });
                    }
                    if failures.is_empty() {
                        continue;
                    }
                    stop.store(!survey, Ordering::Relaxed);
                    let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                    for failure in failures {
                        let first = found
                            .iter_mut()
                            .find(|found| found.failure.finding.rule == failure.finding.rule);
                        let new = Found {
                            schedule: schedule.clone(),
                            failure,
                            ran: seed - seeds.start + 1,
                            after: started.elapsed(),
                        };
                        match first {
                            Some(first) if first.schedule.seed < seed => {}
                            Some(first) => *first = new,
                            None => found.push(new),
                        }
                    }
                }
            });
        }
    });
    let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    if found.is_empty() {
        return;
    }
    found.sort_by_key(|found| found.schedule.seed);
    if !survey {
        found.truncate(1);
    }
    // A survey lists each rule's first seed; its replay shortens it.
    let report: Vec<String> = found
        .into_iter()
        .map(|found| found.report(!survey))
        .collect();
    panic!(
        "the timeline test found {} disagreement(s) in {} schedules ({:.1?}):\n\n{}",
        report.len(),
        seeds.end - seeds.start,
        started.elapsed(),
        report.join("\n\n")
    );
}

/// The first schedule that broke one rule.
struct Found {
    schedule: Schedule,
    failure: Failure,
    /// How many schedules ran until it, and how long it took.
    ran: u64,
    after: Duration,
}

impl Found {
    /// The report, with the schedule shortened when `shorten`.
    fn report(self, shorten: bool) -> String {
        let Self {
            schedule,
            failure,
            ran,
            after,
        } = self;
        let length = schedule.length;
        let (shrunk, failure) = if shorten {
            shrink(schedule, failure)
        } else {
            (schedule, failure)
        };
        format!(
            "{}: in seed {} (schedule {ran} of this run, {} long, found after {after:.1?})\n\
             at {}: {}\n\
             model: {}\n\
             shortened schedule (TIMELINE_SEED={} replays the whole one):\n{shrunk}",
            failure.finding.rule,
            shrunk.seed,
            ms(length),
            ms(failure.finding.at),
            failure.finding.what,
            failure.context,
            shrunk.seed,
        )
    }
}

/// Why a schedule failed.
#[derive(Clone, Debug)]
struct Failure {
    finding: Finding,
    /// What the model held then.
    context: String,
}

/// The fewest events (and the shortest run) that still fail `schedule` by the same rule.
fn shrink(mut schedule: Schedule, mut failure: Failure) -> (Schedule, Failure) {
    let mut tries = 0;
    'shorter: while tries < 400 {
        for candidate in schedule.shorter(failure.finding.at) {
            tries += 1;
            let same = run_one(&candidate, true)
                .into_iter()
                .find(|found| found.finding.rule == failure.finding.rule);
            if let Some(found) = same {
                schedule = candidate;
                failure = found;
                continue 'shorter;
            }
        }
        break;
    }
    (schedule, failure)
}

/// Runs one schedule in virtual time on a runtime of its own: its first disagreement, or
/// with `every`, the first of each rule.
fn run_one(schedule: &Schedule, every: bool) -> Vec<Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    crate::random::fix_on_this_thread(Some(schedule.setup.drawn));
    let lines = Lines::default();
    let subscriber = tracing_subscriber::registry().with(Transitions(lines.clone()));
    let failures = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(drive(schedule, &lines, every))
    });
    crate::random::fix_on_this_thread(None);
    failures
}

/// What is due next in a schedule.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// An event of the schedule (its index).
    Event(usize),
    /// Every reader asked.
    Sample,
}

/// Runs the monitor through `schedule`, asking every reader at each step: the first
/// disagreement, or with `every`, the first of each rule.
async fn drive(schedule: &Schedule, lines: &Lines, every: bool) -> Vec<Failure> {
    let setup = &schedule.setup;
    let database = Scripted::new(schedule.database);
    let component = Scripted::new(schedule.component);
    let mut config = HealthConfig::new()
        .readiness_interval(setup.readiness_interval)
        .readiness_timeout(setup.deadline)
        .health_interval(setup.health_interval)
        .debounce(setup.debounce)
        .return_jitter(setup.return_jitter)
        .fail_direction(setup.fail_direction)
        .database("default", database.clone());
    if let Some(spec) = &setup.component {
        let mut component = ComponentSpec::new(model::COMPONENT, component.clone())
            .critical(spec.critical)
            .gates_readiness(spec.gates_readiness)
            .failures_before_trouble(spec.failures_before_trouble)
            .successes_before_recovery(spec.successes_before_recovery);
        if let Some(timeout) = spec.timeout {
            component = component.timeout(timeout);
        }
        config = config.component(component);
    }
    if let Some(capacity) = setup.load_capacity {
        config = config.load_capacity(capacity);
    }
    let (health, monitor) = HealthMonitor::new(config).expect("a valid configuration");
    let recorded = record(&health);
    let readers = Readers::new(&health, setup).await;
    let t0 = crate::clock::now();
    let running = tokio::spawn(monitor.run());
    let mut model = Model::new(schedule, t0);
    let mut plan: Vec<(Duration, Step)> = schedule
        .events
        .iter()
        .enumerate()
        .map(|(index, event)| (event.at, Step::Event(index)))
        .collect();
    // Samples spread over the run. (Tokio's timers count whole milliseconds: every step
    // falls on one, as every round does; the model makes no assumption on the order of two
    // things at one instant, and each step lets everything due then run first.)
    let mut rng = schedule::Rng::new(schedule.seed ^ 0x5EED);
    let samples = (schedule.length.as_millis() / setup.readiness_interval.as_millis()).min(40);
    for _ in 0..samples / 2 {
        let at = Duration::from_millis(rng.range(1, schedule.length.as_millis() as u64 - 1));
        plan.push((at, Step::Sample));
    }
    plan.push((Duration::ZERO, Step::Sample));
    let mut failures = Vec::new();
    let mut asked = 0_u32;
    // The application's requests in flight (`What::InFlight`).
    let mut _in_flight = Vec::new();
    let take_findings = |model: &mut Model<'_>, failures: &mut Vec<Failure>| {
        for finding in std::mem::take(&mut model.findings) {
            failures.push(Failure {
                context: model.context(t0 + finding.at),
                finding,
            });
        }
        !every && !failures.is_empty()
    };
    loop {
        plan.sort();
        plan.dedup();
        let Some(&(at, step)) = plan.first() else {
            break;
        };
        plan.remove(0);
        if at > schedule.length {
            break;
        }
        tokio::time::sleep_until((t0 + at).into()).await;
        settle().await;
        if let Step::Event(index) = step {
            let what = schedule.events[index].what;
            model.applied(what, crate::clock::now());
            match what {
                What::Database(behaviour) => database.set(behaviour),
                What::Component(behaviour) => component.set(behaviour),
                What::Hold => drop(health.hold("the timeline test holds")),
                What::Release => drop(health.release()),
                What::Drain => drop(health.drain().start()),
                What::Block(long) => tokio::time::advance(long).await,
                What::InFlight(requests) => {
                    let drain = health.drain();
                    _in_flight = (0..requests).map(|_| drain.enter()).collect();
                }
            }
            settle().await;
            // Everything due by now happens before anything is asked.
            let now = model.since(crate::clock::now());
            if plan
                .iter()
                .any(|(at, step)| *at <= now && matches!(step, Step::Event(_)))
            {
                plan.push((now, Step::Sample));
                continue;
            }
        }
        let now = crate::clock::now();
        // The bounds are judged at each publication as well as now.
        for entry in take(&recorded) {
            model.push(&entry);
            model.check_at(entry.at);
        }
        model.check_at(now);
        if take_findings(&mut model, &mut failures) {
            break;
        }
        asked += 1;
        let observed = readers.observe(asked % 4 == 1).await;
        let expected = model.expected(now);
        let before = model.expected(now.checked_sub(PUSH_TOLERANCE).unwrap_or(now));
        for (reader, expected, said) in
            readers::disagreements(now, &expected, &before, &observed, readers.watches_ended())
        {
            model.find(
                now,
                &reader,
                format!("{reader} said {said:?}, the model {expected:?}"),
            );
        }
        if take_findings(&mut model, &mut failures) {
            break;
        }
        // Once a pushed reader must have followed each instant the answers change without a
        // publication (a debounce's end, a return's end, a verdict going stale).
        for change in model.upcoming(now) {
            let change = model.since(change);
            plan.push((
                change + PUSH_TOLERANCE + Duration::from_millis(1),
                Step::Sample,
            ));
        }
    }
    if every || failures.is_empty() {
        let end = crate::clock::now();
        for entry in take(&recorded) {
            model.push(&entry);
            model.check_at(entry.at);
        }
        model.check_log(&lines.take(), end);
        take_findings(&mut model, &mut failures);
    }
    running.abort();
    drop(readers);
    failures
}

/// Lets every task that is due now run: the monitor's publications reach the recorder and
/// the pushed readers before anything is asked.
async fn settle() {
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

type Recorded = Arc<Mutex<Vec<Entry>>>;

fn take(recorded: &Recorded) -> Vec<Entry> {
    std::mem::take(&mut *recorded.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Notes each publication as it happens, with each check's history then.
fn record(health: &HealthHandle) -> Recorded {
    let recorded = Recorded::default();
    let store = health.state();
    let mut changes = store.store.changes();
    let (health, into) = (health.clone(), recorded.clone());
    tokio::spawn(async move {
        let mut last: Option<Entry> = None;
        while changes.changed().await.is_ok() {
            let state = health.state();
            let entry = Entry {
                at: crate::clock::now(),
                readiness: arc_swap::Guard::into_inner(state.store.readiness()),
                health: arc_swap::Guard::into_inner(state.store.health()),
                pool: arc_swap::Guard::into_inner(state.store.pool()),
                history: health
                    .histories()
                    .into_iter()
                    .map(|history| {
                        (
                            history.name,
                            history.rounds.last().map(|round| round.status),
                        )
                    })
                    .collect(),
            };
            let changed = last.as_ref().is_none_or(|last| {
                !Arc::ptr_eq(&last.readiness, &entry.readiness)
                    || !Arc::ptr_eq(&last.health, &entry.health)
                    || !Arc::ptr_eq(&last.pool, &entry.pool)
            });
            if changed {
                into.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(entry.clone());
                last = Some(entry);
            }
        }
    });
    recorded
}
