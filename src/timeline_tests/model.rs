//! The rules over time (1 to 8 of the [timeline test](super); the others are
//! [`bounds`]), stated again from SPEC.md and the documentation without the crate's decision
//! code: what each probe must answer at each instant, from what the monitor published (each
//! verdict, as a recorder saw it appear), what the operator and the runtime did (the
//! schedule's events) and the clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::schedule::{Behaviour, Event, Schedule, What, ms};
use crate::component::ComponentStatus;
use crate::grpc::ServingStatus;
use crate::verdict::{
    CheckOutcome, CheckStatus, FailDirection, HealthVerdict, PoolVerdict, ReadinessVerdict, Status,
};
use crate::view::Condition;
use crate::view::published::{Made, Published};

mod bounds;

use self::bounds::gaps;

/// How late a reader that pushes may follow a change: `ViewWatch` wakes 1 ms past the
/// instant it sleeps to.
pub(super) const PUSH_TOLERANCE: Duration = Duration::from_millis(3);

/// A little more than a bound counted in rounds: Tokio's timers count whole milliseconds,
/// and a round that ends on one may be seen a step after.
const SLACK: Duration = Duration::from_millis(2);

/// The component's name in every schedule.
pub(super) const COMPONENT: &str = "cache";

/// One change of what the monitor publishes, as the recorder saw it.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) at: Instant,
    pub(super) readiness: Arc<Published<ReadinessVerdict>>,
    pub(super) health: Arc<Published<HealthVerdict>>,
    pub(super) pool: Arc<Published<PoolVerdict>>,
    /// The last status each check's history held then, by name.
    pub(super) history: Vec<(Arc<str>, Option<CheckStatus>)>,
}

/// Since when an answer has failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Streak {
    Passing,
    Since(Instant),
    /// It never passed.
    Always,
}

impl Streak {
    fn after(self, fails: bool, at: Instant) -> Self {
        match (fails, self) {
            (false, _) => Self::Passing,
            (true, Self::Passing) => Self::Since(at),
            (true, kept) => kept,
        }
    }

    /// Whether the failure has lasted `debounce` at `now`.
    fn lasted(self, debounce: Duration, now: Instant) -> bool {
        match self {
            Self::Passing => false,
            Self::Since(since) => now.saturating_duration_since(since) >= debounce,
            Self::Always => true,
        }
    }
}

/// A verdict published, and the last publication that proved the monitor alive (a hold
/// republishes the round's verdict, which keeps its age).
#[derive(Clone, Debug)]
struct Fresh<V> {
    verdict: Arc<V>,
    made: Option<Made>,
    fresh_from: Instant,
}

/// Readiness as published, and what the rules derive from its publications.
#[derive(Clone, Debug)]
struct Readiness {
    fresh: Fresh<ReadinessVerdict>,
    /// The verdict's streak (the checks' conclusion, a hold aside) and the database's.
    failing: Streak,
    database_failing: Streak,
    /// When it came back into rotation last; ahead while it waits out its jitter.
    returns_at: Option<Instant>,
}

impl Readiness {
    fn passes(&self) -> bool {
        self.fresh.verdict.ready && self.fresh.verdict.held.is_none()
    }
}

/// Everything published at one instant.
#[derive(Clone, Debug)]
struct State {
    at: Instant,
    readiness: Option<Readiness>,
    health: Option<Fresh<HealthVerdict>>,
    pool: Option<Fresh<PoolVerdict>>,
    /// What two answers of the process have said differently of one check, since when.
    gaps: Vec<Gap>,
}

/// Two answers that say different things of one check (`/health` and readiness, the history
/// and what was published), since the instant they began to say these things.
#[derive(Clone, Debug)]
struct Gap {
    rule: &'static str,
    since: Instant,
    what: String,
}

/// How one probe answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) passing: bool,
    pub(super) condition: Condition,
    pub(super) status: &'static str,
}

impl Answer {
    const fn out(condition: Condition, status: &'static str) -> Self {
        Self {
            passing: false,
            condition,
            status,
        }
    }
}

/// `SERVING` when `passing`, `NOT_SERVING` otherwise.
fn serving(passing: bool) -> ServingStatus {
    if passing {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    }
}

impl Expected {
    /// The page's headline: health's badge, then whether it is in rotation.
    pub(super) fn page_headline(&self) -> String {
        format!("{}, {}", self.headline, self.rotation)
    }
}

/// What every reader must say at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Expected {
    pub(super) ready: Answer,
    pub(super) health: Answer,
    pub(super) pool: Answer,
    pub(super) startup: Answer,
    /// `/health`'s status word where the page's headline shows it (draining, unavailable
    /// once stale, else the verdict's).
    pub(super) headline: &'static str,
    /// Whether the page says the process is in rotation: readiness's answer (returning and
    /// held named), beside the health badge.
    pub(super) rotation: &'static str,
    /// The metric `tower_health_status`: the verdict's, `unavailable` once stale.
    pub(super) status_metric: &'static str,
    /// Readiness for a consumer that acts on one answer (the agent, `Watch`).
    pub(super) ready_debounced: ServingStatus,
    pub(super) ready_grpc: ServingStatus,
    /// `database/default`, asked (`Check`) and watched.
    pub(super) database: ServingStatus,
    pub(super) database_debounced: ServingStatus,
    /// `component/cache`, when there is one.
    pub(super) component: Option<ServingStatus>,
    /// The HAProxy agent's line, without load feedback's weight.
    pub(super) agent: String,
    /// Whether load feedback may lower the agent's weight below the line's (rule 18).
    pub(super) load_feedback: bool,
    /// What the bodies show of the default database while the verdict is judged as it is.
    pub(super) ready_database: Option<&'static str>,
    pub(super) health_database: Option<&'static str>,
    pub(super) held: bool,
    pub(super) draining: bool,
    pub(super) started: bool,
    /// Whether readiness waits out a return (its body's `returning`, `?verbose`'s `return`).
    pub(super) returning: bool,
    /// Whether `?verbose` lists `monitor` failing: no verdict, or a stale one.
    pub(super) monitor_failing: bool,
    /// The metrics of the checks: the readiness verdict's database, the health verdict's
    /// component.
    pub(super) database_up: Option<bool>,
    pub(super) component_status: Option<ComponentStatus>,
    /// The metric `tower_health_verdict_stale`, per verdict.
    pub(super) stale: [bool; 3],
}

/// A disagreement between the model and the monitor or a reader.
#[derive(Clone, Debug)]
pub(super) struct Finding {
    /// Since the start.
    pub(super) at: Duration,
    /// The rule broken (or the reader that broke it): what a shortened schedule must still
    /// break.
    pub(super) rule: String,
    pub(super) what: String,
}

/// The rules of one schedule, fed with what the monitor publishes as it goes.
pub(super) struct Model<'s> {
    schedule: &'s Schedule,
    t0: Instant,
    states: Vec<State>,
    /// The schedule's events, at the instants they were applied (what falls due while the
    /// runtime is blocked happens as the block ends).
    events: Vec<Event>,
    /// What was found, and not yet taken.
    pub(super) findings: Vec<Finding>,
    reported: Vec<String>,
}

impl<'s> Model<'s> {
    pub(super) fn new(schedule: &'s Schedule, t0: Instant) -> Self {
        Self {
            schedule,
            t0,
            states: Vec::new(),
            events: Vec::new(),
            findings: Vec::new(),
            reported: Vec::new(),
        }
    }

    /// Since the start.
    pub(super) fn since(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }

    /// Notes a disagreement, once per rule and schedule.
    pub(super) fn find(&mut self, at: Instant, rule: &str, what: String) {
        if self.reported.iter().any(|reported| reported == rule) {
            return;
        }
        self.reported.push(rule.to_owned());
        let at = self.since(at);
        self.findings.push(Finding {
            at,
            rule: rule.to_owned(),
            what,
        });
    }

    // ===== the checks and the events, as they were applied =====

    /// Notes that `what` was applied at `at`.
    pub(super) fn applied(&mut self, what: What, at: Instant) {
        let at = self.since(at);
        self.events.push(Event { at, what });
    }

    /// Every behaviour a check had at some point of `from..=to` (since the start).
    fn behaviours(&self, database: bool, from: Duration, to: Duration) -> Vec<Behaviour> {
        let mut current = if database {
            self.schedule.database
        } else {
            self.schedule.component
        };
        let mut seen = Vec::new();
        for event in &self.events {
            let next = match event.what {
                What::Database(next) if database => next,
                What::Component(next) if !database => next,
                _ => continue,
            };
            if event.at > to {
                break;
            }
            if event.at >= from {
                seen.push(current);
            }
            current = next;
        }
        seen.push(current);
        seen
    }

    /// Whether the runtime was blocked at some point of `from..=to`.
    fn blocked(&self, from: Duration, to: Duration) -> bool {
        self.events.iter().any(|event| match event.what {
            What::Block(long) => event.at <= to && event.at + long >= from,
            _ => false,
        })
    }

    /// Whether the last of `placed` and `lifted` before `t` was `placed`.
    fn on(&self, t: Instant, placed: What, lifted: What) -> bool {
        let t = self.since(t);
        self.events
            .iter()
            .take_while(|event| event.at <= t)
            .fold(false, |on, event| match event.what {
                what if what == placed => true,
                what if what == lifted => false,
                _ => on,
            })
    }

    fn draining(&self, t: Instant) -> bool {
        let t = self.since(t);
        self.events
            .iter()
            .any(|event| event.what == What::Drain && event.at <= t)
    }

    fn held(&self, t: Instant) -> bool {
        self.on(t, What::Hold, What::Release)
    }

    /// The longest any check takes in this schedule: how far back a round may join one.
    fn longest_check(&self) -> Duration {
        let events = self
            .schedule
            .events
            .iter()
            .filter_map(|event| match event.what {
                What::Database(behaviour) | What::Component(behaviour) => Some(behaviour),
                _ => None,
            });
        [self.schedule.database, self.schedule.component]
            .into_iter()
            .chain(events)
            .map(|behaviour| match behaviour {
                Behaviour::Passes(after)
                | Behaviour::QueryFails(after)
                | Behaviour::Slow(after) => after,
                Behaviour::Refused | Behaviour::Hangs => Duration::ZERO,
            })
            .max()
            .unwrap_or_default()
    }

    // ===== what the monitor publishes =====

    fn state_at(&self, t: Instant) -> Option<&State> {
        let after = self.states.partition_point(|state| state.at <= t);
        after.checked_sub(1).map(|index| &self.states[index])
    }

    /// Takes in what the monitor published at one instant, and checks it.
    pub(super) fn push(&mut self, entry: &Entry) {
        let previous = self.states.last();
        let at = entry.at;
        let unchanged = previous
            .and_then(|state| state.readiness.as_ref())
            .filter(|before| Arc::ptr_eq(&before.fresh.verdict, &entry.readiness.verdict));
        let readiness = match unchanged {
            // Another verdict was published: readiness's own is derived once, when it is.
            Some(unchanged) => Some(unchanged.clone()),
            None => self.readiness_after(previous, entry),
        };
        let health = fresh(
            &entry.health,
            previous.and_then(|state| state.health.as_ref()),
            at,
        );
        let pool = fresh(
            &entry.pool,
            previous.and_then(|state| state.pool.as_ref()),
            at,
        );
        let new_readiness = readiness.as_ref().is_some_and(|now| {
            previous
                .and_then(|state| state.readiness.as_ref())
                .is_none_or(|before| before.fresh.fresh_from != now.fresh.fresh_from)
        });
        let new_health = health.as_ref().is_some_and(|now| {
            previous
                .and_then(|state| state.health.as_ref())
                .is_none_or(|before| before.fresh_from != now.fresh_from)
        });
        // Each gap is timed from when its two sides began to say what they say now: one side
        // that keeps following the other within the bound is never a gap past it.
        let before: Vec<Gap> = previous.map(|state| state.gaps.clone()).unwrap_or_default();
        let gaps: Vec<Gap> = gaps(readiness.as_ref(), health.as_ref(), &entry.history)
            .into_iter()
            .map(|(rule, what)| {
                let since = before
                    .iter()
                    .find(|gap| gap.rule == rule && gap.what == what)
                    .map_or(at, |gap| gap.since);
                Gap { rule, since, what }
            })
            .collect();
        let ended: Vec<Gap> = before
            .into_iter()
            .filter(|gap| {
                !gaps
                    .iter()
                    .any(|now| now.rule == gap.rule && now.what == gap.what)
            })
            .collect();
        self.states.push(State {
            at,
            readiness,
            health,
            pool,
            gaps,
        });
        for gap in ended {
            self.check_gap(&gap, at);
        }
        if new_readiness {
            self.check_readiness_round(entry);
        }
        if new_health {
            self.check_health_round(entry);
        }
    }

    /// Readiness as published anew in `entry`, after `previous`: its streaks and its return.
    fn readiness_after(&self, previous: Option<&State>, entry: &Entry) -> Option<Readiness> {
        let setup = &self.schedule.setup;
        let at = entry.at;
        fresh(
            &entry.readiness,
            previous.and_then(|state| state.readiness.as_ref().map(|r| &r.fresh)),
            at,
        )
        .map(|fresh| {
            let before = previous.and_then(|state| state.readiness.as_ref());
            let verdict = &fresh.verdict;
            let failing = before.map_or(Streak::Always, |before| before.failing);
            let database_failing = before.map_or(Streak::Always, |before| before.database_failing);
            let database_fails = default_database(&verdict.databases)
                .is_some_and(|outcome| !passes_readiness(outcome.status, setup.fail_direction));
            let returns_at = returns_at(
                before,
                verdict,
                setup.debounce,
                setup.jitter(),
                |fresh_from| at > fresh_from + setup.stale_after(setup.readiness_interval),
                at,
            );
            Readiness {
                failing: failing.after(!verdict.ready, at),
                database_failing: database_failing.after(database_fails, at),
                returns_at,
                fresh,
            }
        })
    }

    /// Whether readiness, health and pool are stale at `t`.
    fn stale(&self, t: Instant) -> [bool; 3] {
        let setup = &self.schedule.setup;
        let state = self.state_at(t);
        let past = |fresh_from: Option<Instant>, interval: Duration| {
            fresh_from.is_some_and(|from| t > from + setup.stale_after(interval))
        };
        [
            past(
                state.and_then(|s| s.readiness.as_ref().map(|r| r.fresh.fresh_from)),
                setup.readiness_interval,
            ),
            past(
                state.and_then(|s| s.health.as_ref().map(|h| h.fresh_from)),
                setup.health_interval,
            ),
            past(
                state.and_then(|s| s.pool.as_ref().map(|p| p.fresh_from)),
                setup.readiness_interval,
            ),
        ]
    }

    // ===== the answers =====

    /// What every reader must say at `t`.
    pub(super) fn expected(&self, t: Instant) -> Expected {
        let setup = &self.schedule.setup;
        let state = self.state_at(t);
        let readiness = state.and_then(|s| s.readiness.as_ref());
        let health = state.and_then(|s| s.health.as_ref());
        let pool = state.and_then(|s| s.pool.as_ref());
        let [ready_stale, health_stale, pool_stale] = self.stale(t);
        let draining = self.draining(t);
        let held = self.held(t);
        let returning = readiness.is_some_and(|r| {
            r.fresh.verdict.ready && !held && r.returns_at.is_some_and(|at| t < at)
        });
        let ready = match readiness {
            _ if draining => Answer::out(Condition::Draining, "draining"),
            None => Answer::out(Condition::Unavailable, "not_ready"),
            Some(_) if ready_stale => Answer::out(Condition::Stale, "not_ready"),
            Some(_) if held => Answer::out(Condition::Held, "not_ready"),
            Some(_) if returning => Answer::out(Condition::Returning, "not_ready"),
            Some(r) => judged(
                r.fresh.verdict.ready,
                if r.fresh.verdict.ready {
                    "ready"
                } else {
                    "not_ready"
                },
            ),
        };
        let health_answer = match health {
            _ if draining => Answer::out(Condition::Draining, "draining"),
            None => Answer::out(Condition::Unavailable, "unavailable"),
            Some(_) if health_stale => Answer::out(Condition::Stale, "unavailable"),
            Some(h) => judged(
                matches!(h.verdict.status, Status::Healthy | Status::Degraded),
                h.verdict.status.as_str(),
            ),
        };
        let pool_answer = match pool {
            _ if draining => Answer::out(Condition::Draining, "draining"),
            None => Answer::out(Condition::Unavailable, "unavailable"),
            Some(_) if pool_stale => Answer::out(Condition::Stale, "unavailable"),
            Some(p) if usable(&p.verdict) => judged(true, "healthy"),
            Some(_) => judged(false, "error"),
        };
        let started = readiness.is_some();
        let debounced = |passing: bool, condition: Condition, streak: Streak| {
            passing || (condition == Condition::Verdict && !streak.lasted(setup.debounce, t))
        };
        let ready_grpc = match ready.condition {
            Condition::Unavailable => ServingStatus::Unknown,
            _ => serving(ready.passing),
        };
        let ready_debounced = match (ready.condition, readiness) {
            (Condition::Unavailable, _) | (_, None) => ready_grpc,
            (_, Some(r)) => serving(debounced(ready.passing, ready.condition, r.failing)),
        };
        let database_outcome = readiness.and_then(|r| default_database(&r.fresh.verdict.databases));
        let database_serving = |debounce: bool| match (readiness, database_outcome) {
            _ if draining => ServingStatus::NotServing,
            (Some(_), _) if ready_stale => ServingStatus::NotServing,
            (Some(r), Some(outcome)) => {
                let passing = passes_readiness(outcome.status, setup.fail_direction);
                serving(if debounce {
                    debounced(passing, Condition::Verdict, r.database_failing)
                } else {
                    passing
                })
            }
            _ => ServingStatus::Unknown,
        };
        let report =
            health.and_then(|h| h.verdict.components.iter().find(|r| *r.name == *COMPONENT));
        let component = setup.component.as_ref().map(|_| match (health, report) {
            _ if draining => ServingStatus::NotServing,
            (Some(_), _) if health_stale => ServingStatus::NotServing,
            (_, Some(report)) => match report.status {
                ComponentStatus::Healthy | ComponentStatus::Degraded => ServingStatus::Serving,
                ComponentStatus::Unhealthy => ServingStatus::NotServing,
                ComponentStatus::Unknown => ServingStatus::Unknown,
            },
            _ => ServingStatus::Unknown,
        });
        let verdict_status = health.map_or("unavailable", |h| h.verdict.status.as_str());
        let judged_as_is = matches!(
            ready.condition,
            Condition::Verdict | Condition::Held | Condition::Returning
        );
        Expected {
            agent: self.agent(t, ready, health_answer, readiness),
            load_feedback: self.schedule.setup.load_capacity.is_some(),
            ready,
            health: health_answer,
            pool: pool_answer,
            startup: if started {
                judged(true, "started")
            } else {
                Answer::out(Condition::Starting, "starting")
            },
            headline: match health_answer.condition {
                Condition::Draining => "draining",
                Condition::Stale => "unavailable",
                _ => verdict_status,
            },
            rotation: match ready.condition {
                _ if ready.passing => "in rotation",
                Condition::Returning => "out of rotation: returning",
                Condition::Held => "out of rotation: held",
                _ => "out of rotation",
            },
            status_metric: if health_stale {
                "unavailable"
            } else {
                verdict_status
            },
            ready_debounced,
            ready_grpc,
            database: database_serving(false),
            database_debounced: database_serving(true),
            component,
            ready_database: database_outcome
                .filter(|_| judged_as_is)
                .map(|outcome| outcome.status.database_word()),
            health_database: health
                .and_then(|h| h.verdict.database.as_ref())
                .filter(|_| health_answer.condition == Condition::Verdict)
                .map(|outcome| {
                    if outcome.passed() {
                        "healthy"
                    } else {
                        "unhealthy"
                    }
                }),
            // What the verdict says: before the first round, readiness fails for the lack of
            // one, whatever the hold.
            held: held && readiness.is_some(),
            draining,
            started,
            returning: ready.condition == Condition::Returning,
            monitor_failing: readiness.is_none() || ready_stale,
            database_up: database_outcome.map(CheckOutcome::passed),
            component_status: report.map(|report| report.status),
            stale: [ready_stale, health_stale, pool_stale],
        }
    }

    /// HAProxy's words: `drain`, `maint`, `up ready <weight>%` (the slow start's ramp since
    /// the return, the degraded weight while degraded or failing within the debounce), or
    /// `down ready`.
    fn agent(
        &self,
        t: Instant,
        ready: Answer,
        health: Answer,
        readiness: Option<&Readiness>,
    ) -> String {
        let setup = &self.schedule.setup;
        let ramp = readiness
            .and_then(|r| r.returns_at)
            .and_then(|at| t.checked_duration_since(at))
            .map_or(100, |back| {
                if back < setup.slow_start {
                    u128::min(back.as_nanos() * 100 / setup.slow_start.as_nanos() + 1, 100)
                } else {
                    100
                }
            });
        let up = |weight: u128| format!("up ready {weight}%\n");
        let degraded = health.condition == Condition::Verdict && health.status == "degraded";
        let failing_briefly = readiness.is_some_and(|r| !r.failing.lasted(setup.debounce, t));
        match ready.condition {
            Condition::Draining => "drain\n".into(),
            Condition::Held => "maint\n".into(),
            Condition::Verdict if ready.passing && degraded => {
                up(ramp.min(u128::from(setup.degraded_weight)))
            }
            Condition::Verdict if ready.passing => up(ramp),
            Condition::Verdict if failing_briefly => {
                up(ramp.min(u128::from(setup.degraded_weight)))
            }
            _ => "down ready\n".into(),
        }
    }

    /// The instants after `now` at which the answers change without a publication, as far as
    /// what is published now says: a failure lasting the debounce, a return's end, and a
    /// verdict going stale before the next round is due.
    pub(super) fn upcoming(&self, now: Instant) -> Vec<Instant> {
        let setup = &self.schedule.setup;
        let Some(state) = self.state_at(now) else {
            return Vec::new();
        };
        let mut upcoming = Vec::new();
        let mut stale = Vec::new();
        if let Some(r) = &state.readiness {
            stale.push(r.fresh.fresh_from + setup.stale_after(setup.readiness_interval));
            for streak in [r.failing, r.database_failing] {
                if let Streak::Since(since) = streak {
                    upcoming.push(since + setup.debounce);
                }
            }
            upcoming.extend(r.returns_at);
        }
        if let Some(h) = &state.health {
            stale.push(h.fresh_from + setup.stale_after(setup.health_interval));
        }
        if let Some(p) = &state.pool {
            stale.push(p.fresh_from + setup.stale_after(setup.readiness_interval));
        }
        let next_round = now + setup.readiness_interval + setup.deadline;
        upcoming.extend(stale.into_iter().filter(|at| *at <= next_round));
        upcoming.retain(|at| *at > now);
        upcoming
    }

    /// What the model held at `t`, for a finding: the last publications up to it, the last
    /// with what the rules derived from it.
    pub(super) fn context(&self, t: Instant) -> String {
        let setup = &self.schedule.setup;
        let upto = self.states.partition_point(|state| state.at <= t);
        let recent = &self.states[upto.saturating_sub(4)..upto];
        let Some(last) = recent.last() else {
            return "nothing published yet".into();
        };
        let mut context = String::new();
        for state in recent {
            context += &format!("\n  published at {}:", ms(self.since(state.at)));
            if let Some(r) = &state.readiness {
                let verdict = &r.fresh.verdict;
                context += &format!(
                    " readiness ready={} held={} database={:?} components={:?} (fresh from {});",
                    verdict.ready,
                    verdict.held.is_some(),
                    default_database(&verdict.databases).map(|o| o.status.as_str()),
                    verdict
                        .components
                        .iter()
                        .map(|r| r.status.as_str())
                        .collect::<Vec<_>>(),
                    ms(self.since(r.fresh.fresh_from)),
                );
            }
            if let Some(h) = &state.health {
                context += &format!(
                    " health {} database={:?} components={:?} (fresh from {})",
                    h.verdict.status.as_str(),
                    h.verdict.database.as_ref().map(|o| o.status.as_str()),
                    h.verdict
                        .components
                        .iter()
                        .map(|r| (
                            r.status.as_str(),
                            r.outcome.as_ref().map(|o| o.status.as_str())
                        ))
                        .collect::<Vec<_>>(),
                    ms(self.since(h.fresh_from)),
                );
            }
        }
        if let Some(r) = &last.readiness {
            context += &format!(
                "\n  readiness stale after {}, failing {}, returns {}",
                ms(setup.stale_after(setup.readiness_interval)),
                match r.failing {
                    Streak::Passing => "no".to_owned(),
                    Streak::Since(since) => format!("since {}", ms(self.since(since))),
                    Streak::Always => "since the start".to_owned(),
                },
                r.returns_at.map_or_else(
                    || "never".to_owned(),
                    |at| format!("at {}", ms(self.since(at)))
                ),
            );
        }
        context
    }
}

/// `published` as the rules read it: `None` for a placeholder; fresh from now when it was
/// made anew, else from when the verdict it repeats was.
fn fresh<V>(
    published: &Arc<Published<V>>,
    before: Option<&Fresh<V>>,
    at: Instant,
) -> Option<Fresh<V>> {
    let made = published.when_made()?;
    let fresh_from = before
        .filter(|before| before.made.is_some_and(|b| same(b, made)))
        .map_or(at, |before| before.fresh_from);
    Some(Fresh {
        verdict: published.verdict.clone(),
        made: Some(made),
        fresh_from,
    })
}

fn same(a: Made, b: Made) -> bool {
    a.round_started == b.round_started && a.computed_at == b.computed_at && a.stale_at == b.stale_at
}

/// When readiness comes back into rotation, after `before` (none: the start), as a verdict
/// that `verdict` says is published at `at`. A return counts from the first verdict that
/// passes after the start, a hold or a stale verdict (at once), and after a failure that
/// lasted the debounce (an outage: after the jitter); a shorter failure (a blip) is no
/// return, and a return still ahead stays ahead.
fn returns_at(
    before: Option<&Readiness>,
    verdict: &ReadinessVerdict,
    debounce: Duration,
    jitter: Duration,
    stale_by_now: impl Fn(Instant) -> bool,
    at: Instant,
) -> Option<Instant> {
    let kept = before.and_then(|before| before.returns_at);
    let passes = verdict.ready && verdict.held.is_none();
    if !passes || kept.is_some_and(|back| back > at) {
        return kept;
    }
    let Some(before) = before else {
        return Some(at);
    };
    let out = stale_by_now(before.fresh.fresh_from);
    if before.passes() && !out {
        return kept;
    }
    let was_failing = !before.fresh.verdict.ready && matches!(before.failing, Streak::Since(_));
    let outage = was_failing && before.failing.lasted(debounce, at);
    let blip = was_failing && !outage && before.fresh.verdict.held.is_none() && !out;
    if blip {
        return kept;
    }
    Some(at + if outage { jitter } else { Duration::ZERO })
}

fn judged(passing: bool, status: &'static str) -> Answer {
    Answer {
        passing,
        condition: Condition::Verdict,
        status,
    }
}

fn default_database(outcomes: &[CheckOutcome]) -> Option<&CheckOutcome> {
    outcomes.iter().find(|outcome| *outcome.name == *"default")
}

/// Whether a database whose check ended so lets readiness pass: timed out counts as passing
/// under `FailDirection::Ready`.
fn passes_readiness(status: CheckStatus, fail_direction: FailDirection) -> bool {
    match status {
        CheckStatus::Passed => true,
        CheckStatus::TimedOut => fail_direction == FailDirection::Ready,
        CheckStatus::Failed => false,
    }
}

fn usable(pool: &PoolVerdict) -> bool {
    pool.outcome.as_ref().is_some_and(CheckOutcome::passed)
}
