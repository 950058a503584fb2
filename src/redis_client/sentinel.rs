//! The primary behind Redis Sentinel, followed through failovers.
//!
//! The `redis` crate's `SentinelClient` asks the Sentinels for the primary (checking that the
//! server it names says it is one) and opens a `MultiplexedConnection` to it, which stays on
//! that server for good. This keeps one such connection and drops it when the primary is in
//! doubt, so that the next command asks the Sentinels again:
//!
//! - the connection failed (dropped, refused, timed out): the server went away, or Sentinel
//!   demoted it (a demotion closes its clients' connections);
//! - the server answered `READONLY` (a demoted primary), `MASTERDOWN` or `LOADING`;
//! - a command was abandoned unanswered (the round's deadline passed): a primary that
//!   stopped answering is not asked again.
//!
//! A command that fails so fails, and the next one (the next round's) goes to the primary the
//! Sentinels name then: no retry within a round, whose deadline is short.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::SentinelClient;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use super::CLIENT_TIMEOUT;

/// One multiplexed connection to the primary the Sentinels name; clones share it.
#[derive(Clone)]
pub(crate) struct SentinelConnection(Arc<State>);

struct State {
    /// Asks the Sentinels; one lookup at a time.
    sentinels: tokio::sync::Mutex<SentinelClient>,
    /// The connection to the primary last found, if it is not in doubt.
    primary: Mutex<Option<Primary>>,
    /// Numbers the connections, so that a failed command drops only its own.
    opened: AtomicU64,
    db: i64,
}

#[derive(Clone)]
struct Primary {
    number: u64,
    connection: MultiplexedConnection,
}

impl SentinelConnection {
    pub(crate) fn new(sentinels: SentinelClient, db: i64) -> Self {
        Self(Arc::new(State {
            sentinels: tokio::sync::Mutex::new(sentinels),
            primary: Mutex::new(None),
            opened: AtomicU64::new(0),
            db,
        }))
    }

    /// The connection to the primary: the one in hand, or a new one to the primary the
    /// Sentinels name now.
    async fn primary(&self) -> RedisResult<Primary> {
        if let Some(primary) = self.0.current() {
            return Ok(primary);
        }
        let mut sentinels = self.0.sentinels.lock().await;
        // Found by another command while this one waited for the lock.
        if let Some(primary) = self.0.current() {
            return Ok(primary);
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CLIENT_TIMEOUT))
            .set_response_timeout(Some(CLIENT_TIMEOUT));
        let connection = sentinels.get_async_connection_with_config(&config).await?;
        let primary = Primary {
            number: self.0.opened.fetch_add(1, Ordering::Relaxed),
            connection,
        };
        *self.0.slot() = Some(primary.clone());
        Ok(primary)
    }
}

impl State {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Primary>> {
        self.primary.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn current(&self) -> Option<Primary> {
        self.slot().clone()
    }

    /// Drops connection `number`, if it is still the one in hand.
    fn forget(&self, number: u64) {
        let mut slot = self.slot();
        if slot
            .as_ref()
            .is_some_and(|primary| primary.number == number)
        {
            *slot = None;
            tracing::debug!("the Redis primary is in doubt: the next command asks the Sentinels");
        }
    }
}

/// Drops the connection unless disarmed: a command abandoned before its answer leaves it
/// armed.
struct InDoubt<'a> {
    state: &'a State,
    number: u64,
    armed: bool,
}

impl Drop for InDoubt<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.state.forget(self.number);
        }
    }
}

/// Whether `error` puts the primary in doubt: anything but an error the server answered a
/// command with, except those of a server that is no (usable) primary.
fn primary_in_doubt(error: &RedisError) -> bool {
    match error.code() {
        Some(code) => matches!(code, "READONLY" | "MASTERDOWN" | "LOADING"),
        None => true,
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut primary = self.primary().await?;
            let mut guard = InDoubt {
                state: &self.0,
                number: primary.number,
                armed: true,
            };
            let result = primary.connection.req_packed_command(cmd).await;
            guard.armed = result.as_ref().is_err_and(primary_in_doubt);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut primary = self.primary().await?;
            let mut guard = InDoubt {
                state: &self.0,
                number: primary.number,
                armed: true,
            };
            let result = primary
                .connection
                .req_packed_commands(pipeline, offset, count)
                .await;
            guard.armed = result.as_ref().is_err_and(primary_in_doubt);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.0.db
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_errors_put_the_primary_in_doubt() {
        let server = |code: &str| redis::make_extension_error(code.to_owned(), None);
        assert!(primary_in_doubt(&server("READONLY")));
        assert!(primary_in_doubt(&server("MASTERDOWN")));
        assert!(!primary_in_doubt(&server("WRONGTYPE")));
        let dropped = RedisError::from(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        assert!(primary_in_doubt(&dropped));
    }
}
