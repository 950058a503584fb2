use std::fmt;
use std::time::Duration;

/// The error of a [`PostgresCheckManager`](super::PostgresCheckManager) connection attempt.
#[derive(Debug)]
#[non_exhaustive]
pub enum PostgresConnectError {
    /// tokio-postgres failed to connect or to validate the connection.
    Postgres(tokio_postgres::Error),
    /// The attempt took longer than the manager's connect timeout.
    TimedOut(Duration),
}

impl fmt::Display for PostgresConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Postgres(error) => fmt::Display::fmt(error, f),
            Self::TimedOut(after) => write!(f, "connection attempt timed out after {after:?}"),
        }
    }
}

impl std::error::Error for PostgresConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // Display already shows the tokio-postgres error itself.
        match self {
            Self::Postgres(error) => error.source(),
            Self::TimedOut(_) => None,
        }
    }
}

/// A PostgreSQL connection string that does not parse.
#[derive(Debug, Clone)]
pub struct InvalidPostgresDsn {
    message: String,
}

impl InvalidPostgresDsn {
    /// `message` must already be redacted.
    pub(crate) fn new(message: String) -> Self {
        Self { message }
    }
}

impl fmt::Display for InvalidPostgresDsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid postgresql connection string: {}", self.message)
    }
}

impl std::error::Error for InvalidPostgresDsn {}
