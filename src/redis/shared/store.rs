//! The Redis side of the shared cache: reading the entry, racing for the lock, writing the
//! entry, each bounded by the round's deadline; and what went wrong last, for the
//! `shared_cache` component.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ::redis::RedisError;

use super::config::{DEFAULT_KEY_PREFIX, SharedCache, SharedConnection, default_process_id};
use super::entry::{Entry, Expected, MAX_ENTRY_BYTES, Refusal};
use crate::check::{CheckError, CheckErrorKind};
use crate::redis::client::{check_error, has_code, query};

/// The shared cache of one monitor: its settings, resolved against the monitor's, and its
/// one connection.
#[derive(Clone)]
pub(crate) struct SharedVerdicts {
    connection: SharedConnection,
    pub(crate) entry_key: String,
    lock_key: String,
    /// Whether the keys are under the default prefix, which every application shares unless
    /// told otherwise.
    default_prefix: bool,
    /// How long an entry is served as fresh.
    pub(crate) ttl: Duration,
    /// How long Redis keeps an entry: a process that loses the lock serves it until then.
    pub(crate) keep: Duration,
    lock_expiry: Duration,
    pub(crate) process_id: Arc<str>,
    pub(crate) nocache_writes: bool,
    /// This process's configuration, which an entry must have been computed for.
    pub(crate) expected: Arc<Expected>,
    /// What went wrong in the last round, if anything: the `shared_cache` component's state.
    problem: Arc<Mutex<Option<CheckError>>>,
    /// The last entry refused with a warning (a hash of its bytes, or of its configuration's
    /// fingerprint): one warning per entry, not one per round that reads it again.
    warned: Arc<Mutex<Option<u64>>>,
}

/// What reading the entry found.
#[derive(Debug)]
pub(crate) enum Read {
    /// An entry that can be served (fresh or not: [`SharedVerdicts::is_fresh`] says), and
    /// how old it is by Redis's clock.
    Found(Entry, Duration),
    /// No entry.
    Missing,
    /// An entry that must not be served: too large, malformed, of another format or
    /// configuration, or with a field out of range. It is overwritten by whoever computes
    /// next.
    Invalid(CheckError),
    /// Redis did not answer as it should: refused, slow, gone.
    Failed(CheckError),
}

/// The lock a process won, to be checked again before it writes.
#[derive(Debug)]
pub(crate) struct Lock {
    token: String,
}

/// Why a command got no answer.
enum Failure {
    /// Redis answered with an error, or the connection failed.
    Redis(RedisError),
    /// Not connected, or no answer within the round's deadline.
    Check(CheckError),
}

impl SharedVerdicts {
    /// The shared cache of a monitor whose health rounds run every `health_interval` under
    /// `deadline`, and go stale after `stale_after`; `expected` is its configuration.
    pub(crate) fn new(
        cache: &SharedCache,
        health_interval: Duration,
        deadline: Duration,
        stale_after: Duration,
        expected: Expected,
    ) -> Self {
        let mut ttl = cache.ttl.unwrap_or(health_interval);
        if ttl > stale_after {
            // An entry served as fresh must not be older than this process's own verdict
            // may get before it is stale. (`TOWER_HEALTH_SHARED_TTL` is refused at start.)
            tracing::warn!(
                wanted = ?ttl,
                used = ?stale_after,
                "SharedCache::ttl is capped at the health verdict's staleness bound (three health intervals plus the readiness timeout)"
            );
            ttl = stale_after;
        }
        let wanted = cache.lock_expiry.unwrap_or(deadline.saturating_mul(2));
        let lock_expiry = wanted.min(ttl / 2).max(crate::env::MIN_DURATION);
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
            default_prefix: cache.key_prefix == DEFAULT_KEY_PREFIX,
            ttl,
            keep: ttl.saturating_mul(2),
            lock_expiry,
            process_id: cache.process_id.clone().unwrap_or_else(default_process_id),
            nocache_writes: cache.nocache_writes,
            expected: Arc::new(expected),
            problem: Arc::default(),
            warned: Arc::default(),
        }
    }

    /// Reads the entry: at most [`MAX_ENTRY_BYTES`] of it, with the time Redis keeps it
    /// still, in one round trip.
    pub(crate) async fn read(&self, deadline: Instant) -> Read {
        let read = ::redis::pipe()
            .cmd("GETRANGE")
            .arg(&self.entry_key)
            .arg(0)
            // Inclusive: one byte more than an entry may hold tells one that is too large.
            .arg(MAX_ENTRY_BYTES)
            .cmd("PTTL")
            .arg(&self.entry_key)
            .clone();
        let (value, remaining): (Vec<u8>, i64) = match self.query(&read, deadline).await {
            Ok(read) => read,
            // Something else than a string under the key: not ours, and the next write
            // (`SET` replaces a value of any type) puts an entry there.
            Err(Failure::Redis(error)) if has_code(&error, "WRONGTYPE") => {
                return self.refuse(
                    b"WRONGTYPE",
                    &Refusal::Invalid(
                        "the key holds a value of another Redis type than a string".to_owned(),
                    ),
                );
            }
            Err(failure) => return Read::Failed(self.failed("GETRANGE", failure)),
        };
        // -2: no key.
        if remaining == -2 {
            return Read::Missing;
        }
        let entry = match Entry::decode(&value, &self.expected) {
            Ok(entry) => entry,
            Err(refusal) => return self.refuse(&value, &refusal),
        };
        // -1: no expiry, which this crate never writes; else the age by Redis's clock.
        let remaining = u64::try_from(remaining).ok().map(Duration::from_millis);
        match remaining.and_then(|remaining| entry.keep.checked_sub(remaining)) {
            Some(age) => Read::Found(entry, age),
            None => self.refuse(
                &value,
                &Refusal::Invalid("its expiry is not the one it was written with".to_owned()),
            ),
        }
    }

    /// An entry that cannot be served: warned about once (per entry, or per configuration
    /// for another configuration's, whose entries change every round), and reported by the
    /// `shared_cache` component.
    fn refuse(&self, value: &[u8], refusal: &Refusal) -> Read {
        let mut hasher = DefaultHasher::new();
        match refusal {
            Refusal::Foreign { fingerprint, .. } => fingerprint.hash(&mut hasher),
            _ => value.hash(&mut hasher),
        }
        let seen = hasher.finish();
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if *warned != Some(seen) {
            *warned = Some(seen);
            drop(warned);
            match refusal {
                Refusal::Foreign { computed_by, .. } if self.default_prefix => tracing::warn!(
                    key = %self.entry_key,
                    fingerprint = %self.expected.fingerprint,
                    %computed_by,
                    "the shared entry is ignored: {refusal}. Different configurations share the default key prefix: give each application its own (TOWER_HEALTH_SHARED_KEY_PREFIX, SharedCache::key_prefix)"
                ),
                Refusal::Foreign { computed_by, .. } => tracing::warn!(
                    key = %self.entry_key,
                    fingerprint = %self.expected.fingerprint,
                    %computed_by,
                    "the shared entry is ignored: {refusal}"
                ),
                _ => tracing::warn!(
                    key = %self.entry_key,
                    fingerprint = %self.expected.fingerprint,
                    "the shared entry is ignored: {refusal}"
                ),
            }
        }
        Read::Invalid(CheckError::new(
            CheckErrorKind::Other,
            format!(
                "the entry under {} is not served: {refusal}",
                self.entry_key
            ),
        ))
    }

    /// Whether an entry `age` old is young enough to be served instead of computing.
    pub(crate) fn is_fresh(&self, age: Duration) -> bool {
        age < self.ttl
    }

    /// Races for the lock: `Some` when this process computes.
    pub(crate) async fn lock(&self, deadline: Instant) -> Result<Option<Lock>, CheckError> {
        // Each race its own token: a process whose lock expired and that raced again does
        // not mistake the new holder's for its own.
        let token = format!(
            "{}#{:016x}",
            self.process_id,
            crate::util::random_fraction().to_bits()
        );
        let set = ::redis::cmd("SET")
            .arg(&self.lock_key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis(self.lock_expiry))
            .clone();
        let won: Option<String> = self
            .query(&set, deadline)
            .await
            .map_err(|failure| self.failed("SET NX", failure))?;
        Ok(won.map(|_| Lock { token }))
    }

    /// Writes `entry`, to be kept for [`keep`](Self::keep): with `lock`, only if the lock
    /// is still this process's (a computation that outlived its lock leaves the entry to
    /// the process that holds it now). Returns whether it was written.
    pub(crate) async fn write(
        &self,
        entry: &Entry,
        lock: Option<&Lock>,
        deadline: Instant,
    ) -> Result<bool, CheckError> {
        if let Some(lock) = lock {
            let get = ::redis::cmd("GET").arg(&self.lock_key).clone();
            let holder: Option<String> = self
                .query(&get, deadline)
                .await
                .map_err(|failure| self.failed("GET", failure))?;
            if holder.as_deref() != Some(&lock.token) {
                tracing::debug!(
                    key = %self.lock_key,
                    "the lock expired while this process computed: the entry is left to its holder"
                );
                return Ok(false);
            }
        }
        let set = ::redis::cmd("SET")
            .arg(&self.entry_key)
            .arg(entry.encode(&self.expected.fingerprint))
            .arg("PX")
            .arg(millis(self.keep))
            .clone();
        self.query::<()>(&set, deadline)
            .await
            .map_err(|failure| self.failed("SET", failure))?;
        Ok(true)
    }

    /// Sends `command` (a command or a pipeline), bounded by `deadline`.
    async fn query<T: ::redis::FromRedisValue>(
        &self,
        command: &impl crate::redis::client::Command,
        deadline: Instant,
    ) -> Result<T, Failure> {
        // Connecting to a cluster (its seed node, then the slots) counts against the
        // deadline too.
        let command = async {
            let mut connection = self.connection.get().await.map_err(Failure::Check)?;
            query(&mut connection, command)
                .await
                .map_err(Failure::Redis)
        };
        match tokio::time::timeout_at(deadline.into(), command).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Check(CheckError::new(
                CheckErrorKind::Timeout,
                "no answer within the round's deadline",
            ))),
        }
    }

    /// `failure` of the command `what`, as the `shared_cache` component reports it.
    fn failed(&self, what: &str, failure: Failure) -> CheckError {
        let error = match failure {
            Failure::Redis(error) => check_error(&error),
            Failure::Check(error) => error,
        };
        CheckError::new(
            error.kind(),
            format!("Redis {what} {}: {}", self.entry_key, error.message()),
        )
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
            .field("fingerprint", &self.expected.fingerprint)
            .finish_non_exhaustive()
    }
}
