//! One check through a pool of the check's own, on a connection that may have been closed
//! since the last one (the reserved connection beside an application's pool has the same
//! rules, in `postgres/reserved.rs`).
//!
//! A connection kept between checks (idle in the pool) can be closed
//! by the server while it waits: a restart, `pg_terminate_backend`, `idle_session_timeout`, a
//! pooler reload. That is not an outage, so it must not read as one: a connection found closed
//! is replaced before the query, and a query that fails because a kept connection is gone is
//! run once more on a new one. A connection opened in this very check is never retried: its
//! failure is the database's, reported in this round.

use std::future::Future;
use std::ops::Deref;

use super::PostgresConnection;
use super::classify::{self, Phase};
use crate::check::CheckError;

/// A connection lent to one check.
pub(super) enum Leased<K, C> {
    /// Kept from an earlier check (and open when lent).
    Kept(K),
    /// Opened by this check.
    Opened(C),
}

impl<K: Deref<Target = C>, C> Leased<K, C> {
    fn connection(&self) -> &C {
        match self {
            Self::Kept(kept) => kept,
            Self::Opened(opened) => opened,
        }
    }
}

/// Where a check gets its connections, and gives back the ones still good.
pub(super) trait ConnectionSource: Send + Sync {
    /// The connection queried.
    type Connection: PostgresConnection;
    /// A kept connection, as the source lends it.
    type Kept: Deref<Target = Self::Connection> + Send;

    /// A connection to query: a kept one unless `new_only`, never one already closed (those
    /// are discarded on the way), or a newly opened one.
    fn lease(
        &self,
        new_only: bool,
    ) -> impl Future<Output = Result<Leased<Self::Kept, Self::Connection>, CheckError>> + Send;

    /// Keeps a connection that is still good for the next check.
    fn keep(&self, leased: Leased<Self::Kept, Self::Connection>);
}

/// Runs `SELECT 1` on a connection from `source`, replacing a kept connection that turns out
/// to be gone (once).
pub(super) async fn check<S: ConnectionSource>(source: &S) -> Result<(), CheckError> {
    let mut retried = false;
    loop {
        let leased = source.lease(retried).await?;
        let conn = leased.connection();
        // Dropped mid-query, the check was abandoned: the connection is in an unknown state
        // (a frozen network, say) and must not serve the next check.
        let abandoned = MarkBrokenOnDrop(Some(conn));
        let answered = conn.client().simple_query("SELECT 1").await;
        abandoned.disarm();
        let error = match answered {
            Ok(_) => {
                source.keep(leased);
                return Ok(());
            }
            Err(error) => error,
        };
        if !classify::is_connection_gone(&error) {
            // A SQL error on a healthy connection: the connection itself is still good.
            source.keep(leased);
            return Err(query_error(&error));
        }
        conn.mark_broken();
        let kept = matches!(leased, Leased::Kept(_));
        drop(leased);
        if !kept || retried {
            return Err(query_error(&error));
        }
        retried = true;
    }
}

fn query_error(error: &tokio_postgres::Error) -> CheckError {
    CheckError::from_error(classify::tokio_postgres(error, Phase::Query), error)
}

/// Marks a connection broken if dropped before [`MarkBrokenOnDrop::disarm`].
struct MarkBrokenOnDrop<'a, C: PostgresConnection>(Option<&'a C>);

impl<C: PostgresConnection> MarkBrokenOnDrop<'_, C> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl<C: PostgresConnection> Drop for MarkBrokenOnDrop<'_, C> {
    fn drop(&mut self) {
        if let Some(conn) = self.0 {
            conn.mark_broken();
        }
    }
}
