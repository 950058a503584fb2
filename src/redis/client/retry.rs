//! One more send of a command whose connection was gone.

use ::redis::aio::ConnectionLike;
use ::redis::{Cmd, FromRedisValue, Pipeline, RedisResult};

use super::error_kind;
use crate::check::CheckErrorKind;

/// Sends `command`, and once more on a new connection if the one it was given was gone.
///
/// A connection kept between checks can be closed while it waits (Redis restarted, a proxy's
/// idle timeout): the command sent on it fails at once, though Redis is there. And a
/// `ConnectionManager` whose reconnection failed hands that failure to the next command, and
/// only then starts a new attempt. Either way the error is about the connection the command
/// was handed, not Redis now: the manager starts a new connection on it, and the command is
/// sent once more on that one (as a PostgreSQL query is, see `postgres`). Without
/// this, the first check after Redis came back reported the refusal of the check before, and
/// the first after Redis went away the drop rather than the refusal, each a round late. A
/// refused or dropped connection almost never carried the command, and the commands sent here
/// bear a second send: `PING`, `GET` and `SET` alike, and a lock's `SET NX` that did take
/// the lock at the first send finds it taken and skips one computation, as when another
/// process holds it. If Redis is down, the second send fails as fast as the first.
pub(crate) async fn query<C, T>(connection: &mut C, command: &impl Command) -> RedisResult<T>
where
    C: ConnectionLike,
    T: FromRedisValue,
{
    match command.send(connection).await {
        Err(error)
            if error.code().is_none()
                && matches!(
                    error_kind(&error),
                    CheckErrorKind::Refused | CheckErrorKind::Closed
                ) =>
        {
            command.send(connection).await
        }
        result => result,
    }
}

/// What [`query`] sends: one command, or a pipeline of them (answered in one round trip).
pub(crate) trait Command {
    /// Sends it on `connection`.
    fn send<C, T>(&self, connection: &mut C) -> impl Future<Output = RedisResult<T>>
    where
        C: ConnectionLike,
        T: FromRedisValue;
}

impl Command for Cmd {
    fn send<C, T>(&self, connection: &mut C) -> impl Future<Output = RedisResult<T>>
    where
        C: ConnectionLike,
        T: FromRedisValue,
    {
        self.query_async(connection)
    }
}

impl Command for Pipeline {
    fn send<C, T>(&self, connection: &mut C) -> impl Future<Output = RedisResult<T>>
    where
        C: ConnectionLike,
        T: FromRedisValue,
    {
        self.query_async(connection)
    }
}
