//! Random schedules from a seed: a configuration, the checks' behaviour over time and the
//! operator's and the runtime's events; and how a failing schedule is shortened.

use std::fmt;
use std::time::Duration;

use crate::verdict::FailDirection;

/// SplitMix64: a small generator whose whole state is the seed, so that a seed names one
/// schedule on every machine.
#[derive(Clone, Debug)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub(super) fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    /// True `percent` times in a hundred.
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// A number in `[0, 1)`.
    pub(super) fn fraction(&mut self) -> f64 {
        // The top 53 bits, as a double's mantissa holds them.
        #[allow(clippy::cast_precision_loss)]
        let fraction = (self.next() >> 11) as f64 / (1_u64 << 53) as f64;
        fraction
    }

    pub(super) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        let index = usize::try_from(self.range(0, items.len() as u64 - 1)).unwrap_or(0);
        items[index]
    }

    /// A duration of `low..=high` milliseconds.
    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(self.range(low, high.max(low)))
    }
}

/// What a check does from some instant on (each check the monitor starts reads it as it
/// starts; a check that hangs goes on as the next behaviour says once it changes, as a
/// stalled database's query completes when the stall ends).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Behaviour {
    /// Answers after this long, within its deadline.
    Passes(Duration),
    /// Refuses at once.
    Refused,
    /// Fails its query after this long, within its deadline.
    QueryFails(Duration),
    /// Never answers until the behaviour changes.
    Hangs,
    /// Answers after this long, past its deadline.
    Slow(Duration),
}

impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Passes(after) => write!(f, "passes in {}", ms(*after)),
            Self::Refused => f.write_str("refused"),
            Self::QueryFails(after) => write!(f, "query fails in {}", ms(*after)),
            Self::Hangs => f.write_str("hangs"),
            Self::Slow(after) => write!(f, "slow, answers in {}", ms(*after)),
        }
    }
}

/// The component of a schedule, and how the monitor treats it.
#[derive(Clone, Debug)]
pub(super) struct ComponentSetup {
    pub(super) critical: bool,
    pub(super) gates_readiness: bool,
    /// Its own timeout (`ComponentSpec::timeout`), at most the deadline.
    pub(super) timeout: Option<Duration>,
    pub(super) failures_before_trouble: u32,
    pub(super) successes_before_recovery: u32,
}

impl ComponentSetup {
    /// How long a round waits for it: its own timeout, within the round's deadline.
    pub(super) fn wait(&self, deadline: Duration) -> Duration {
        self.timeout
            .map_or(deadline, |timeout| timeout.min(deadline))
    }
}

/// A schedule's configuration.
#[derive(Clone, Debug)]
pub(super) struct Setup {
    pub(super) readiness_interval: Duration,
    pub(super) deadline: Duration,
    pub(super) health_interval: Duration,
    pub(super) debounce: Duration,
    pub(super) return_jitter: Duration,
    /// What every random draw returns in this schedule (see `crate::random`): the return's
    /// delay is this part of `return_jitter`.
    pub(super) drawn: f64,
    pub(super) fail_direction: FailDirection,
    pub(super) component: Option<ComponentSetup>,
    /// The HAProxy agent's slow start and its degraded weight.
    pub(super) slow_start: Duration,
    pub(super) degraded_weight: u8,
    /// Load feedback's capacity, when on (`HealthConfig::load_capacity`).
    pub(super) load_capacity: Option<u32>,
    /// Which of the readers that cost the most in the test profile (no optimisation) this
    /// schedule asks; the others are asked in every schedule.
    pub(super) costly: Costly,
}

/// The readers whose cost in the test profile (no optimisation) would put 1,000 schedules
/// past a minute if every schedule asked them, measured on a seed range of 20 (2 cores):
/// the HTTP stack renders every verdict as it is published (about 12 ms of a schedule's
/// round, three times what the rest of the round costs), the page renders its `<main>` at
/// each change it follows (about 1 ms), and the exposition re-renders at each sample after
/// a change (about 1 ms). Each is asked in a share of the schedules, drawn from the seed;
/// `TIMELINE_READERS=all` asks them all in every schedule.
#[derive(Copy, Clone, Debug)]
pub(super) struct Costly {
    /// The six HTTP probes and `?verbose` through `HealthLayer`: one schedule in eight.
    pub(super) http: bool,
    /// The operator's page, followed through its updates: one in four.
    pub(super) page: bool,
    /// The Prometheus exposition: one in two.
    pub(super) metrics: bool,
}

impl Costly {
    fn drawn(rng: &mut Rng) -> Self {
        // Drawn whatever the variable says, so that a seed names one schedule.
        let drawn = Self {
            http: rng.chance(13),
            page: rng.chance(25),
            metrics: rng.chance(50),
        };
        if std::env::var("TIMELINE_READERS").is_ok_and(|readers| readers == "all") {
            return Self {
                http: true,
                page: true,
                metrics: true,
            };
        }
        drawn
    }
}

impl Setup {
    /// The return's delay after an outage, as the monitor draws it here.
    pub(super) fn jitter(&self) -> Duration {
        self.return_jitter.mul_f64(self.drawn)
    }

    /// Three missed rounds plus the deadline: when a verdict of `interval` goes stale.
    pub(super) fn stale_after(&self, interval: Duration) -> Duration {
        interval * 3 + self.deadline
    }
}

/// One event of a schedule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum What {
    Database(Behaviour),
    Component(Behaviour),
    Hold,
    Release,
    Drain,
    /// The runtime's only thread is busy this long: every timer due meanwhile fires late.
    Block(Duration),
    /// This many application requests in flight from now on (counted in the drain, as a
    /// `DrainLayer` counts them), in place of those before.
    InFlight(u32),
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Database(behaviour) => write!(f, "database {behaviour}"),
            Self::Component(behaviour) => write!(f, "component {behaviour}"),
            Self::Hold => f.write_str("hold"),
            Self::Release => f.write_str("release"),
            Self::Drain => f.write_str("drain starts"),
            Self::Block(long) => write!(f, "runtime blocked for {}", ms(*long)),
            Self::InFlight(requests) => write!(f, "{requests} request(s) in flight"),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Event {
    /// Since the monitor started.
    pub(super) at: Duration,
    pub(super) what: What,
}

/// A configuration, the checks' behaviour at the start, and the events after it.
#[derive(Clone, Debug)]
pub(super) struct Schedule {
    pub(super) seed: u64,
    pub(super) setup: Setup,
    pub(super) database: Behaviour,
    pub(super) component: Behaviour,
    pub(super) events: Vec<Event>,
    /// How long it runs.
    pub(super) length: Duration,
}

impl Schedule {
    /// The schedule of `seed`.
    pub(super) fn of(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let readiness_interval =
            Duration::from_millis(rng.pick(&[100, 150, 200, 250, 400, 500, 1000, 2000]));
        let interval_ms = readiness_interval.as_millis() as u64;
        let deadline = rng.millis(20, (interval_ms * 3 / 5).min(500));
        let health_interval = readiness_interval * rng.pick(&[1, 2, 3, 5, 10]);
        let debounce = if rng.chance(15) {
            Duration::ZERO
        } else {
            rng.millis(1, interval_ms * 5)
        };
        let return_jitter = if rng.chance(20) {
            Duration::ZERO
        } else {
            rng.millis(1, interval_ms * 6)
        };
        let component = rng.chance(75).then(|| {
            let deadline_ms = deadline.as_millis() as u64;
            ComponentSetup {
                critical: rng.chance(50),
                gates_readiness: rng.chance(40),
                timeout: rng
                    .chance(60)
                    .then(|| rng.millis(5, deadline_ms.saturating_sub(5).max(5))),
                failures_before_trouble: rng.pick(&[1, 1, 2]),
                successes_before_recovery: rng.pick(&[1, 1, 2]),
            }
        });
        let setup = Setup {
            readiness_interval,
            deadline,
            health_interval,
            debounce,
            return_jitter,
            drawn: rng.fraction(),
            fail_direction: if rng.chance(20) {
                FailDirection::Ready
            } else {
                FailDirection::NotReady
            },
            component,
            slow_start: rng.millis(0, interval_ms * 10),
            degraded_weight: u8::try_from(rng.range(1, 100)).unwrap_or(50),
            costly: Costly::drawn(&mut rng),
            load_capacity: None,
        };
        let length = readiness_interval * u32::try_from(rng.range(10, 30)).unwrap_or(20);
        let database = if rng.chance(15) {
            database_behaviour(&mut rng, &setup)
        } else {
            Behaviour::Passes(rng.millis(0, 3))
        };
        let component = match &setup.component {
            Some(component) if rng.chance(15) => component_behaviour(&mut rng, &setup, component),
            _ => Behaviour::Passes(Duration::ZERO),
        };
        let count = rng.range(2, 14);
        let mut events = Vec::new();
        let mut drained = false;
        for _ in 0..count {
            let at = Duration::from_millis(rng.range(1, length.as_millis() as u64 - 1));
            let roll = rng.range(0, 99);
            let what = match (roll, &setup.component) {
                (0..=39, _) => What::Database(database_behaviour(&mut rng, &setup)),
                (40..=59, Some(component)) => {
                    What::Component(component_behaviour(&mut rng, &setup, component))
                }
                (40..=59, None) => What::Database(database_behaviour(&mut rng, &setup)),
                (60..=69, _) => What::Hold,
                (70..=79, _) => What::Release,
                (80..=94, _) => What::Block(rng.millis(
                    30,
                    (setup.stale_after(readiness_interval)).as_millis() as u64 * 3 / 2,
                )),
                _ if !drained => {
                    drained = true;
                    What::Drain
                }
                _ => What::Release,
            };
            events.push(Event { at, what });
        }
        // Load feedback, from a generator of its own: every schedule drawn before it came
        // stays as it was (the seeds named in notes and docs still name the same schedule).
        let mut setup = setup;
        let mut load = Rng::new(seed ^ 0x10AD);
        if load.chance(50) {
            let capacity = u32::try_from(load.range(1, 8)).unwrap_or(4);
            setup.load_capacity = Some(capacity);
            for _ in 0..load.range(1, 4) {
                let at = Duration::from_millis(load.range(1, length.as_millis() as u64 - 1));
                let requests = u32::try_from(load.range(0, 2 * u64::from(capacity))).unwrap_or(0);
                events.push(Event {
                    at,
                    what: What::InFlight(requests),
                });
            }
        }
        events.sort_by_key(|event| event.at);
        // Nothing happens while the runtime is blocked: what falls in a block happens as it
        // ends.
        let mut blocked_until = Duration::ZERO;
        for event in &mut events {
            event.at = event.at.max(blocked_until);
            if let What::Block(long) = event.what {
                blocked_until = event.at + long;
            }
        }
        Self {
            seed,
            setup,
            database,
            component,
            events,
            length,
        }
    }

    /// Shorter schedules that may fail the same way, the likeliest first: each without one
    /// of its events, then ending earlier.
    pub(super) fn shorter(&self, failed_at: Duration) -> Vec<Self> {
        let mut shorter = Vec::new();
        // Past the failure, as long as a rule judged then may look ahead (a transition's
        // line may come a readiness interval and a deadline late).
        let ahead = (self.setup.readiness_interval + self.setup.deadline) * 2;
        let end = (failed_at + ahead).min(self.length);
        if end < self.length {
            let mut cut = self.clone();
            cut.length = end;
            cut.events.retain(|event| event.at < end);
            shorter.push(cut);
        }
        for index in (0..self.events.len()).rev() {
            let mut without = self.clone();
            without.events.remove(index);
            shorter.push(without);
        }
        if self.setup.component.is_some()
            && !self
                .events
                .iter()
                .any(|event| matches!(event.what, What::Component(_)))
        {
            let mut without = self.clone();
            without.setup.component = None;
            shorter.push(without);
        }
        shorter
    }
}

fn database_behaviour(rng: &mut Rng, setup: &Setup) -> Behaviour {
    let deadline = setup.deadline.as_millis() as u64;
    let interval = setup.readiness_interval.as_millis() as u64;
    match rng.range(0, 99) {
        0..=39 => Behaviour::Passes(rng.millis(0, deadline - 5)),
        40..=59 => Behaviour::Refused,
        60..=69 => Behaviour::QueryFails(rng.millis(0, deadline - 5)),
        70..=89 => Behaviour::Hangs,
        _ => Behaviour::Slow(rng.millis(deadline + 5, deadline + interval)),
    }
}

fn component_behaviour(rng: &mut Rng, setup: &Setup, component: &ComponentSetup) -> Behaviour {
    let wait = component.wait(setup.deadline).as_millis() as u64;
    let health = setup.health_interval.as_millis() as u64;
    match rng.range(0, 99) {
        0..=44 => Behaviour::Passes(rng.millis(0, wait.saturating_sub(5))),
        45..=64 => Behaviour::Refused,
        65..=84 => Behaviour::Hangs,
        // Past its wait, and over before the next health round starts another.
        _ => Behaviour::Slow(rng.millis(wait + 5, (health - 5).min(wait + 400))),
    }
}

/// Milliseconds, with their fraction when there is one.
pub(super) fn ms(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros.is_multiple_of(1000) {
        format!("{}ms", micros / 1000)
    } else {
        format!("{}.{:03}ms", micros / 1000, micros % 1000)
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let setup = &self.setup;
        writeln!(
            f,
            "seed {}: readiness every {} (deadline {}), health every {}, debounce {}, return jitter {} (drawn: {}), fail direction {}, agent slow start {} and degraded weight {}%, load capacity {}; runs {}",
            self.seed,
            ms(setup.readiness_interval),
            ms(setup.deadline),
            ms(setup.health_interval),
            ms(setup.debounce),
            ms(setup.return_jitter),
            ms(setup.jitter()),
            setup.fail_direction.as_str(),
            ms(setup.slow_start),
            setup.degraded_weight,
            setup
                .load_capacity
                .map_or_else(|| "off".to_owned(), |capacity| capacity.to_string()),
            ms(self.length),
        )?;
        match &setup.component {
            Some(component) => writeln!(
                f,
                "  component `cache`: {}critical, {}gating readiness, timeout {}, trouble after {} failure(s), healthy after {} success(es)",
                if component.critical { "" } else { "not " },
                if component.gates_readiness {
                    ""
                } else {
                    "not "
                },
                component
                    .timeout
                    .map_or_else(|| "the deadline's".to_owned(), ms),
                component.failures_before_trouble,
                component.successes_before_recovery,
            )?,
            None => writeln!(f, "  no component")?,
        }
        write!(f, "  at 0ms: database {}", self.database)?;
        if setup.component.is_some() {
            write!(f, "; component {}", self.component)?;
        }
        for event in &self.events {
            write!(f, "\n  at {}: {}", ms(event.at), event.what)?;
        }
        Ok(())
    }
}
