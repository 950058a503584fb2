//! The shared entry: the part of a health verdict that is the same for every process, as it
//! is stored in Redis (JSON, format 1).
//!
//! ```json
//! {
//!   "format": 1,
//!   "computed_at_ms": 1767225600123,
//!   "computed_by": "web-7d9f/12",
//!   "database": {"name": "default", "status": "ready", "elapsed_us": 812, ...},
//!   "databases": [],
//!   "components": [{"name": "search", "status": "healthy", ...}]
//! }
//! ```
//!
//! `computed_at_ms` is when the computing process's round finished (milliseconds since the
//! Unix epoch, by its clock); `computed_by` names that process. A check's `status` is stored
//! as readiness says it (`ready`, `not_ready`, `timed_out`), for databases and components
//! alike; a passing check's `target` and `details` are stored as it reported them. Error
//! messages, targets and details are stored redacted, as every [`CheckError`] and
//! [`CheckReport`](crate::check::CheckReport) is.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::check::{CheckError, CheckErrorKind};
use crate::component::ComponentStatus;
use crate::verdict::{CheckOutcome, CheckStatus, ComponentReport};

/// The format this build writes and reads; an entry of another is ignored and overwritten.
pub(crate) const FORMAT: u32 = 1;

/// The shared part of a health verdict, and who computed it when.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) computed_at: SystemTime,
    pub(crate) computed_by: Arc<str>,
    pub(crate) database: Option<CheckOutcome>,
    pub(crate) databases: Vec<CheckOutcome>,
    /// The shareable components only.
    pub(crate) components: Vec<ComponentReport>,
}

#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    format: u32,
    computed_at_ms: u64,
    computed_by: Cow<'a, str>,
    database: Option<Outcome>,
    databases: Vec<Outcome>,
    components: Vec<Report>,
}

#[derive(Serialize, Deserialize)]
struct Outcome {
    name: String,
    status: String,
    elapsed_us: u64,
    running_for_us: Option<u64>,
    error_kind: Option<String>,
    error: Option<String>,
    detail: Option<String>,
    critical: bool,
    target: Option<String>,
    /// What a passing check reported ([`CheckOutcome::details`]); left out when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize, Deserialize)]
struct Report {
    name: String,
    status: String,
    since_ms: u64,
    reason: String,
    consecutive_failures: u32,
    consecutive_successes: u32,
    outcome: Option<Outcome>,
}

impl Entry {
    /// The JSON stored under the key.
    pub(crate) fn encode(&self) -> String {
        let stored = Stored {
            format: FORMAT,
            computed_at_ms: millis(self.computed_at),
            computed_by: Cow::Borrowed(&self.computed_by),
            database: self.database.as_ref().map(Outcome::from),
            databases: self.databases.iter().map(Outcome::from).collect(),
            components: self.components.iter().map(Report::from).collect(),
        };
        serde_json::to_string(&stored).expect("the entry's types always serialize")
    }

    /// The entry stored as `json`, or why it cannot be served.
    pub(crate) fn decode(json: &[u8]) -> Result<Self, String> {
        let stored: Stored<'_> = serde_json::from_slice(json).map_err(|error| {
            // Only the format of the first bytes: the value may be anything.
            format!("not a tower-health entry ({error})")
        })?;
        if stored.format != FORMAT {
            return Err(format!(
                "written in format {}, this process reads format {FORMAT}",
                stored.format
            ));
        }
        let outcome = |outcome: Outcome| outcome.into_outcome();
        Ok(Self {
            computed_at: from_millis(stored.computed_at_ms)?,
            computed_by: stored.computed_by.into(),
            database: stored.database.map(outcome).transpose()?,
            databases: stored
                .databases
                .into_iter()
                .map(outcome)
                .collect::<Result<_, _>>()?,
            components: stored
                .components
                .into_iter()
                .map(Report::into_report)
                .collect::<Result<_, _>>()?,
        })
    }
}

impl From<&CheckOutcome> for Outcome {
    fn from(outcome: &CheckOutcome) -> Self {
        Self {
            name: outcome.name.to_string(),
            status: outcome.status.database_word().to_owned(),
            elapsed_us: micros(outcome.elapsed),
            running_for_us: outcome.running_for.map(micros),
            error_kind: outcome
                .error
                .as_ref()
                .map(|error| error.kind().as_str().to_owned()),
            error: outcome
                .error
                .as_ref()
                .map(|error| error.message().to_owned()),
            detail: outcome.detail.clone(),
            critical: outcome.critical,
            target: outcome.target.as_deref().map(str::to_owned),
            details: outcome.details.as_deref().cloned(),
        }
    }
}

impl Outcome {
    fn into_outcome(self) -> Result<CheckOutcome, String> {
        let status = match self.status.as_str() {
            "ready" => CheckStatus::Passed,
            "not_ready" => CheckStatus::Failed,
            "timed_out" => CheckStatus::TimedOut,
            other => return Err(format!("unknown check status {other:?}")),
        };
        let error = match (self.error_kind, self.error) {
            (Some(kind), message) => Some(CheckError::new(
                kind_named(&kind)?,
                message.unwrap_or_default(),
            )),
            (None, _) => None,
        };
        Ok(CheckOutcome {
            name: self.name.into(),
            status,
            elapsed: Duration::from_micros(self.elapsed_us),
            running_for: self.running_for_us.map(Duration::from_micros),
            error,
            detail: self.detail,
            critical: self.critical,
            target: self.target.map(Arc::from),
            details: self.details.map(Arc::new),
        })
    }
}

impl From<&ComponentReport> for Report {
    fn from(report: &ComponentReport) -> Self {
        Self {
            name: report.name.to_string(),
            status: report.status.as_str().to_owned(),
            since_ms: millis(report.since),
            reason: report.reason.to_string(),
            consecutive_failures: report.consecutive_failures,
            consecutive_successes: report.consecutive_successes,
            outcome: report.outcome.as_ref().map(Outcome::from),
        }
    }
}

impl Report {
    /// A report whose criticality, readiness gating and target the reading process fills
    /// in from its own configuration.
    fn into_report(self) -> Result<ComponentReport, String> {
        let status = match self.status.as_str() {
            "unknown" => ComponentStatus::Unknown,
            "healthy" => ComponentStatus::Healthy,
            "degraded" => ComponentStatus::Degraded,
            "unhealthy" => ComponentStatus::Unhealthy,
            other => return Err(format!("unknown component status {other:?}")),
        };
        Ok(ComponentReport {
            name: self.name.into(),
            status,
            critical: false,
            gates_readiness: false,
            target: None,
            outcome: self.outcome.map(Outcome::into_outcome).transpose()?,
            reason: Cow::Owned(self.reason),
            since: from_millis(self.since_ms)?,
            consecutive_failures: self.consecutive_failures,
            consecutive_successes: self.consecutive_successes,
        })
    }
}

fn kind_named(name: &str) -> Result<CheckErrorKind, String> {
    use CheckErrorKind as Kind;
    Ok(match name {
        "refused" => Kind::Refused,
        "dns" => Kind::Dns,
        "auth" => Kind::Auth,
        "tls" => Kind::Tls,
        "timeout" => Kind::Timeout,
        "pool_saturated" => Kind::PoolSaturated,
        "closed" => Kind::Closed,
        "query" => Kind::Query,
        "panicked" => Kind::Panicked,
        "other" => Kind::Other,
        other => return Err(format!("unknown error kind {other:?}")),
    })
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// The instant `millis` after the Unix epoch, if the clock can hold it.
fn from_millis(millis: u64) -> Result<SystemTime, String> {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .ok_or_else(|| format!("a timestamp out of range ({millis} ms)"))
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;
