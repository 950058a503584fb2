//! Checks through a pool that is the check's own (the pools [`PostgresCheck::connect`]
//! builds): the connection waits in the pool between checks.
//!
//! [`PostgresCheck::connect`]: super::PostgresCheck::connect

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bb8::{ManageConnection, Pool, PooledConnection, RunError};

use super::PostgresConnection;
use super::error::connect_error;
use super::recycle::{ConnectionSource, Leased};
use crate::check::{CheckError, CheckErrorKind};

pub(super) struct OwnPool<M: ManageConnection> {
    pub(super) pool: Pool<M>,
    /// Connections the check opened itself and added to the pool: bb8 counts those in
    /// `connections` but not in `connections_created`.
    pub(super) added: Arc<AtomicU64>,
}

impl<M: ManageConnection> OwnPool<M> {
    /// `Pool::get` gave up: every connection of the pool was in use (bb8 does not count the
    /// ones it is still opening), or it could not open one in time.
    fn timed_out(&self) -> CheckError {
        let state = self.pool.state();
        if state.connections >= self.pool.config().max_size && state.idle_connections == 0 {
            CheckError::new(
                CheckErrorKind::PoolSaturated,
                format!(
                    "the pool had no connection to give within its connection_timeout: all {} in use",
                    state.connections
                ),
            )
        } else {
            CheckError::new(
                CheckErrorKind::Timeout,
                "the pool could not open a connection within its connection_timeout",
            )
        }
    }
}

impl<M> ConnectionSource for OwnPool<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    type Connection = M::Connection;
    type Kept = PooledConnection<'static, M>;

    async fn lease(&self, new_only: bool) -> Result<Leased<Self::Kept, M::Connection>, CheckError> {
        // Each idle connection found closed is discarded; there are at most max_size.
        for _ in 0..=self.pool.config().max_size {
            let state = self.pool.state();
            // With no idle connection and room for one, open it here instead of waiting
            // in `Pool::get`: bb8 would hide a refused connection behind its own 30 s
            // `connection_timeout`, and a database that refuses must fail fast.
            let room = state.connections < self.pool.config().max_size;
            if new_only || (state.idle_connections == 0 && room) {
                let opened = self
                    .pool
                    .dedicated_connection()
                    .await
                    .map_err(|error| connect_error(&error))?;
                return Ok(Leased::Opened(opened));
            }
            let kept = self.pool.get_owned().await.map_err(|error| match error {
                RunError::User(error) => connect_error(&error),
                RunError::TimedOut => self.timed_out(),
            })?;
            if !kept.is_closed() {
                return Ok(Leased::Kept(kept));
            }
            // Closed while idle: back in the pool, bb8's `has_broken` sees it closed and
            // discards it.
            kept.mark_broken();
        }
        Err(CheckError::new(
            CheckErrorKind::Closed,
            "every connection the pool gave was closed",
        ))
    }

    fn keep(&self, leased: Leased<Self::Kept, M::Connection>) {
        match leased {
            // Back to the pool when dropped.
            Leased::Kept(_) => {}
            Leased::Opened(opened) => {
                // A full pool (another checkout filled it meanwhile) simply drops it.
                if self.pool.add(opened).is_ok() {
                    self.added.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}
