//! Why a verdict is what it is: every cause, most serious first, rendered per audience.

use std::fmt::Write as _;
use std::sync::Arc;

use super::ComponentStatus;
use super::{CheckErrorKind, PoolStats};
use super::{CheckStatus, FleetGuard};

/// One reason a health verdict is not plainly `healthy`. A verdict lists every cause, most
/// serious first; the first is its headline (`reason` in the body), the list is `causes`.
///
/// Causes are structured data, not prose: each reader renders them for its audience (see
/// [`Details`](crate::config::Details)), so names the operator configured appear at every
/// level while pool figures only where details are shown.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// No database is configured: health has nothing to follow.
    NoDatabase,
    /// No verdict exists: no round has completed yet, or the monitor is not running.
    NoVerdict {
        /// Which of the two.
        why: &'static str,
    },
    /// An operator's hold keeps readiness failing.
    Held {
        /// The operator's reason.
        reason: Arc<str>,
    },
    /// A database is not usable: the default one (health `unhealthy`, or `error` when its
    /// check panicked) or an optional one (`degraded`).
    Database {
        /// The configured name.
        name: Arc<str>,
        /// What its check concluded.
        status: CheckStatus,
        /// The category of its error, when it failed with one.
        kind: Option<CheckErrorKind>,
        /// Whether it is [optional](crate::HealthConfig::optional_database).
        optional: bool,
    },
    /// A component is in trouble: a critical one makes health `unhealthy`, another
    /// `degraded`.
    Component {
        /// The configured name.
        name: Arc<str>,
        /// Its state.
        status: ComponentStatus,
        /// Whether it is critical.
        critical: bool,
    },
    /// The round that computes the verdict panicked (health `error`): the next round runs
    /// as usual.
    Panicked {
        /// Which round: `health`.
        round: &'static str,
    },
    /// A database's pool is saturated: every connection busy, checkouts waiting
    /// (`degraded`).
    PoolSaturated {
        /// The configured name of the database.
        name: Arc<str>,
        /// The pool's figures.
        stats: PoolStats,
    },
    /// The fleet guard keeps this process in rotation, or let it go, while readiness fails
    /// on a dependency the fleet shares: listed last, for it changes readiness, not health.
    FleetGuard {
        /// What the guard concluded, with the fleet's count.
        guard: FleetGuard,
    },
}

/// How much a rendering of a [`Cause`] may say.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Audience {
    /// Everything: figures and the operator's words included.
    Full,
    /// Status, category and configured names only.
    Minimal,
}

impl Audience {
    pub(crate) const ALL: [Self; 2] = [Self::Full, Self::Minimal];

    pub(crate) const fn index(self) -> usize {
        match self {
            Self::Full => 0,
            Self::Minimal => 1,
        }
    }
}

impl Cause {
    /// A short key for dashboards: `no_database`, `no_verdict`, `held`, `panicked`,
    /// `database`, `component`, `pool_saturated`, `fleet_guard`.
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::NoDatabase => "no_database",
            Self::NoVerdict { .. } => "no_verdict",
            Self::Held { .. } => "held",
            Self::Panicked { .. } => "panicked",
            Self::Database { .. } => "database",
            Self::Component { .. } => "component",
            Self::PoolSaturated { .. } => "pool_saturated",
            Self::FleetGuard { .. } => "fleet_guard",
        }
    }

    /// The configured name it is about, if any.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Database { name, .. }
            | Self::Component { name, .. }
            | Self::PoolSaturated { name, .. } => Some(name),
            Self::NoDatabase
            | Self::NoVerdict { .. }
            | Self::Held { .. }
            | Self::Panicked { .. }
            | Self::FleetGuard { .. } => None,
        }
    }

    /// The cause in a sentence, with everything in it.
    #[must_use]
    pub fn describe(&self) -> String {
        self.describe_for(Audience::Full)
    }

    /// The cause in a sentence, for `audience`: the one place that decides what a sentence
    /// may say.
    pub(crate) fn describe_for(&self, audience: Audience) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = match self {
            Self::NoDatabase => write!(text, "no database is configured"),
            Self::NoVerdict { why } => write!(text, "{why}"),
            Self::Panicked { round } => {
                write!(
                    text,
                    "the {round} round panicked; the next round runs as usual"
                )
            }
            Self::Held { reason } => match audience {
                Audience::Full => write!(text, "held by the operator: {reason}"),
                Audience::Minimal => write!(text, "held by the operator"),
            },
            Self::Database {
                name,
                status,
                kind,
                optional,
            } => {
                let which = if *optional {
                    "optional database"
                } else {
                    "database"
                };
                let word = status.database_word();
                match kind {
                    Some(CheckErrorKind::Panicked) => {
                        write!(text, "{which} {name}'s check panicked")
                    }
                    // `timed_out (timeout)` would say it twice.
                    Some(CheckErrorKind::Timeout) if *status == CheckStatus::TimedOut => {
                        write!(text, "{which} {name} is {word}")
                    }
                    Some(kind) => write!(text, "{which} {name} is {word} ({kind})"),
                    None => write!(text, "{which} {name} is {word}"),
                }
            }
            Self::Component {
                name,
                status,
                critical,
            } => {
                let which = if *critical {
                    "critical"
                } else {
                    "non-critical"
                };
                write!(text, "{which} component {name} is {status}")
            }
            Self::PoolSaturated { name, stats } => match audience {
                Audience::Full if stats.pending_gets_unknown => write!(
                    text,
                    "database {name}'s pool is saturated: {} of {} connections in use",
                    stats.in_use(),
                    stats.max_size,
                ),
                Audience::Full => write!(
                    text,
                    "database {name}'s pool is saturated: {} of {} connections in use, {} checkouts waiting",
                    stats.in_use(),
                    stats.max_size,
                    stats.pending_gets
                ),
                Audience::Minimal => write!(text, "database {name}'s pool is saturated"),
            },
            // Configured names and counts only: the same for every audience.
            Self::FleetGuard { guard } => write!(text, "{guard}"),
        };
        text
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}
