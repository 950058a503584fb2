//! The shared entry: the part of a health verdict that is the same for every process, as it
//! is stored in Redis (JSON, format 2).
//!
//! ```json
//! {
//!   "format": 2,
//!   "fingerprint": "9f86d081884c7d659a2feaa0c55ad015",
//!   "computed_at_ms": 1767225600123,
//!   "computed_by": "web-7d9f/12",
//!   "keep_ms": 20000,
//!   "database": {"name": "default", "status": "ready", "elapsed_us": 812, ...},
//!   "databases": [],
//!   "components": [{"name": "search", "status": "healthy", "since_ms": 1767225000000, ...}]
//! }
//! ```
//!
//! `fingerprint` names the configuration that computed the entry (see [`Expected`]): a
//! process serves only entries of its own. `computed_at_ms` is when the computing process's
//! round finished (milliseconds since the Unix epoch, by its clock: shown, never trusted for
//! an age); `keep_ms` is how long the writer told Redis to keep the entry, so that its age is
//! `keep_ms` minus the key's remaining time by Redis's own clock, whatever the processes'
//! clocks say. A check's `status` is stored as readiness says it (`ready`, `not_ready`,
//! `timed_out`), for databases and components alike; a passing check's `target` and
//! `details` are stored as it reported them. Error messages, targets and details are stored
//! redacted, as every [`CheckError`] and [`CheckReport`](crate::check::CheckReport) is.
//! Criticality is not stored: the reading process's own decides.
//!
//! # An untrusted input
//!
//! Whatever is under the key may have been written by anyone who reaches Redis. Decoding
//! reads it into types that hold only valid values and refuses the entry whole when one
//! field is not: the format and the fingerprint, every status and error category one of the
//! known words, every timestamp and duration in range, every string within its cap, the
//! databases and shared components exactly this process's own. A refusal says why without
//! quoting the entry: nothing written under the key reaches a body unless the entry passed.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::check::{CheckError, CheckErrorKind};
use crate::component::ComponentStatus;
use crate::env::MAX_DURATION;
use crate::verdict::{CheckOutcome, CheckStatus, ComponentReport, TimeoutDetail};

/// The format this build writes and reads; an entry of another is ignored and overwritten.
pub(crate) const FORMAT: u32 = 2;

/// The most bytes of an entry that are read: past it, the entry is refused unread. An entry
/// of a few databases and components takes 1 to 4 KiB.
pub(crate) const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// The latest timestamp an entry may hold: 9999-12-31T23:59:59.999Z, the last instant RFC
/// 3339 can write.
const MAX_TIMESTAMP_MS: u64 = 253_402_300_799_999;

/// How far a component's `since` may lie after its round's end (one clock, so never, but
/// a rounding or a leap is no reason to refuse).
const SINCE_SLACK_MS: u64 = 1_000;

/// Caps on the strings of an entry, in bytes.
const MAX_PROCESS_ID: usize = 256;
const MAX_ERROR: usize = 2048;
const MAX_TARGET: usize = 512;
const MAX_DETAILS: usize = 32;
const MAX_DETAIL_KEY: usize = 64;
const MAX_DETAIL_TEXT: usize = 256;

/// The shared part of a health verdict, and who computed it when.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) computed_at: SystemTime,
    pub(crate) computed_by: Arc<str>,
    /// How long Redis keeps it: the origin of its age.
    pub(crate) keep: Duration,
    pub(crate) database: Option<CheckOutcome>,
    pub(crate) databases: Vec<CheckOutcome>,
    /// The shareable components only.
    pub(crate) components: Vec<ComponentReport>,
}

/// A configuration's fingerprint: 16 bytes of SHA-256, in hex. The entry carries it, and so
/// does each member of the fleet guard's hash (`fleet.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint(String);

impl Fingerprint {
    /// The 32 hex digits, as stored.
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One database or shared component, as the fingerprint sees it.
#[derive(Clone, Debug)]
pub(crate) struct Subject {
    pub(crate) name: Arc<str>,
    /// Redacted, as every target is.
    pub(crate) target: Option<Arc<str>>,
    pub(crate) critical: bool,
}

/// What a process expects of an entry it may serve: its own configuration's.
#[derive(Clone, Debug)]
pub(crate) struct Expected {
    pub(crate) fingerprint: Fingerprint,
    /// Its databases, the default first.
    databases: Vec<Subject>,
    /// Its shared components, in registration order.
    components: Vec<Subject>,
}

impl Expected {
    /// The expectations of a process checking `databases` (the default first) and sharing
    /// `components`: the fingerprint covers the format, and each one's name, target and
    /// criticality, in order. Two processes with the same configuration get the same
    /// fingerprint; a changed target, a database made optional, a component added or made
    /// shared each make another.
    pub(crate) fn new(databases: Vec<Subject>, components: Vec<Subject>) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(format!("tower-health shared entry, format {FORMAT}\n"));
        for (kind, subjects) in [("database", &databases), ("component", &components)] {
            for subject in subjects {
                // Lengths first: no two lists of names and targets hash alike.
                let target = subject.target.as_deref().unwrap_or("");
                hasher.update(format!(
                    "{kind} {}:{} {}:{} critical={}\n",
                    subject.name.len(),
                    subject.name,
                    target.len(),
                    target,
                    subject.critical,
                ));
            }
        }
        let digest = hasher.finalize();
        let fingerprint = digest[..16]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        Self {
            fingerprint: Fingerprint(fingerprint),
            databases,
            components,
        }
    }
}

/// Why an entry is not served. Its text (shown in bodies, by the `shared_cache` component)
/// quotes nothing of the entry but a validated fingerprint and a format number; the process
/// that wrote a foreign entry is named in the log only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not JSON of the entry's shape: the category and the position only.
    Malformed(String),
    /// Of another format.
    Format(u64),
    /// Computed by another configuration (another application under the same prefix, or a
    /// rollout between two configurations).
    Foreign {
        fingerprint: String,
        computed_by: String,
    },
    /// A field that is not valid: which, and why.
    Invalid(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(why) => write!(f, "not a tower-health entry ({why})"),
            Self::Format(format) => write!(
                f,
                "written in format {format}, this process reads format {FORMAT}"
            ),
            Self::Foreign { fingerprint, .. } => write!(
                f,
                "computed for another configuration (fingerprint {fingerprint})"
            ),
            Self::Invalid(why) => write!(f, "{why}"),
        }
    }
}

fn invalid(why: impl Into<String>) -> Refusal {
    Refusal::Invalid(why.into())
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: u64,
    fingerprint: String,
    computed_at_ms: u64,
    computed_by: String,
    keep_ms: u64,
    database: Option<Outcome>,
    databases: Vec<Outcome>,
    components: Vec<Report>,
}

/// The first field alone: an entry of another format is refused as such, whatever else it
/// holds.
#[derive(Deserialize)]
struct FormatOnly {
    format: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outcome {
    name: String,
    status: String,
    elapsed_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    running_for_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Why a timed-out check has no error, as a word ([`TimeoutDetail::as_str`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    /// What a passing check reported ([`CheckOutcome::details`]); left out when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    name: String,
    status: String,
    since_ms: u64,
    consecutive_failures: u32,
    consecutive_successes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
}

impl Entry {
    /// The JSON stored under the key, for a process of `fingerprint`.
    pub(crate) fn encode(&self, fingerprint: &Fingerprint) -> String {
        let stored = Stored {
            format: u64::from(FORMAT),
            fingerprint: fingerprint.0.clone(),
            computed_at_ms: millis(self.computed_at).min(MAX_TIMESTAMP_MS),
            computed_by: self.computed_by.to_string(),
            keep_ms: duration_millis(self.keep),
            database: self.database.as_ref().map(Outcome::from),
            databases: self.databases.iter().map(Outcome::from).collect(),
            components: self.components.iter().map(Report::from).collect(),
        };
        serde_json::to_string(&stored).expect("the entry's types always serialize")
    }

    /// The entry stored as `json`, if a process expecting `expected` may serve it: with
    /// that process's own criticality.
    pub(crate) fn decode(json: &[u8], expected: &Expected) -> Result<Self, Refusal> {
        if json.len() > MAX_ENTRY_BYTES {
            return Err(invalid(format!(
                "larger than {} KiB",
                MAX_ENTRY_BYTES / 1024
            )));
        }
        // The format first, so that a later format's other fields are not read as errors.
        let format: FormatOnly = serde_json::from_slice(json).map_err(malformed)?;
        if format.format != u64::from(FORMAT) {
            return Err(Refusal::Format(format.format));
        }
        let stored: Stored = serde_json::from_slice(json).map_err(malformed)?;
        let computed_by = text("computed_by", &stored.computed_by, MAX_PROCESS_ID)?;
        if computed_by.is_empty() {
            return Err(invalid("computed_by is empty"));
        }
        if stored.fingerprint != expected.fingerprint.0 {
            let fingerprint = if is_fingerprint(&stored.fingerprint) {
                stored.fingerprint
            } else {
                "malformed".to_owned()
            };
            return Err(Refusal::Foreign {
                fingerprint,
                computed_by: computed_by.to_owned(),
            });
        }
        let computed_at_ms = stored.computed_at_ms;
        let computed_at = timestamp("computed_at_ms", computed_at_ms)?;
        if stored.keep_ms == 0 || stored.keep_ms > duration_millis(MAX_DURATION) * 2 {
            return Err(invalid("keep_ms out of range"));
        }
        // The databases: this process's own, in its order, each with its criticality.
        let outcomes: Vec<Outcome> = stored
            .database
            .into_iter()
            .chain(stored.databases)
            .collect();
        if outcomes.len() != expected.databases.len()
            || !outcomes
                .iter()
                .zip(&expected.databases)
                .all(|(outcome, subject)| outcome.name == *subject.name)
        {
            return Err(invalid("its databases are not this process's"));
        }
        let mut outcomes = outcomes
            .into_iter()
            .zip(&expected.databases)
            .map(|(outcome, subject)| outcome.into_outcome(subject));
        let database = outcomes.next().transpose()?;
        let databases = outcomes.collect::<Result<_, _>>()?;
        if stored.components.len() != expected.components.len()
            || !stored
                .components
                .iter()
                .zip(&expected.components)
                .all(|(report, subject)| report.name == *subject.name)
        {
            return Err(invalid("its shared components are not this process's"));
        }
        let components = stored
            .components
            .into_iter()
            .zip(&expected.components)
            .map(|(report, subject)| report.into_report(subject, computed_at_ms))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            computed_at,
            computed_by: Arc::from(computed_by),
            keep: Duration::from_millis(stored.keep_ms),
            database,
            databases,
            components,
        })
    }
}

/// A JSON error as a refusal: its category and position, never the text it quotes (serde
/// quotes the unexpected value, which may be anything of any length).
#[allow(
    clippy::needless_pass_by_value,
    reason = "the shape `map_err` hands it over in"
)]
fn malformed(error: serde_json::Error) -> Refusal {
    use serde_json::error::Category;
    let category = match error.classify() {
        Category::Io => "unreadable",
        Category::Syntax => "a syntax error",
        Category::Data => "a field of the wrong type, missing or unknown",
        Category::Eof => "truncated",
    };
    Refusal::Malformed(format!(
        "{category} at line {} column {}",
        error.line(),
        error.column()
    ))
}

/// Whether `text` reads as a fingerprint (of any configuration): 32 hex digits.
pub(super) fn is_fingerprint(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// `value` of the field `field`, if it is at most `cap` bytes of text without control
/// characters.
fn text<'a>(field: &str, value: &'a str, cap: usize) -> Result<&'a str, Refusal> {
    if value.len() > cap {
        return Err(invalid(format!("{field} is longer than {cap} bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(format!("{field} holds control characters")));
    }
    Ok(value)
}

fn timestamp(field: &str, millis: u64) -> Result<SystemTime, Refusal> {
    if millis > MAX_TIMESTAMP_MS {
        return Err(invalid(format!("{field} is past the year 9999")));
    }
    UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .ok_or_else(|| invalid(format!("{field} is out of this clock's range")))
}

fn duration_micros(field: &str, micros: u64) -> Result<Duration, Refusal> {
    let duration = Duration::from_micros(micros);
    if duration > MAX_DURATION {
        return Err(invalid(format!("{field} is longer than a year")));
    }
    Ok(duration)
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
            detail: outcome.detail.map(|detail| detail.as_str().to_owned()),
            target: outcome.target.as_deref().map(str::to_owned),
            details: outcome.details.as_deref().cloned(),
        }
    }
}

impl Outcome {
    /// The outcome, for `subject` (whose name it carries: checked by the caller).
    fn into_outcome(self, subject: &Subject) -> Result<CheckOutcome, Refusal> {
        let status = match self.status.as_str() {
            "ready" => CheckStatus::Passed,
            "not_ready" => CheckStatus::Failed,
            "timed_out" => CheckStatus::TimedOut,
            _ => {
                return Err(invalid(format!(
                    "{}: an unknown check status",
                    subject.name
                )));
            }
        };
        let error = match (self.error_kind, self.error) {
            (Some(kind), Some(message)) => {
                let message = text("error", &message, MAX_ERROR)?;
                Some(CheckError::new(kind_named(&kind)?, message))
            }
            (None, None) => None,
            _ => return Err(invalid("error and error_kind go together")),
        };
        let detail = self
            .detail
            .map(|detail| {
                detail_named(&detail)
                    .ok_or_else(|| invalid(format!("{}: an unknown detail", subject.name)))
            })
            .transpose()?;
        // A result a starved round reported in place of its timeout is the result heard
        // before, and agrees with its status as that one did.
        let heard = detail.filter(|detail| *detail != TimeoutDetail::Starved);
        let consistent = match status {
            CheckStatus::Passed => error.is_none() && heard.is_none(),
            CheckStatus::Failed => error.is_some() && heard.is_none(),
            CheckStatus::TimedOut if detail == Some(TimeoutDetail::Starved) => error.is_some(),
            CheckStatus::TimedOut => error.is_some() != heard.is_some(),
        };
        if !consistent || (self.details.is_some() && status != CheckStatus::Passed) {
            return Err(invalid(format!(
                "{}: its status, error and detail disagree",
                subject.name
            )));
        }
        let target = self
            .target
            .map(|target| text("target", &target, MAX_TARGET).map(crate::redact))
            .transpose()?;
        let details = self.details.map(checked_details).transpose()?;
        Ok(CheckOutcome {
            name: subject.name.clone(),
            status,
            elapsed: duration_micros("elapsed_us", self.elapsed_us)?,
            running_for: self
                .running_for_us
                .map(|micros| duration_micros("running_for_us", micros))
                .transpose()?,
            error,
            detail,
            // The reading process's own criticality decides.
            critical: subject.critical,
            target: target.map(Arc::from),
            details: details.map(Arc::new),
        })
    }
}

/// `details` if it holds at most [`MAX_DETAILS`] short keys of scalar values, strings short
/// too: what a [`CheckReport`](crate::check::CheckReport) holds.
fn checked_details(details: Map<String, Value>) -> Result<Map<String, Value>, Refusal> {
    if details.len() > MAX_DETAILS {
        return Err(invalid(format!(
            "details holds more than {MAX_DETAILS} keys"
        )));
    }
    for (key, value) in &details {
        text("a details key", key, MAX_DETAIL_KEY)?;
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
            Value::String(value) => {
                text("a details value", value, MAX_DETAIL_TEXT)?;
            }
            Value::Array(_) | Value::Object(_) => {
                return Err(invalid("details holds a value that is not a scalar"));
            }
        }
    }
    Ok(details
        .into_iter()
        .map(|(key, value)| match value {
            // Redacted as a report's are: a writer of this crate redacts, an entry may not
            // come from one.
            Value::String(text) => (key, Value::String(crate::redact(&text))),
            value => (key, value),
        })
        .collect())
}

impl From<&ComponentReport> for Report {
    fn from(report: &ComponentReport) -> Self {
        Self {
            name: report.name.to_string(),
            status: report.status.as_str().to_owned(),
            since_ms: millis(report.since).min(MAX_TIMESTAMP_MS),
            consecutive_failures: report.consecutive_failures,
            consecutive_successes: report.consecutive_successes,
            outcome: report.outcome.as_ref().map(Outcome::from),
        }
    }
}

impl Report {
    /// The report of `subject`, whose round ended at `computed_at_ms`; its reason, readiness
    /// gating and target the reading process fills in from its own configuration.
    fn into_report(
        self,
        subject: &Subject,
        computed_at_ms: u64,
    ) -> Result<ComponentReport, Refusal> {
        let status = match self.status.as_str() {
            "unknown" => ComponentStatus::Unknown,
            "healthy" => ComponentStatus::Healthy,
            "degraded" => ComponentStatus::Degraded,
            "unhealthy" => ComponentStatus::Unhealthy,
            _ => {
                return Err(invalid(format!(
                    "{}: an unknown component status",
                    subject.name
                )));
            }
        };
        if self.since_ms > computed_at_ms.saturating_add(SINCE_SLACK_MS) {
            return Err(invalid(format!(
                "{}: since_ms is after the round that computed it",
                subject.name
            )));
        }
        Ok(ComponentReport {
            name: subject.name.clone(),
            status,
            critical: subject.critical,
            gates_readiness: false,
            target: None,
            outcome: self
                .outcome
                .map(|outcome| outcome.into_outcome(subject))
                .transpose()?,
            reason: "".into(),
            since: timestamp("since_ms", self.since_ms)?,
            consecutive_failures: self.consecutive_failures,
            consecutive_successes: self.consecutive_successes,
        })
    }
}

/// The timeout detail whose key (`TimeoutDetail::as_str`) is `name`.
fn detail_named(name: &str) -> Option<TimeoutDetail> {
    [
        TimeoutDetail::DeadlinePassed,
        TimeoutDetail::EarlierCheckRunning,
        TimeoutDetail::Starved,
    ]
    .into_iter()
    .find(|detail| detail.as_str() == name)
}

fn kind_named(name: &str) -> Result<CheckErrorKind, Refusal> {
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
        _ => return Err(invalid("an unknown error kind")),
    })
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, duration_millis)
}

fn duration_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;
