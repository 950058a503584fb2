//! The fleet guard's rule: when a readiness failure caused by a dependency the whole fleet
//! shares would leave too little of the fleet in rotation, some processes stay in.
//!
//! Pure functions over what the fleet's members published; the monitor feeds them (the
//! members come from Redis, `redis/shared/fleet.rs`) and applies the result to its readiness
//! verdict. See [`FleetGuard`].
// Without Redis there is no fleet to count: only the verdict's field is read.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::fmt;
use std::sync::Arc;

use super::CheckErrorKind;
use super::{ReadinessRules, ReadinessVerdict};

/// A fraction of the fleet, in millionths so that `ceil(fraction * members)` is exact
/// (`0.3 * 10` is `3.0000000000000004` in floating point, which would round up to 4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fraction {
    millionths: u32,
}

impl Fraction {
    const ONE: u32 = 1_000_000;

    /// What a setting of the fleet guard accepts.
    pub(crate) const EXPECTED: &str = "expected the fraction of the fleet to keep in rotation, more than 0 and at most 1 (0.5 for half)";

    /// `fraction` when it is in (0, 1]; a positive fraction below one millionth is one
    /// millionth.
    pub(crate) fn new(fraction: f64) -> Option<Self> {
        (fraction.is_finite() && fraction > 0.0 && fraction <= 1.0).then(|| Self {
            // In range: at most one million, at least one.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            millionths: ((fraction * f64::from(Self::ONE)).round() as u32).max(1),
        })
    }

    /// The fewest of `members` that make this fraction: rounded up, so that the guard keeps
    /// at least the fraction.
    pub(crate) fn of(self, members: usize) -> usize {
        let members = u64::try_from(members).unwrap_or(u64::MAX);
        let wanted =
            (members.saturating_mul(u64::from(self.millionths))).div_ceil(u64::from(Self::ONE));
        usize::try_from(wanted).unwrap_or(usize::MAX)
    }

    /// The fraction, as the bodies show it.
    pub(crate) fn as_f64(self) -> f64 {
        f64::from(self.millionths) / f64::from(Self::ONE)
    }
}

impl fmt::Display for Fraction {
    /// As a percentage: `50%`, `33.3333%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hundredths_of_a_percent = self.millionths / 100;
        let (whole, part) = (hundredths_of_a_percent / 100, self.millionths % 10_000);
        if part == 0 {
            write!(f, "{whole}%")
        } else {
            let part = format!("{part:04}");
            write!(f, "{whole}.{}%", part.trim_end_matches('0'))
        }
    }
}

/// Where a process stands, as it tells its fleet each readiness round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// In rotation on its own checks.
    Ready,
    /// Out only because of dependencies the whole fleet shares; `cause` names the first
    /// (`database default`).
    Shared {
        /// What fails, as the reason names it.
        cause: Arc<str>,
    },
    /// Out for a cause of its own: a drain, a hold, a component of its own, its own pool,
    /// a round that panicked, no verdict. The guard never keeps such a process in.
    Local,
    /// Its checks pass, and it waits out its return after an outage
    /// ([`HealthConfig::return_jitter`](crate::HealthConfig::return_jitter)): out of rotation,
    /// as readiness answers, and not the guard's to keep (the delay spreads the fleet's
    /// return; the processes the guard kept in are in rotation meanwhile).
    Returning,
}

impl Standing {
    /// Where the process whose readiness round concluded `verdict` (its checks and its hold,
    /// before the guard's decision) stands: `draining` is whether its drain has started,
    /// `returning` whether a verdict that passes waits out its return after an outage,
    /// `shared_component` whether a component is
    /// [shared](crate::component::ComponentSpec::shared). What it writes is what its readiness
    /// answers: a process on its way back is not in rotation.
    ///
    /// What counts as shared, and why: a critical database that is not usable fails the
    /// same way for every process that reaches it (refused, a timeout, a query error), so it
    /// is shared, unless its check failed for a reason of this process's own (its pool
    /// saturated, its check panicked); a component gating readiness is shared only when it
    /// is declared shared (its result is the fleet's). Anything else is local.
    pub(crate) fn of(
        verdict: &ReadinessVerdict,
        draining: bool,
        returning: bool,
        rules: ReadinessRules,
        shared_component: impl Fn(&str) -> bool,
    ) -> Self {
        if draining || verdict.held.is_some() || verdict.reason.is_some() {
            return Self::Local;
        }
        if verdict.ready && returning {
            return Self::Returning;
        }
        if verdict.ready {
            return Self::Ready;
        }
        let mut cause = None;
        for outcome in &verdict.databases {
            if !rules.database_fails(outcome) {
                continue;
            }
            if matches!(
                outcome.error_kind(),
                Some(CheckErrorKind::PoolSaturated | CheckErrorKind::Panicked)
            ) {
                return Self::Local;
            }
            cause.get_or_insert_with(|| format!("database `{}`", outcome.name));
        }
        for report in &verdict.components {
            if !rules.component_fails(report) {
                continue;
            }
            if !shared_component(&report.name) {
                return Self::Local;
            }
            cause.get_or_insert_with(|| format!("component `{}`", report.name));
        }
        // Not ready with nothing to name: not the guard's to keep.
        cause.map_or(Self::Local, |cause| Self::Shared {
            cause: Arc::from(cause),
        })
    }
}

/// One process of the fleet, as it last published itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its process id (`redis::SharedCache::process_id`).
    pub(crate) id: Arc<str>,
    pub(crate) standing: Standing,
}

/// What the fleet guard concluded for a process whose readiness fails only on dependencies
/// the whole fleet shares (`redis::SharedCache::fleet_guard`):
/// whether it stays in rotation, and the fleet's count it decided on.
///
/// The rule: of the `members` (of this process's configuration) that published their
/// readiness recently, `wanted` = ceil(fraction × members) should be in rotation. When fewer
/// are ready on their own, the guard keeps in the processes failing on a shared cause,
/// ranked by process id, up to
/// `wanted`; a process failing for a cause of its own (drain, hold, its own pool) is never
/// kept. Every process computes the same ranking from the same published standings, so the
/// processes agree on who stays without talking to each other.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FleetGuard {
    /// Whether this process stays in rotation (readiness 200, `degraded`).
    pub kept: bool,
    /// What fails here (``database `default` ``).
    pub cause: Arc<str>,
    /// The processes of this configuration (the shared entry's fingerprint) that published
    /// their readiness recently, this one included.
    pub members: usize,
    /// How many of them are out, or kept in, on a shared cause.
    pub failing: usize,
    /// How many of them are in rotation: ready on their own, or kept in by the guard.
    pub in_rotation: usize,
    /// How many should be in rotation: the fraction of `members`, rounded up.
    pub wanted: usize,
    /// The configured fraction.
    pub fraction: f64,
    percent: Fraction,
}

impl FleetGuard {
    /// The guard's decision for the process `own`, out on the shared `cause`, among
    /// `members` (whose ids are unique; `own` is counted with `cause` whatever its entry
    /// says, for this round's standing is newer than the one it published).
    pub(crate) fn decide(
        own: &str,
        cause: Arc<str>,
        members: &[Member],
        fraction: Fraction,
    ) -> Self {
        let others = members.iter().filter(|member| *member.id != *own);
        let mut ready = 0;
        let mut candidates: Vec<&str> = vec![own];
        let mut count = 1;
        for member in others {
            count += 1;
            match member.standing {
                Standing::Ready => ready += 1,
                Standing::Shared { .. } => candidates.push(&member.id),
                Standing::Local | Standing::Returning => {}
            }
        }
        candidates.sort_unstable();
        let wanted = fraction.of(count);
        let keep = wanted.saturating_sub(ready).min(candidates.len());
        let kept = candidates[..keep].contains(&own);
        Self {
            kept,
            cause,
            members: count,
            failing: candidates.len(),
            in_rotation: ready + keep,
            wanted,
            fraction: fraction.as_f64(),
            percent: fraction,
        }
    }
}

// `fraction` is never NaN (a `Fraction` is within (0, 1]): equality is total.
impl Eq for FleetGuard {}

impl fmt::Display for FleetGuard {
    /// The reason readiness gives.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            kept,
            cause,
            members,
            failing,
            in_rotation,
            wanted,
            fraction: _,
            percent,
        } = self;
        let processes = if *members == 1 {
            "process"
        } else {
            "processes"
        };
        write!(
            f,
            "fleet guard: {cause} failing on {failing} of {members} {processes}; "
        )?;
        if *kept {
            write!(
                f,
                "staying in rotation to keep {in_rotation} of {members} ({percent})"
            )
        } else {
            write!(
                f,
                "{in_rotation} of {members} in rotation, {wanted} wanted ({percent}): this process leaves"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::verdict::CheckError;
    use crate::verdict::{CheckOutcome, CheckStatus};

    fn fleet(standings: &[(&str, Option<&str>)]) -> Vec<Member> {
        standings
            .iter()
            .map(|(id, standing)| Member {
                id: Arc::from(*id),
                standing: match standing {
                    Some("ready") => Standing::Ready,
                    Some(cause) => Standing::Shared {
                        cause: Arc::from(*cause),
                    },
                    None => Standing::Local,
                },
            })
            .collect()
    }

    const DB: Option<&str> = Some("database `default`");
    const READY: Option<&str> = Some("ready");

    fn half() -> Fraction {
        Fraction::new(0.5).unwrap()
    }

    fn kept(own: &str, members: &[Member], fraction: Fraction) -> bool {
        FleetGuard::decide(own, Arc::from("database `default`"), members, fraction).kept
    }

    fn outcome(name: &str, error: Option<CheckErrorKind>, critical: bool) -> CheckOutcome {
        CheckOutcome {
            name: name.into(),
            status: match error {
                None => CheckStatus::Passed,
                Some(CheckErrorKind::Timeout) => CheckStatus::TimedOut,
                Some(_) => CheckStatus::Failed,
            },
            elapsed: Duration::ZERO,
            running_for: None,
            error: error.map(|kind| CheckError::new(kind, "failed")),
            detail: None,
            critical,
            target: None,
            details: None,
        }
    }

    fn standing(databases: Vec<CheckOutcome>, held: Option<&str>, draining: bool) -> Standing {
        let verdict = ReadinessVerdict::from_outcomes(
            databases,
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            held.map(Arc::from),
        );
        Standing::of(&verdict, draining, false, ReadinessRules::default(), |_| {
            false
        })
    }

    #[test]
    fn a_database_the_fleet_shares_is_a_shared_cause_and_anything_of_its_own_is_local() {
        use CheckErrorKind::{Panicked, PoolSaturated, Refused, Timeout};

        let shared = |cause: &str| Standing::Shared {
            cause: Arc::from(cause),
        };
        let cases = [
            (
                vec![outcome("default", None, true)],
                None,
                false,
                Standing::Ready,
            ),
            (
                vec![outcome("default", Some(Refused), true)],
                None,
                false,
                shared("database `default`"),
            ),
            (
                vec![outcome("default", Some(Timeout), true)],
                None,
                false,
                shared("database `default`"),
            ),
            // The first database that fails is named.
            (
                vec![
                    outcome("default", None, true),
                    outcome("orders", Some(Refused), true),
                    outcome("users", Some(Timeout), true),
                ],
                None,
                false,
                shared("database `orders`"),
            ),
            // An optional database does not fail readiness at all.
            (
                vec![
                    outcome("default", None, true),
                    outcome("replica", Some(Refused), false),
                ],
                None,
                false,
                Standing::Ready,
            ),
            // Its own pool, its own panic: local, even beside a shared cause.
            (
                vec![outcome("default", Some(PoolSaturated), true)],
                None,
                false,
                Standing::Local,
            ),
            (
                vec![
                    outcome("default", Some(Refused), true),
                    outcome("orders", Some(Panicked), true),
                ],
                None,
                false,
                Standing::Local,
            ),
            // A hold, a drain: local, whatever the databases say.
            (
                vec![outcome("default", Some(Refused), true)],
                Some("migration"),
                false,
                Standing::Local,
            ),
            (
                vec![outcome("default", Some(Refused), true)],
                None,
                true,
                Standing::Local,
            ),
            (
                vec![outcome("default", None, true)],
                None,
                true,
                Standing::Local,
            ),
        ];
        for (databases, held, draining, expected) in cases {
            let what = format!("{databases:?} held {held:?} draining {draining}");
            assert_eq!(standing(databases, held, draining), expected, "{what}");
        }
        // No round yet: local.
        let verdict = ReadinessVerdict::unavailable("no round has completed yet");
        let standing = Standing::of(&verdict, false, false, ReadinessRules::default(), |_| true);
        assert_eq!(standing, Standing::Local);
    }

    #[test]
    fn fractions_are_refused_outside_zero_to_one_and_round_up() {
        for bad in [0.0, -0.5, 1.01, f64::NAN, f64::INFINITY] {
            assert_eq!(Fraction::new(bad), None, "{bad}");
        }
        let cases = [
            (0.5, 4, 2),
            (0.5, 3, 2),
            (0.3, 10, 3),
            (1.0, 7, 7),
            (0.01, 4, 1),
        ];
        for (fraction, members, wanted) in cases {
            assert_eq!(Fraction::new(fraction).unwrap().of(members), wanted);
        }
        assert_eq!(Fraction::new(0.5).unwrap().to_string(), "50%");
        assert_eq!(Fraction::new(1.0 / 3.0).unwrap().to_string(), "33.3333%");
        assert_eq!(Fraction::new(0.125).unwrap().to_string(), "12.5%");
    }

    #[test]
    fn when_the_whole_fleet_fails_on_the_database_the_first_half_by_id_stays() {
        let members = fleet(&[("d", DB), ("b", DB), ("a", DB), ("c", DB)]);
        let decisions: Vec<bool> = ["a", "b", "c", "d"]
            .iter()
            .map(|own| kept(own, &members, half()))
            .collect();
        assert_eq!(decisions, [true, true, false, false]);
        let guard = FleetGuard::decide("a", Arc::from("database `default`"), &members, half());
        assert_eq!(
            guard.to_string(),
            "fleet guard: database `default` failing on 4 of 4 processes; staying in rotation to keep 2 of 4 (50%)"
        );
        let guard = FleetGuard::decide("c", Arc::from("database `default`"), &members, half());
        assert_eq!(
            guard.to_string(),
            "fleet guard: database `default` failing on 4 of 4 processes; 2 of 4 in rotation, 2 wanted (50%): this process leaves"
        );
    }

    /// A process on its way back after an outage is out, as its readiness answers: it
    /// counts as neither ready nor one to keep, so the processes kept in stay in until it
    /// passes.
    #[test]
    fn a_returning_process_is_neither_in_rotation_nor_kept() {
        let mut members = fleet(&[("a", DB), ("b", DB)]);
        members[1].standing = Standing::Returning;
        assert!(kept("a", &members, half()), "b is not in rotation");
        let guard = FleetGuard::decide("a", Arc::from("database `default`"), &members, half());
        assert_eq!((guard.failing, guard.in_rotation), (1, 1));

        let verdict = |ready: bool| {
            let databases = vec![outcome(
                "default",
                (!ready).then_some(CheckErrorKind::Refused),
                true,
            )];
            ReadinessVerdict::from_outcomes(
                databases,
                Vec::new(),
                ReadinessRules::default(),
                SystemTime::now(),
                None,
            )
        };
        let of = |verdict: &ReadinessVerdict, returning: bool| {
            Standing::of(verdict, false, returning, ReadinessRules::default(), |_| {
                false
            })
        };
        assert_eq!(of(&verdict(true), true), Standing::Returning);
        assert_eq!(of(&verdict(true), false), Standing::Ready);
        // Failing, it is out on the failure, whatever its return.
        assert!(matches!(of(&verdict(false), true), Standing::Shared { .. }));
    }

    #[test]
    fn processes_ready_on_their_own_count_first() {
        // One ready, three failing: one more is kept, the first of the failing by id.
        let members = fleet(&[("a", READY), ("b", DB), ("c", DB), ("d", DB)]);
        assert!(kept("b", &members, half()));
        assert!(!kept("c", &members, half()));
        // Two ready: nobody is kept.
        let members = fleet(&[("a", READY), ("b", READY), ("c", DB), ("d", DB)]);
        assert!(!kept("c", &members, half()));
        assert!(!kept("d", &members, half()));
    }

    #[test]
    fn a_process_out_for_a_local_cause_is_never_kept_nor_counted_as_in() {
        // `a` drains: the first two of the failing ones by id stay.
        let members = fleet(&[("a", None), ("b", DB), ("c", DB), ("d", DB)]);
        assert!(kept("b", &members, half()));
        assert!(kept("c", &members, half()));
        assert!(!kept("d", &members, half()));
        let guard = FleetGuard::decide("b", Arc::from("database `default`"), &members, half());
        assert_eq!((guard.members, guard.failing, guard.in_rotation), (4, 3, 2));
    }

    #[test]
    fn this_round_s_standing_wins_over_the_one_published() {
        // This process published `ready` last round; it fails now.
        let members = fleet(&[("a", READY), ("b", DB)]);
        let guard = FleetGuard::decide("a", Arc::from("database `default`"), &members, half());
        assert!(guard.kept);
        assert_eq!((guard.members, guard.failing, guard.in_rotation), (2, 2, 1));
        // Not listed at all (its entry refused): counted all the same.
        let guard = FleetGuard::decide("z", Arc::from("database `default`"), &[], half());
        assert!(guard.kept);
        assert_eq!(
            guard.to_string(),
            "fleet guard: database `default` failing on 1 of 1 process; staying in rotation to keep 1 of 1 (50%)"
        );
    }
}
