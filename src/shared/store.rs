//! The Redis side of the shared cache: reading the entry, racing for the lock, writing the
//! entry, each bounded by the round's deadline; and what went wrong last, for the
//! `shared_cache` component.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::config::{SharedCache, SharedConnection, default_process_id};
use super::entry::Entry;
use crate::check::{CheckError, CheckErrorKind};
use crate::redis_client::{check_error, query};

/// How far in the future an entry's timestamp may lie (clocks of two hosts disagree a
/// little): past it, the entry is implausible and is not served.
pub(crate) const CLOCK_SKEW: Duration = Duration::from_secs(1);

/// The shared cache of one monitor: its settings, resolved against the monitor's, and its
/// one connection.
#[derive(Clone)]
pub(crate) struct SharedVerdicts {
    connection: SharedConnection,
    pub(crate) entry_key: String,
    lock_key: String,
    /// How long an entry is served as fresh.
    pub(crate) ttl: Duration,
    /// How long Redis keeps an entry: a process that loses the lock serves it until then.
    pub(crate) keep: Duration,
    lock_expiry: Duration,
    pub(crate) process_id: Arc<str>,
    pub(crate) nocache_writes: bool,
    /// What went wrong in the last round, if anything: the `shared_cache` component's state.
    problem: Arc<Mutex<Option<CheckError>>>,
}

/// What reading the entry found.
#[derive(Debug)]
pub(crate) enum Read {
    /// An entry that can be served (fresh or not: [`SharedVerdicts::is_fresh`] says).
    Found(Entry),
    /// No entry.
    Missing,
    /// An entry that must not be served: malformed, of another format, from the future, or
    /// for other databases. It is overwritten by whoever computes next.
    Invalid(CheckError),
    /// Redis did not answer as it should: refused, slow, gone.
    Failed(CheckError),
}

impl SharedVerdicts {
    pub(crate) fn new(cache: &SharedCache, health_interval: Duration, deadline: Duration) -> Self {
        let ttl = cache.ttl.unwrap_or(health_interval);
        let wanted = cache.lock_expiry.unwrap_or(deadline.saturating_mul(2));
        let lock_expiry = wanted.min(ttl / 2).max(crate::config::MIN_DURATION);
        if lock_expiry < wanted {
            tracing::warn!(
                ?wanted,
                ?ttl,
                used = ?lock_expiry,
                "the shared cache's lock expiry is capped at half its TTL"
            );
        }
        Self {
            connection: cache.connection.clone(),
            entry_key: cache.entry_key(),
            lock_key: cache.lock_key(),
            ttl,
            keep: ttl.saturating_mul(2),
            lock_expiry,
            process_id: cache.process_id.clone().unwrap_or_else(default_process_id),
            nocache_writes: cache.nocache_writes,
            problem: Arc::default(),
        }
    }

    /// Reads the entry; `databases` are this process's database names, default first, which
    /// the entry's must match.
    pub(crate) async fn read(&self, deadline: Instant, databases: &[&str]) -> Read {
        let get = redis::cmd("GET").arg(&self.entry_key).clone();
        let value: Option<Vec<u8>> = match self.query("GET", &get, deadline).await {
            Ok(value) => value,
            Err(error) => return Read::Failed(error),
        };
        let Some(value) = value else {
            return Read::Missing;
        };
        let invalid = |why: String| {
            Read::Invalid(CheckError::new(
                CheckErrorKind::Other,
                format!("the entry under {} is not served: {why}", self.entry_key),
            ))
        };
        let entry = match Entry::decode(&value) {
            Ok(entry) => entry,
            Err(why) => return invalid(why),
        };
        if let Ok(ahead) = entry.computed_at.duration_since(SystemTime::now())
            && ahead > CLOCK_SKEW
        {
            return invalid(format!(
                "computed {} ms in the future by {}",
                ahead.as_millis(),
                entry.computed_by
            ));
        }
        let names: Vec<&str> = entry
            .database
            .iter()
            .chain(&entry.databases)
            .map(|outcome| &*outcome.name)
            .collect();
        if names != databases {
            return invalid(format!(
                "it is for the databases {names:?}, this process checks {databases:?} (another application under the same key prefix?)"
            ));
        }
        Read::Found(entry)
    }

    /// Whether `entry` is young enough to be served instead of computing.
    pub(crate) fn is_fresh(&self, entry: &Entry) -> bool {
        age(entry) < self.ttl
    }

    /// Races for the lock: `Ok(true)` when this process computes.
    pub(crate) async fn lock(&self, deadline: Instant) -> Result<bool, CheckError> {
        let set = redis::cmd("SET")
            .arg(&self.lock_key)
            .arg(&*self.process_id)
            .arg("NX")
            .arg("PX")
            .arg(millis(self.lock_expiry))
            .clone();
        let won: Option<String> = self.query("SET NX", &set, deadline).await?;
        Ok(won.is_some())
    }

    /// Writes `entry`, to be kept for [`keep`](Self::keep).
    pub(crate) async fn write(&self, entry: &Entry, deadline: Instant) -> Result<(), CheckError> {
        let set = redis::cmd("SET")
            .arg(&self.entry_key)
            .arg(entry.encode())
            .arg("PX")
            .arg(millis(self.keep))
            .clone();
        self.query::<()>("SET", &set, deadline).await
    }

    async fn query<T: redis::FromRedisValue>(
        &self,
        what: &str,
        command: &redis::Cmd,
        deadline: Instant,
    ) -> Result<T, CheckError> {
        let fail = |kind, text: &str| {
            CheckError::new(kind, format!("Redis {what} {}: {text}", self.entry_key))
        };
        // Connecting to a cluster (its seed node, then the slots) counts against the
        // deadline too.
        let command = async {
            let mut connection = self.connection.get().await?;
            query(&mut connection, command)
                .await
                .map_err(|error| check_error(&error))
        };
        match tokio::time::timeout_at(deadline.into(), command).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(fail(error.kind(), error.message())),
            Err(_) => Err(fail(
                CheckErrorKind::Timeout,
                "no answer within the round's deadline",
            )),
        }
    }

    /// Records how the round went with Redis: `None` when well, else what went wrong.
    pub(crate) fn record(&self, problem: Option<CheckError>) {
        *self.problem.lock().unwrap_or_else(PoisonError::into_inner) = problem;
    }

    /// What went wrong in the last round, if anything.
    pub(crate) fn problem(&self) -> Option<CheckError> {
        self.problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// How old `entry` is by this process's clock (zero for one a little in the future).
pub(crate) fn age(entry: &Entry) -> Duration {
    SystemTime::now()
        .duration_since(entry.computed_at)
        .unwrap_or(Duration::ZERO)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl std::fmt::Debug for SharedVerdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedVerdicts")
            .field("entry_key", &self.entry_key)
            .field("ttl", &self.ttl)
            .field("lock_expiry", &self.lock_expiry)
            .field("process_id", &self.process_id)
            .finish_non_exhaustive()
    }
}
