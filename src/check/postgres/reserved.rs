//! Checks through the application's pool on a connection reserved for them, held beside the
//! pool and not in it.
//!
//! At peak every connection of the application's pool is busy and requests queue for one: a
//! check that queued with them would pass its deadline and depool every pod at once, although
//! the database answers. So the check keeps one connection of its own, opened by the pool's
//! own connection manager (same configuration, TLS and customizer), and reuses it every round.
//! It never opens one per round either: under saturation the server may refuse new
//! connections (`too many clients`) exactly when it is busiest.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bb8::{ManageConnection, Pool};

use super::PostgresConnection;
use super::error::connect_error;
use super::recycle::{ConnectionSource, Leased};
use crate::check::CheckError;

/// The reserved connection, shared by every check of one [`PostgresCheck`](super::PostgresCheck).
pub(super) struct ReservedSlot<C> {
    /// Out of the slot while a check uses it: a check dropped mid-query drops (closes) it.
    connection: Mutex<Option<C>>,
    /// Connections opened for the slot so far, the first and every replacement.
    opened: AtomicU64,
}

impl<C> ReservedSlot<C> {
    pub(super) fn new() -> Self {
        Self {
            connection: Mutex::new(None),
            opened: AtomicU64::new(0),
        }
    }

    pub(super) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    fn take(&self) -> Option<C> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn put(&self, conn: C) {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Two checks at once (two monitors sharing the check) may both have opened one: the
        // extra one is closed.
        if slot.is_none() {
            *slot = Some(conn);
        }
    }
}

pub(super) struct Reserved<M: ManageConnection> {
    /// The application's pool: only its manager is used, to open the reserved connection.
    pub(super) pool: Pool<M>,
    pub(super) slot: Arc<ReservedSlot<M::Connection>>,
}

impl<M> ConnectionSource for Reserved<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    type Connection = M::Connection;
    type Kept = Box<M::Connection>;

    async fn lease(&self, new_only: bool) -> Result<Leased<Self::Kept, M::Connection>, CheckError> {
        if !new_only {
            // A connection the server closed while it waited is dropped here, replaced below.
            if let Some(kept) = self.slot.take().filter(|conn| !conn.is_closed()) {
                return Ok(Leased::Kept(Box::new(kept)));
            }
        }
        let opened = self
            .pool
            .dedicated_connection()
            .await
            .map_err(|error| connect_error(&error))?;
        self.slot.opened.fetch_add(1, Ordering::Relaxed);
        Ok(Leased::Opened(opened))
    }

    fn keep(&self, leased: Leased<Self::Kept, M::Connection>) {
        match leased {
            Leased::Kept(kept) => self.slot.put(*kept),
            Leased::Opened(opened) => self.slot.put(opened),
        }
    }
}
