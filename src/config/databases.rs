//! The databases to check: their names, and finding them in the environment.

use std::sync::Arc;

use super::{ConfigError, Env, HealthConfig};
use crate::check::DatabaseCheck;

/// The name of the database the pool endpoint and the health status follow.
pub const DEFAULT_DATABASE: &str = "default";

/// The variables naming the default database: ours, then Baldur's.
const DEFAULT_DATABASE_VARIABLES: [&str; 2] = ["TOWER_HEALTH_DATABASE_URL", "BALDUR_SQL_DSN"];

/// The prefix of the variables naming further databases (`<prefix><NAME>`).
const NAMED_DATABASE_PREFIX: &str = "TOWER_HEALTH_DATABASE_URL_";

/// A configured database: its name and its check.
#[derive(Clone, Debug)]
pub(crate) struct DatabaseEntry {
    pub(crate) name: Arc<str>,
    pub(crate) check: Arc<dyn DatabaseCheck>,
}

/// A database named in the environment.
struct DatabaseVariable<'e> {
    variable: &'e str,
    name: String,
    url: &'e str,
}

pub(crate) fn is_valid_check_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Every database the environment names, the default one first.
fn database_variables(env: &Env) -> Result<Vec<DatabaseVariable<'_>>, ConfigError> {
    let mut found = Vec::new();
    if let Some((variable, url)) = env.first(&DEFAULT_DATABASE_VARIABLES) {
        let name = DEFAULT_DATABASE.to_owned();
        found.push(DatabaseVariable {
            variable,
            name,
            url,
        });
    }
    for (variable, suffix, url) in env.with_prefix(NAMED_DATABASE_PREFIX) {
        let name = suffix.to_ascii_lowercase();
        if !is_valid_check_name(&name) {
            return Err(ConfigError::new(
                variable,
                url,
                "the name after TOWER_HEALTH_DATABASE_URL_ must be 1 to 63 ASCII letters, digits, '_' or '-'",
            ));
        }
        found.push(DatabaseVariable {
            variable,
            name,
            url,
        });
    }
    Ok(found)
}

impl HealthConfig {
    /// Adds the databases the environment names.
    pub(super) fn databases_from_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        for database in database_variables(env)? {
            let check = connect(&database)?;
            self.insert_database(database.name.into(), check);
        }
        Ok(self)
    }
}

#[cfg(feature = "postgres")]
fn connect(database: &DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    let check = crate::check::PostgresCheck::connect(database.url)
        .map_err(|error| ConfigError::new(database.variable, database.url, error.to_string()))?;
    Ok(Arc::new(check))
}

/// Refuses rather than silently running with no database: Baldur's worst failure
/// was a missing driver turning "database configured" into "ready forever".
#[cfg(not(feature = "postgres"))]
fn connect(database: &DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    Err(ConfigError::new(
        database.variable,
        database.url,
        "a database is configured but tower-health was built without the `postgres` feature",
    ))
}
