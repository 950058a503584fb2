//! Checks beside the application's bb8 pool on a connection reserved for them (the shared
//! design is in `postgres/reserved.rs`): opened by the pool's own connection manager (same
//! configuration, TLS and customizer), never taken from the pool.

use bb8::{ManageConnection, Pool};

use super::PostgresConnection;
use super::classify::{self, Phase};
use super::error::connect_error;
use super::reserved::{self, PingFailure, ReservedBackend};
use crate::check::CheckError;

/// The application's pool: only its manager is used, to open the reserved connection.
pub(super) struct AppPool<M: ManageConnection>(pub(super) Pool<M>);

/// The reserved connection beside a bb8 pool.
pub(super) type Reserved<M> = reserved::Reserved<AppPool<M>, <M as ManageConnection>::Connection>;

impl<M: ManageConnection> Clone for AppPool<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M> ReservedBackend for AppPool<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    type Connection = M::Connection;

    async fn open(&self) -> Result<M::Connection, CheckError> {
        self.0
            .dedicated_connection()
            .await
            .map_err(|error| connect_error(&error))
    }

    fn is_closed(&self, connection: &M::Connection) -> bool {
        connection.is_closed()
    }

    async fn ping<'a>(&'a self, connection: &'a mut M::Connection) -> Result<(), PingFailure> {
        match connection.client().simple_query("SELECT 1").await {
            Ok(_) => Ok(()),
            Err(error) => Err(PingFailure {
                gone: classify::is_connection_gone(&error),
                error: CheckError::from_error(
                    classify::tokio_postgres(&error, Phase::Query),
                    &error,
                ),
            }),
        }
    }
}
