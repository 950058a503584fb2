//! The fleet over time: several monitors in one process sharing the real Redis
//! (127.0.0.1:6379, or `TEST_REDIS_URL`) with the fleet guard on, their common database
//! failing and coming back as a seed's schedule says, in real time (Redis's clock decides
//! who counts, and paused time does not mix with real I/O).
//!
//! Two rules (16 and 17 of the [timeline test](super)), from SPEC 10, 12 and 14 and issue 35:
//!
//! - **A return is not in rotation.** A process waiting out its return's jitter (readiness
//!   503 `returning`) never writes `ready` as its standing: read between two readings of its
//!   view that both say it is returning, the standing it wrote is not `ready`. Exact: no
//!   timing is assumed.
//! - **The fleet keeps what the guard wants.** Once every process has had three readiness
//!   rounds since the last change (the database, a hold, a drain, a process coming or
//!   going: the documented transition, counted in rounds rather than time), at least
//!   `min(ceil(fraction × members), eligible)` processes answer readiness 200, `eligible`
//!   being the processes neither held, draining nor returning. A return never takes the
//!   fleet below it. (Not judged while a process out on the database has no word of the
//!   guard: its round could not read the fleet, and readiness is its own, as documented.)

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::schedule::{Behaviour, Rng, ms};
use super::scripted::Scripted;
use crate::monitor::HealthHandle;
use crate::probe::Probe;
use crate::redis::SharedCache;
use crate::view::Condition;
use crate::{HealthConfig, HealthMonitor};

/// How many fleet schedules CI runs (each a few seconds of real time): six, so that CI meets
/// the first schedule (seed 5) in which a process the guard keeps in would be held out by a
/// return's delay (issue 35 A1's second face) as well as seed 0, which meets a return standing
/// `ready`.
const SCHEDULES: u64 = 6;

#[test]
fn a_fleet_keeps_what_its_guard_wants_and_a_return_is_not_in_rotation() {
    let seeds = match std::env::var("TIMELINE_FLEET_SEED") {
        Ok(seed) => {
            let seed: u64 = seed.parse().expect("TIMELINE_FLEET_SEED is a number");
            seed..seed + 1
        }
        Err(_) => {
            let count = std::env::var("TIMELINE_FLEET_SCHEDULES")
                .ok()
                .and_then(|count| count.parse().ok())
                .unwrap_or(SCHEDULES);
            0..count
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    for seed in seeds {
        let fleet = Fleet::of(seed);
        if let Err(finding) = runtime.block_on(fleet.run()) {
            panic!(
                "the fleet timeline found a disagreement in seed {seed} (TIMELINE_FLEET_SEED={seed} replays its schedule; real time and Redis decide the rest):\n{finding}\nschedule:\n{fleet}"
            );
        }
    }
}

/// One process of a fleet's schedule.
#[derive(Clone, Debug)]
struct Member {
    id: String,
    /// When it starts and, if it does, when its monitor stops (since the start).
    starts: Duration,
    stops: Option<Duration>,
    /// When an operator holds it and releases it.
    held: Option<(Duration, Duration)>,
    drains: Option<Duration>,
}

/// A fleet's schedule.
#[derive(Clone, Debug)]
struct Fleet {
    seed: u64,
    fraction: f64,
    readiness_interval: Duration,
    deadline: Duration,
    debounce: Duration,
    return_jitter: Duration,
    members: Vec<Member>,
    /// The shared database's behaviour from each instant on.
    database: Vec<(Duration, Behaviour)>,
    length: Duration,
}

impl Fleet {
    fn of(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xF1EE7);
        let interval = rng.range(50, 100);
        let readiness_interval = Duration::from_millis(interval);
        // Room for a Redis round trip on a loaded machine: a round that misses it leaves
        // the guard off (and this rule unjudged) for that round.
        let deadline = Duration::from_millis(rng.range(30, 45));
        let debounce = Duration::from_millis(interval * rng.pick(&[0, 2, 4]));
        // A return to wait out, and a guard that keeps some of the fleet in and lets the
        // others go (and so return), whatever the fleet's size: what the rules are about.
        let return_jitter = Duration::from_millis(interval * rng.pick(&[12, 25]));
        let fraction = rng.pick(&[0.5, 0.34]);
        let count = rng.range(2, 4);
        let mut members: Vec<Member> = (0..count)
            .map(|index| Member {
                id: format!("m-{index}"),
                starts: Duration::ZERO,
                stops: None,
                held: None,
                drains: None,
            })
            .collect();
        let failure = |rng: &mut Rng| {
            if rng.chance(60) {
                Behaviour::Refused
            } else {
                Behaviour::Hangs
            }
        };
        let passes = Behaviour::Passes(Duration::from_millis(1));
        // An outage longer than the debounce, its return, and often a second failure while
        // the return's jitter still runs.
        let down = Duration::from_millis(rng.range(300, 700));
        let outage = debounce + readiness_interval * 4 + Duration::from_millis(rng.range(0, 800));
        let back = down + outage;
        let mut database = vec![
            (Duration::ZERO, passes),
            (down, failure(&mut rng)),
            (back, passes),
        ];
        let mut length = back + return_jitter + Duration::from_millis(800);
        if rng.chance(60) {
            let again = back + readiness_interval * 3 + return_jitter.mul_f64(rng.fraction() * 0.6);
            let again_back =
                again + readiness_interval * u32::try_from(rng.range(6, 20)).unwrap_or(8);
            database.push((again, failure(&mut rng)));
            database.push((again_back, passes));
            length = length.max(again_back + return_jitter + Duration::from_millis(800));
        }
        // The operator's and the processes' own events come after the first outage, which
        // every schedule has whole: a fleet failing together, kept in part, returning.
        let at = |rng: &mut Rng, length: Duration| {
            let first_return = back.as_millis() as u64 + 100;
            Duration::from_millis(rng.range(first_return, length.as_millis() as u64 - 100))
        };
        if rng.chance(35) {
            let member = usize::try_from(rng.range(0, count - 1)).unwrap_or(0);
            let from = at(&mut rng, length);
            members[member].held = Some((from, from + Duration::from_millis(rng.range(100, 900))));
        }
        if rng.chance(25) {
            let member = usize::try_from(rng.range(0, count - 1)).unwrap_or(0);
            members[member].drains = Some(at(&mut rng, length));
        }
        if rng.chance(30) {
            let member = usize::try_from(rng.range(0, count - 1)).unwrap_or(0);
            members[member].stops = Some(at(&mut rng, length));
        }
        if rng.chance(30) {
            members.push(Member {
                id: format!("m-{count}"),
                starts: at(&mut rng, length),
                stops: None,
                held: None,
                drains: None,
            });
        }
        Self {
            seed,
            fraction,
            readiness_interval,
            deadline,
            debounce,
            return_jitter,
            members,
            database,
            length,
        }
    }

    /// Runs the schedule; the first disagreement, if any.
    async fn run(&self) -> Result<(), String> {
        let url =
            std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let client = redis::Client::open(url.as_str()).expect("a Redis URL");
        let mut redis = tokio::time::timeout(
            Duration::from_secs(10),
            client.get_multiplexed_async_connection(),
        )
        .await
        .map_err(|_| format!("Redis at {url} did not answer"))?
        .map_err(|error| format!("Redis at {url} refused: {error}"))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let prefix = format!(
            "tower-health-timeline:{}:{nanos}:{}:",
            std::process::id(),
            self.seed
        );
        let database = Scripted::new(self.database[0].1);
        let mut live: HashMap<String, Live> = HashMap::new();
        let mut last_change = Change::new(Duration::ZERO);
        let started = Instant::now();
        let mut result = Ok(());
        let mut applied = 1;
        while result.is_ok() {
            let now = started.elapsed();
            if now > self.length {
                break;
            }
            // The schedule's events due by now.
            while let Some((at, behaviour)) =
                self.database.get(applied).filter(|(at, _)| *at <= now)
            {
                database.set(*behaviour);
                last_change = Change::new(*at);
                applied += 1;
            }
            for member in &self.members {
                let entry = live.get_mut(&member.id);
                match entry {
                    None if member.starts <= now && member.stops.is_none_or(|stop| stop > now) => {
                        let handle = self.start(member, &prefix, &url, database.clone())?;
                        live.insert(member.id.clone(), Live::new(handle));
                        last_change = Change::new(now);
                    }
                    Some(running) => {
                        let Some(handle) = running.handle.clone() else {
                            continue;
                        };
                        if member.stops.is_some_and(|stop| stop <= now) {
                            running.handle = None;
                            // Its standing counts until it expires: three rounds and the
                            // deadline after it last wrote (by Redis's clock).
                            let expiry = self.readiness_interval * 3 + self.deadline;
                            last_change = Change::new(now + expiry + Duration::from_millis(50));
                            continue;
                        }
                        if let Some((hold, release)) = member.held {
                            if hold <= now && !running.held && !running.released {
                                handle.hold("the fleet timeline holds");
                                running.held = true;
                                last_change = Change::new(now);
                            }
                            if release <= now && running.held {
                                handle.release();
                                running.held = false;
                                running.released = true;
                                last_change = Change::new(now);
                            }
                        }
                        if member.drains.is_some_and(|at| at <= now) && !running.draining {
                            handle.drain().start();
                            running.draining = true;
                            last_change = Change::new(now);
                        }
                    }
                    None => {}
                }
            }
            last_change.note(&live, now);
            result = self
                .check(&live, &mut redis, &prefix, &last_change, now)
                .await;
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        for running in live.values_mut() {
            running.handle = None;
        }
        let keys = ["fleet", "health", "health:lock"].map(|key| format!("{prefix}{key}"));
        let _: Result<(), _> = redis::cmd("DEL").arg(&keys).query_async(&mut redis).await;
        result
    }

    fn start(
        &self,
        member: &Member,
        prefix: &str,
        url: &str,
        database: Scripted,
    ) -> Result<HealthHandle, String> {
        let cache = SharedCache::connect(url)
            .map_err(|error| error.to_string())?
            .key_prefix(prefix)
            .process_id(member.id.clone())
            .fleet_guard(self.fraction);
        let config = HealthConfig::new()
            .readiness_interval(self.readiness_interval)
            .readiness_timeout(self.deadline)
            .health_interval(Duration::from_millis(400))
            .debounce(self.debounce)
            .return_jitter(self.return_jitter)
            .database("default", database)
            .shared_cache(cache);
        HealthMonitor::spawn(config).map_err(|error| error.to_string())
    }

    /// The two rules at one instant.
    async fn check(
        &self,
        live: &HashMap<String, Live>,
        redis: &mut redis::aio::MultiplexedConnection,
        prefix: &str,
        change: &Change,
        now: Duration,
    ) -> Result<(), String> {
        let running: Vec<(&String, &Live, &HealthHandle)> = live
            .iter()
            .filter_map(|(id, member)| Some((id, member, member.handle.as_ref()?)))
            .collect();
        let before: Vec<_> = running.iter().map(|(_, _, handle)| ready(handle)).collect();
        let fleet: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("{prefix}fleet"))
            .query_async(redis)
            .await
            .map_err(|error| format!("HGETALL: {error}"))?;
        let after: Vec<_> = running.iter().map(|(_, _, handle)| ready(handle)).collect();
        // A return is not in rotation: a process returning throughout the read wrote no `ready`.
        for (((id, _, _), before), after) in running.iter().zip(&before).zip(&after) {
            let returning =
                before.condition == Condition::Returning && after.condition == Condition::Returning;
            let standing = fleet.get(*id).and_then(|value| value.splitn(3, ' ').nth(2));
            if returning && standing == Some("ready") {
                return Err(format!(
                    "rule 16, a return is not in rotation: at {}: {id} answers readiness 503 returning (its return's jitter runs) and stands `ready` in {prefix}fleet: {:?}",
                    ms(now),
                    fleet
                ));
            }
        }
        // The fleet keeps what the guard wants, once every process had its rounds since the
        // last change (see `Change::settled`).
        if !change.settled(live) || before.iter().chain(&after).any(|ready| ready.guard_off) {
            return Ok(());
        }
        let members = running.len();
        // In millionths, as the guard counts: ceil(fraction × members), exactly.
        let millionths = (self.fraction * 1e6).round() as usize;
        let wanted = (members * millionths).div_ceil(1_000_000);
        let eligible = running
            .iter()
            .zip(&after)
            .filter(|((_, member, _), answer)| {
                !member.held && !member.draining && answer.condition != Condition::Returning
            })
            .count();
        let in_rotation = after.iter().filter(|answer| answer.passing).count();
        if in_rotation < wanted.min(eligible) {
            let answers: Vec<String> = running
                .iter()
                .zip(&after)
                .map(|((id, _, _), answer)| {
                    format!(
                        "{id}: {} {}",
                        if answer.passing { 200 } else { 503 },
                        answer.condition
                    )
                })
                .collect();
            return Err(format!(
                "rule 17, the fleet keeps what the guard wants: at {}: {in_rotation} of {members} processes answer readiness 200, the guard wants {wanted} (fraction {}) of which {eligible} can: {}; standings: {:?}",
                ms(now),
                self.fraction,
                answers.join(", "),
                fleet
            ));
        }
        Ok(())
    }
}

/// A running member.
struct Live {
    /// `None` once its monitor stopped (every handle dropped, as a process that exits).
    handle: Option<HealthHandle>,
    held: bool,
    released: bool,
    draining: bool,
}

impl Live {
    fn new(handle: HealthHandle) -> Self {
        Self {
            handle: Some(handle),
            held: false,
            released: false,
            draining: false,
        }
    }

    fn rounds(&self) -> Option<u64> {
        Some(self.handle.as_ref()?.stats().readiness_rounds)
    }
}

/// The last change of the fleet's schedule, and the readiness rounds each process had
/// completed once it took effect.
struct Change {
    at: Duration,
    rounds: Option<HashMap<String, u64>>,
}

impl Change {
    fn new(at: Duration) -> Self {
        Self { at, rounds: None }
    }

    /// Notes each process's rounds once the change has taken effect (a stopped process's
    /// standing expires after its stop).
    fn note(&mut self, live: &HashMap<String, Live>, now: Duration) {
        if self.rounds.is_none() && now >= self.at {
            let rounds = live
                .iter()
                .filter_map(|(id, member)| Some((id.clone(), member.rounds()?)))
                .collect();
            self.rounds = Some(rounds);
        }
    }

    /// Whether every running process has completed, besides the round it was in at the
    /// change, a round that wrote its standing since and two that read the others' (a
    /// round's margin for processes whose rounds drift apart under load).
    fn settled(&self, live: &HashMap<String, Live>) -> bool {
        let Some(rounds) = &self.rounds else {
            return false;
        };
        live.iter().all(|(id, member)| match member.rounds() {
            None => true,
            Some(now) => now >= rounds.get(id).copied().unwrap_or(0) + 4,
        })
    }
}

/// Readiness's answer now.
fn ready(handle: &HealthHandle) -> Ready {
    let view = handle.view();
    let answer = view.answer(Probe::Ready);
    Ready {
        passing: answer.passing,
        condition: answer.condition,
        // Out on the database with no word of the guard: this round could not read the fleet
        // (Redis slow or in error), and readiness is the process's own, as documented.
        guard_off: answer.condition == Condition::Verdict
            && !answer.passing
            && view.readiness.fleet_guard.is_none(),
    }
}

/// Readiness's answer, and whether the guard could count for it.
struct Ready {
    passing: bool,
    condition: Condition,
    guard_off: bool,
}

impl std::fmt::Display for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "  fleet guard {}, readiness every {} (deadline {}), debounce {}, return jitter {}; runs {}",
            self.fraction,
            ms(self.readiness_interval),
            ms(self.deadline),
            ms(self.debounce),
            ms(self.return_jitter),
            ms(self.length)
        )?;
        for (at, behaviour) in &self.database {
            writeln!(f, "  at {}: database {behaviour}", ms(*at))?;
        }
        for member in &self.members {
            write!(f, "  {}: starts at {}", member.id, ms(member.starts))?;
            if let Some((hold, release)) = member.held {
                write!(f, ", held from {} to {}", ms(hold), ms(release))?;
            }
            if let Some(at) = member.drains {
                write!(f, ", drains at {}", ms(at))?;
            }
            if let Some(at) = member.stops {
                write!(f, ", stops at {}", ms(at))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
