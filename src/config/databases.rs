//! The databases to check: their names, and finding them in the environment, each URL
//! scheme going to its check (see [`SCHEMES`]).

use std::sync::Arc;

use super::{ConfigError, Env, HealthConfig, is_valid_check_name};
use crate::check::DatabaseCheck;

/// The name of the database the pool endpoint and the health status follow.
pub(crate) const DEFAULT_DATABASE: &str = "default";

/// The variables naming the default database: ours, then the compatibility name.
const DEFAULT_DATABASE_VARIABLES: [&str; 2] = ["TOWER_HEALTH_DATABASE_URL", "BALDUR_SQL_DSN"];

/// The prefix of the variables naming further databases (`<prefix><NAME>`).
const NAMED_DATABASE_PREFIX: &str = "TOWER_HEALTH_DATABASE_URL_";

/// A configured database: its name and its check.
#[derive(Clone, Debug)]
pub(crate) struct DatabaseEntry {
    pub(crate) name: Arc<str>,
    pub(crate) check: Arc<dyn DatabaseCheck>,
    /// The environment variable that named it, if one did: what a warning names when code
    /// replaces it.
    pub(crate) variable: Option<String>,
}

/// A database named in the environment.
struct DatabaseVariable<'e> {
    variable: &'e str,
    name: String,
    url: &'e str,
}

/// The check name a variable declares after its prefix (`TOWER_HEALTH_TCP_CACHE`: `cache`),
/// lower-cased; refused, naming the variable, when it is not a valid name.
pub(crate) fn name_after(
    prefix: &str,
    variable: &str,
    suffix: &str,
    value: &str,
) -> Result<String, ConfigError> {
    let name = suffix.to_ascii_lowercase();
    if !is_valid_check_name(&name) {
        return Err(ConfigError::new(
            variable,
            value,
            format!("the name after {prefix} must be 1 to 63 ASCII letters, digits, '_' or '-'"),
        ));
    }
    Ok(name)
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
        let name = name_after(NAMED_DATABASE_PREFIX, variable, suffix, url)?;
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
            let entry = DatabaseEntry {
                name: database.name.into(),
                check,
                variable: Some(database.variable.to_owned()),
            };
            // The environment's names are distinct: nothing is replaced here.
            let _none = self.insert_database(entry);
        }
        Ok(self)
    }
}

/// How a database's connection string becomes its check.
type Connect = fn(&DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError>;

/// Which check each URL scheme gets: the one place a database backend from the environment
/// is added. A key-value string (`host=db user=app`, no scheme) is PostgreSQL's (libpq's).
///
/// What is a database here and what a [component](crate::component): a database is a store
/// the application's requests cannot do without, checked through a pool whose figures
/// matter: it gates readiness, and the default one decides `unhealthy` and `/health/pool`.
/// A dependency the application can degrade around (a cache, a queue, a search service) is
/// a component: non-critical unless listed in `TOWER_HEALTH_CRITICAL`, gating readiness only
/// when declared to. Redis is a component (`TOWER_HEALTH_REDIS_<NAME>`), and a Redis URL
/// given as a database is refused with that advice.
const SCHEMES: [(&[&str], Connect); 2] = [
    (&["postgres", "postgresql"], postgres),
    (
        &[
            "redis",
            "rediss",
            "valkey",
            "valkeys",
            "redis-cluster",
            "rediss-cluster",
            "redis-sentinel",
            "rediss-sentinel",
        ],
        redis_is_a_component,
    ),
];

/// The check for `database`, by the scheme of its URL.
fn connect(database: &DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    let Some((scheme, _)) = database.url.split_once("://") else {
        return postgres(database);
    };
    let scheme = scheme.to_ascii_lowercase();
    match SCHEMES
        .iter()
        .find(|(schemes, _)| schemes.contains(&scheme.as_str()))
    {
        Some((_, connect)) => connect(database),
        None => Err(ConfigError::new(
            database.variable,
            database.url,
            format!(
                "no database check for {scheme}:// URLs (expected postgres:// or postgresql://)"
            ),
        )),
    }
}

#[cfg(feature = "postgres")]
fn postgres(database: &DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    let check = crate::postgres::PostgresCheck::connect(database.url)
        .map_err(|error| error.for_variable(database.variable))?;
    Ok(Arc::new(check))
}

/// Refuses rather than silently running with no database: a missing driver must never turn
/// "database configured" into "ready forever".
#[cfg(not(feature = "postgres"))]
fn postgres(database: &DatabaseVariable<'_>) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    Err(ConfigError::new(
        database.variable,
        database.url,
        "a database is configured but tower-health was built without the `postgres` feature",
    ))
}

fn redis_is_a_component(
    database: &DatabaseVariable<'_>,
) -> Result<Arc<dyn DatabaseCheck>, ConfigError> {
    Err(ConfigError::new(
        database.variable,
        database.url,
        format!(
            "Redis is checked as a component, not a database: declare it as TOWER_HEALTH_REDIS_{} (feature `redis`), or share the health verdict through it with TOWER_HEALTH_REDIS_URL",
            database.name.to_ascii_uppercase()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_picks_the_check() {
        let error = HealthConfig::from_vars([(
            "TOWER_HEALTH_DATABASE_URL_CACHE",
            "redis://:hunter2@cache:6379",
        )])
        .unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL_CACHE");
        assert!(
            error.reason().contains("TOWER_HEALTH_REDIS_CACHE"),
            "{error}"
        );
        assert!(!error.to_string().contains("hunter2"), "{error}");
        let error =
            HealthConfig::from_vars([("BALDUR_SQL_DSN", "mysql://app@db/app")]).unwrap_err();
        assert_eq!(error.variable(), "BALDUR_SQL_DSN");
        assert_eq!(
            error.reason(),
            "no database check for mysql:// URLs (expected postgres:// or postgresql://)"
        );
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_urls_and_key_value_strings_are_postgresql() {
        let config = HealthConfig::from_vars([
            ("TOWER_HEALTH_DATABASE_URL", "host=127.0.0.1 user=postgres"),
            (
                "TOWER_HEALTH_DATABASE_URL_A",
                "postgresql://postgres@127.0.0.1/a",
            ),
        ])
        .unwrap();
        assert_eq!(
            config.database_names().collect::<Vec<_>>(),
            ["default", "a"]
        );
    }
}
