//! A connection reserved for a check beside the application's pool, held by the check and not
//! in the pool: the design every pool backend shares (bb8's [`PostgresCheck::new`],
//! `DeadpoolCheck`, `SqlxCheck`).
//!
//! At peak every connection of the application's pool is busy and requests queue for one: a
//! check that queued with them would pass its deadline and depool every pod at once, although
//! the database answers. A check through a pool of its own would not queue, but the pool
//! endpoint would then show that one-connection pool instead of the application's, and its
//! saturation would go unseen. So the check keeps one connection of its own, opened as the
//! application's pool opens its connections (same options, TLS and credentials), not counted
//! in the pool's size, and reuses it every round; the pool's figures are still the
//! application's. It never opens one per round either: under saturation the server may refuse
//! new connections (`too many clients`) exactly when it is busiest.
//!
//! A connection the server closed while it waited between checks (a restart, a terminated
//! backend, an idle timeout, a pooler reload) is replaced, before the ping when the backend can
//! tell it is closed, or after a ping that failed because the connection is gone: that ping is
//! run once more on a new connection, within the same deadline. A connection opened in the
//! check itself is never retried: a refused, stalled or rejecting server is reported in the
//! same round. While a check runs, the connection is out of the slot and owned by the check's
//! future: a check dropped mid-ping (past the monitor's check limit) drops the connection,
//! which closes it, and the next round opens a new one.
//!
//! Each backend keeps its own error classification: [`ReservedBackend`] hands over
//! [`CheckError`]s already sorted.
//!
//! [`PostgresCheck::new`]: crate::postgres::PostgresCheck::new

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::check::{CheckError, CheckFuture, CheckReport};

/// How one backend opens, inspects and pings its reserved connection.
pub(crate) trait ReservedBackend: Clone + Send + Sync + 'static {
    /// The reserved connection; dropping it closes it.
    type Connection: Send + 'static;

    /// Opens a connection as the application's pool would (its options, its manager).
    fn open(&self) -> impl Future<Output = Result<Self::Connection, CheckError>> + Send;

    /// Whether a kept connection is already known to be closed, without any I/O.
    fn is_closed(&self, connection: &Self::Connection) -> bool;

    /// One round trip on the connection.
    fn ping<'a>(
        &'a self,
        connection: &'a mut Self::Connection,
    ) -> impl Future<Output = Result<(), PingFailure>> + Send + 'a;
}

/// A failed ping.
#[derive(Debug)]
pub(crate) struct PingFailure {
    /// What the check reports, classified by the backend.
    pub(crate) error: CheckError,
    /// The connection is gone (closed by the server, a broken socket), so that a new
    /// connection could answer where this one failed; otherwise (a query error on a healthy
    /// connection) the connection is kept.
    pub(crate) gone: bool,
}

/// The reserved connection of one check, shared by its clones. `C` is the backend's
/// connection (a parameter of its own, so that a type holding this needs no bound on `B`).
pub(crate) struct Reserved<B, C> {
    backend: B,
    slot: Arc<Slot<C>>,
}

struct Slot<C> {
    /// Out of the slot while a check uses it.
    connection: Mutex<Option<C>>,
    /// Connections opened for the slot so far, the first and every replacement.
    opened: AtomicU64,
}

impl<B: ReservedBackend<Connection = C>, C: Send + 'static> Reserved<B, C> {
    /// Nothing is connected until the first check.
    pub(crate) fn new(backend: B) -> Self {
        Self {
            backend,
            slot: Arc::new(Slot {
                connection: Mutex::new(None),
                opened: AtomicU64::new(0),
            }),
        }
    }

    /// Whether a connection waits in the slot for the next check.
    #[cfg(test)]
    pub(crate) fn is_held(&self) -> bool {
        self.slot
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// One check: a ping on the reserved connection, opened (or replaced) as needed.
    pub(crate) fn check(&self) -> CheckFuture {
        let reserved = self.clone();
        Box::pin(async move { reserved.ping_once().await.map(CheckReport::from) })
    }

    async fn ping_once(&self) -> Result<(), CheckError> {
        let mut retried = false;
        loop {
            let kept = if retried { None } else { self.take() };
            let (mut connection, was_kept) = match kept {
                Some(connection) => (connection, true),
                None => {
                    let opened = self.backend.open().await?;
                    self.slot.opened.fetch_add(1, Ordering::Relaxed);
                    (opened, false)
                }
            };
            match self.backend.ping(&mut connection).await {
                Ok(()) => {
                    self.put(connection);
                    return Ok(());
                }
                Err(PingFailure { error, gone: false }) => {
                    self.put(connection);
                    return Err(error);
                }
                Err(PingFailure { error, gone: true }) => {
                    drop(connection);
                    if !was_kept || retried {
                        return Err(error);
                    }
                    retried = true;
                }
            }
        }
    }

    /// The kept connection, unless it is known to be closed (then it is dropped here).
    fn take(&self) -> Option<B::Connection> {
        self.slot
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .filter(|connection| !self.backend.is_closed(connection))
    }

    fn put(&self, connection: B::Connection) {
        let mut slot = self
            .slot
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Two checks at once (two monitors sharing the check) may both have opened one: the
        // extra one is closed.
        if slot.is_none() {
            *slot = Some(connection);
        }
    }
}

impl<B, C> Reserved<B, C> {
    /// Connections opened for the check so far, the first and every replacement.
    pub(crate) fn opened(&self) -> u64 {
        self.slot.opened.load(Ordering::Relaxed)
    }
}

impl<B: Clone, C> Clone for Reserved<B, C> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            slot: Arc::clone(&self.slot),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::*;
    use crate::check::CheckErrorKind;

    /// A backend whose connections are numbered, and whose next ping fails as told.
    #[derive(Clone, Default)]
    struct Fake {
        state: Arc<FakeState>,
    }

    #[derive(Default)]
    struct FakeState {
        refuse: AtomicBool,
        /// The next ping on a connection opened before this number fails as gone.
        gone_before: AtomicU64,
        /// The next ping fails with a query error (the connection stays).
        query_error: AtomicBool,
        /// Pings hang.
        hang: AtomicBool,
        opened: AtomicU64,
        dropped: Arc<AtomicU64>,
    }

    struct FakeConnection {
        number: u64,
        dropped: Arc<AtomicU64>,
    }

    impl Drop for FakeConnection {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl ReservedBackend for Fake {
        type Connection = FakeConnection;

        async fn open(&self) -> Result<FakeConnection, CheckError> {
            if self.state.refuse.load(Ordering::SeqCst) {
                return Err(CheckError::new(CheckErrorKind::Refused, "refused"));
            }
            let number = self.state.opened.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(FakeConnection {
                number,
                dropped: Arc::clone(&self.state.dropped),
            })
        }

        fn is_closed(&self, _connection: &FakeConnection) -> bool {
            false
        }

        async fn ping<'a>(&'a self, connection: &'a mut FakeConnection) -> Result<(), PingFailure> {
            if self.state.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            if self.state.query_error.swap(false, Ordering::SeqCst) {
                return Err(PingFailure {
                    error: CheckError::new(CheckErrorKind::Query, "syntax"),
                    gone: false,
                });
            }
            if connection.number <= self.state.gone_before.load(Ordering::SeqCst) {
                return Err(PingFailure {
                    error: CheckError::new(CheckErrorKind::Closed, "gone"),
                    gone: true,
                });
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn one_connection_is_reused_and_a_gone_one_replaced_within_the_check() {
        let fake = Fake::default();
        let reserved = Reserved::new(fake.clone());
        for _ in 0..3 {
            reserved.check().await.unwrap();
        }
        assert_eq!(reserved.opened(), 1);
        // The server closed it while it waited: replaced, the check passes.
        fake.state.gone_before.store(1, Ordering::SeqCst);
        reserved.check().await.unwrap();
        assert_eq!(reserved.opened(), 2);
        assert_eq!(fake.state.dropped.load(Ordering::SeqCst), 1);
        // A query error keeps the connection.
        fake.state.query_error.store(true, Ordering::SeqCst);
        let error = reserved.check().await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Query);
        assert!(reserved.is_held());
        assert_eq!(reserved.opened(), 2);
    }

    #[tokio::test]
    async fn a_new_connection_is_never_retried() {
        let fake = Fake::default();
        let reserved = Reserved::new(fake.clone());
        fake.state.gone_before.store(u64::MAX, Ordering::SeqCst);
        let error = reserved.check().await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Closed);
        assert_eq!(reserved.opened(), 1, "no second attempt");
        assert!(!reserved.is_held());
        fake.state.refuse.store(true, Ordering::SeqCst);
        let error = reserved.check().await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Refused);
    }

    #[tokio::test]
    async fn a_check_dropped_mid_ping_drops_its_connection() {
        let fake = Fake::default();
        let reserved = Reserved::new(fake.clone());
        reserved.check().await.unwrap();
        fake.state.hang.store(true, Ordering::SeqCst);
        let abandoned = tokio::time::timeout(Duration::from_millis(20), reserved.check()).await;
        assert!(abandoned.is_err(), "the ping hangs");
        assert_eq!(fake.state.dropped.load(Ordering::SeqCst), 1, "closed");
        assert!(!reserved.is_held());
        fake.state.hang.store(false, Ordering::SeqCst);
        reserved.check().await.unwrap();
        assert_eq!(reserved.opened(), 2);
    }
}
