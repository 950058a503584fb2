//! The primary behind Redis Sentinel, followed through failovers.
//!
//! A lookup asks every Sentinel at once, through one `redis` crate `SentinelClient` each
//! (which asks its Sentinel for the primary, checks that the server named says with `ROLE`
//! that it is one, and keeps its connection to the Sentinel between lookups). The first
//! Sentinel whose primary checks out wins and the others' lookups are dropped: a Sentinel
//! that accepts and never answers, or answers slowly, holds nothing up, wherever it is listed.
//!
//! This keeps one `MultiplexedConnection` to the primary found, which stays on that server,
//! and drops it when the primary is in doubt, so that the next command looks it up again:
//!
//! - the connection failed (dropped, refused, timed out): the server went away, or Sentinel
//!   demoted it (a demotion closes its clients' connections);
//! - the server answered `READONLY` (a demoted primary), `MASTERDOWN` or `LOADING`;
//! - a command was abandoned unanswered (the round's deadline passed): a primary that
//!   stopped answering is not asked again.
//!
//! A command that fails so fails, and the next one (the next round's) goes to the primary
//! found then: no retry within a round, whose deadline is short. A lookup cut short by that
//! deadline drops every Sentinel's lookup with it.
//!
//! The last primary a Sentinel named is kept: its address, never its connection. A lookup
//! asks it too, with `ROLE`, and takes it if it still says it is the primary, so that
//! Sentinels gone dark do not lose a primary that still answers. The Sentinels' word comes
//! first: while they answer (one named the primary in the lookup before), the kept primary
//! is asked only once every Sentinel has failed; after a lookup in which none did (every one
//! failed, or the caller's deadline cut the lookup short), it is asked at once beside them,
//! and whichever answers first wins. A demoted primary says it is a replica and is never
//! taken.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use ::redis::aio::{ConnectionLike, MultiplexedConnection};
use ::redis::sentinel::SentinelClient;
use ::redis::{
    AsyncConnectionConfig, Client, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult,
    Role, Value,
};

use super::CLIENT_TIMEOUT;

/// One multiplexed connection to the primary the Sentinels name; clones share it.
#[derive(Clone)]
pub(crate) struct SentinelConnection(Arc<State>);

struct State {
    /// Finds the primary; one lookup at a time.
    lookup: tokio::sync::Mutex<Lookup>,
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
    /// `sentinels`: one client per Sentinel, each for the primary, in the URL's order.
    pub(crate) fn new(sentinels: Vec<SentinelClient>, db: i64) -> Self {
        Self(Arc::new(State {
            lookup: tokio::sync::Mutex::new(Lookup {
                sentinels,
                kept: None,
                sentinels_answered: true,
            }),
            primary: Mutex::new(None),
            opened: AtomicU64::new(0),
            db,
        }))
    }

    /// The connection to the primary: the one in hand, or a new one to the primary found
    /// now.
    async fn primary(&self) -> RedisResult<Primary> {
        if let Some(primary) = self.0.current() {
            return Ok(primary);
        }
        let mut lookup = self.0.lookup.lock().await;
        // Found by another command while this one waited for the lock.
        if let Some(primary) = self.0.current() {
            return Ok(primary);
        }
        let connection = lookup.connect().await?;
        let primary = Primary {
            number: self.0.opened.fetch_add(1, Ordering::Relaxed),
            connection,
        };
        *self.0.slot() = Some(primary.clone());
        Ok(primary)
    }
}

/// What finds the primary: the Sentinels, and the primary one of them named last.
struct Lookup {
    /// One client per Sentinel, so that they can be asked at once.
    sentinels: Vec<SentinelClient>,
    /// The primary a Sentinel named last, checked with `ROLE` before it is used again.
    kept: Option<Client>,
    /// Whether a Sentinel named the primary in the last lookup: if none did, the kept
    /// primary does not wait for them. Cleared when a lookup starts, so that a lookup the
    /// caller abandons counts as one in which none did.
    sentinels_answered: bool,
}

/// Who named the primary a lookup connected to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Sentinel,
    Kept,
}

/// A connection to a primary, and the primary, or why there is none.
type Found = RedisResult<(Client, MultiplexedConnection)>;

/// Lookups running at once; the first to finish is taken by [`first_done`].
type Racing<'a> = Vec<Pin<Box<dyn Future<Output = (Source, Found)> + Send + 'a>>>;

impl Lookup {
    /// A new connection to the primary, from whichever of the Sentinels (and the kept
    /// primary, see the module's docs) answers first.
    async fn connect(&mut self) -> RedisResult<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CLIENT_TIMEOUT))
            .set_response_timeout(Some(CLIENT_TIMEOUT));
        let sentinels_answered = std::mem::replace(&mut self.sentinels_answered, false);
        let mut waiting_for_sentinels = self.sentinels.len();
        let mut racing: Racing<'_> = Vec::with_capacity(self.sentinels.len() + 1);
        for sentinel in &mut self.sentinels {
            let config = config.clone();
            racing.push(Box::pin(async move {
                (Source::Sentinel, named_by(sentinel, &config).await)
            }));
        }
        // Asked at once if the Sentinels did not answer last time, else once they all failed.
        let mut kept_unasked = self.kept.clone();
        if !sentinels_answered {
            racing.extend(
                kept_unasked
                    .take()
                    .map(|primary| ask_kept(primary, config.clone())),
            );
        }
        let mut failure: Option<RedisError> = None;
        while let Some((source, found)) = first_done(&mut racing).await {
            match found {
                Ok((primary, connection)) => {
                    if source == Source::Sentinel {
                        self.kept = Some(primary);
                        self.sentinels_answered = true;
                    } else {
                        tracing::debug!(
                            "no Sentinel named the Redis primary: the one named last still says it is"
                        );
                    }
                    return Ok(connection);
                }
                Err(error) => {
                    tracing::debug!(%error, "a lookup of the Redis primary failed");
                    // "Not found" says least: another error is kept over it.
                    if failure.as_ref().is_none_or(|failure| {
                        failure.kind() == ErrorKind::MasterNameNotFoundBySentinel
                    }) {
                        failure = Some(error);
                    }
                    if source == Source::Sentinel {
                        waiting_for_sentinels -= 1;
                        if waiting_for_sentinels == 0 {
                            racing.extend(
                                kept_unasked
                                    .take()
                                    .map(|primary| ask_kept(primary, config.clone())),
                            );
                        }
                    }
                }
            }
        }
        Err(failure.unwrap_or_else(|| {
            RedisError::from((ErrorKind::EmptySentinelList, "no Sentinel to ask"))
        }))
    }
}

/// The primary `sentinel` names (checked by the `redis` crate with `ROLE`), and a connection
/// to it.
async fn named_by(sentinel: &mut SentinelClient, config: &AsyncConnectionConfig) -> Found {
    let primary = sentinel.async_get_client().await?;
    let connection = primary
        .get_multiplexed_async_connection_with_config(config)
        .await?;
    Ok((primary, connection))
}

/// Asks the kept `primary` whether it still is one (`ROLE`), keeping the connection if so.
fn ask_kept(
    primary: Client,
    config: AsyncConnectionConfig,
) -> Pin<Box<dyn Future<Output = (Source, Found)> + Send>> {
    Box::pin(async move {
        let found = async {
            let mut connection = primary
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let role: Role = ::redis::cmd("ROLE").query_async(&mut connection).await?;
            match role {
                Role::Primary { .. } => Ok((primary, connection)),
                _ => Err(RedisError::from((
                    ErrorKind::MasterNameNotFoundBySentinel,
                    "the primary named last is no longer one",
                ))),
            }
        };
        (Source::Kept, found.await)
    })
}

/// The output of the first of `racing` to finish, which is removed; `None` once none is
/// left. The others go on when awaited again, or stop when dropped.
async fn first_done<T>(
    racing: &mut Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>,
) -> Option<T> {
    std::future::poll_fn(|cx| {
        if racing.is_empty() {
            return Poll::Ready(None);
        }
        // A handful of Sentinels: polling each on every wake-up costs nothing.
        for index in 0..racing.len() {
            if let Poll::Ready(output) = racing[index].as_mut().poll(cx) {
                drop(racing.swap_remove(index));
                return Poll::Ready(Some(output));
            }
        }
        Poll::Pending
    })
    .await
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
        Some(code) => is_no_primary(code),
        None => true,
    }
}

/// Whether the server answered as one that is no (usable) primary. The connection hands a
/// server's error answers over as values (the command's caller makes them errors), so they
/// are looked for there too.
fn answered_no_primary(value: &Value) -> bool {
    matches!(value, Value::ServerError(error) if is_no_primary(error.code()))
}

fn is_no_primary(code: &str) -> bool {
    matches!(code, "READONLY" | "MASTERDOWN" | "LOADING")
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
            guard.armed = match &result {
                Ok(value) => answered_no_primary(value),
                Err(error) => primary_in_doubt(error),
            };
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
            guard.armed = match &result {
                Ok(values) => values.iter().any(answered_no_primary),
                Err(error) => primary_in_doubt(error),
            };
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
        let server = |code: &str| ::redis::make_extension_error(code.to_owned(), None);
        assert!(primary_in_doubt(&server("READONLY")));
        assert!(primary_in_doubt(&server("MASTERDOWN")));
        assert!(!primary_in_doubt(&server("WRONGTYPE")));
        let dropped = RedisError::from(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        assert!(primary_in_doubt(&dropped));
    }

    #[tokio::test]
    async fn the_first_lookup_to_finish_is_taken_whatever_its_place() {
        let mut racing: Vec<Pin<Box<dyn Future<Output = u8> + Send>>> =
            vec![Box::pin(std::future::pending()), Box::pin(async { 2 })];
        assert_eq!(first_done(&mut racing).await, Some(2));
        assert_eq!(racing.len(), 1, "the one still running is left");
        racing.clear();
        assert_eq!(first_done(&mut racing).await, None);
    }
}
