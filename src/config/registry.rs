//! The databases and components a monitor checks: [`HealthConfig`]'s registries.

use std::sync::Arc;

use super::databases::{DEFAULT_DATABASE, DatabaseEntry};
use super::{ConfigError, ConfigWarning, HealthConfig, is_valid_check_name};
use crate::check::DatabaseCheck;
use crate::component::{ComponentSpec, UnknownComponents};

/// # What is checked
///
/// The databases, the components and the monitor's own health.
impl HealthConfig {
    /// Adds a database to check, or replaces the one with the same name. Replacing one the
    /// environment named (`TOWER_HEALTH_DATABASE_URL`, `BALDUR_SQL_DSN`,
    /// `TOWER_HEALTH_DATABASE_URL_<NAME>`) records a [warning](Self::warnings) naming both.
    ///
    /// The database named `"default"` is the default database: the health status and the pool
    /// endpoint follow it. If none has that name, the first one added is the default.
    ///
    /// Defaults to no database. With none, readiness answers 200 with no checks, while health
    /// (unhealthy) and pool (degraded) answer 503: do not route traffic on those two then.
    ///
    /// A `name` that is empty, longer than 63 bytes, or has characters other than ASCII
    /// letters, digits, `_` and `-` (it becomes part of JSON keys and metric labels) is an
    /// error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn database(mut self, name: &str, check: impl DatabaseCheck) -> Self {
        if !self
            .error
            .passes(check_name("HealthConfig::database", name))
        {
            return self;
        }
        let entry = DatabaseEntry {
            name: name.into(),
            check: Arc::new(check),
            variable: None,
        };
        if let Some(variable) = self.insert_database(entry).and_then(|old| old.variable) {
            self.warnings.push(ConfigWarning::new(
                &variable,
                format!(
                    "the database `{name}` of {variable} is replaced by HealthConfig::database(\"{name}\", ..) in code: {variable} is not checked"
                ),
            ));
        }
        self
    }
    /// Declares the database `name` optional (non-critical): down, it makes `/health`
    /// answer 200 `degraded` and leaves readiness alone, for a read replica, say, whose loss
    /// should not depool every pod that shares it. Applies whether the database is added
    /// before or after this call; a name no database has is logged as a warning when the
    /// monitor starts.
    ///
    /// Defaults to none: every database gates readiness, and the default one decides
    /// `unhealthy`.
    ///
    /// A `name` that is not a valid database name (see [`HealthConfig::database`]) is an
    /// error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn optional_database(mut self, name: &str) -> Self {
        if self
            .error
            .passes(check_name("HealthConfig::optional_database", name))
        {
            self.add_optional(name);
        }
        self
    }
    /// Declares the database `name`, known to be valid, optional.
    pub(super) fn add_optional(&mut self, name: &str) {
        if !self.is_optional(name) {
            self.optional_databases.push(name.into());
        }
    }
    /// Whether the database `name` was declared optional.
    pub(crate) fn is_optional(&self, name: &str) -> bool {
        self.optional_databases
            .iter()
            .any(|optional| &**optional == name)
    }
    /// Removes every database added so far.
    pub fn without_databases(mut self) -> Self {
        self.databases.clear();
        self
    }
    /// The names of the configured databases, in the order they were added.
    pub fn database_names(&self) -> impl Iterator<Item = &str> {
        self.databases.iter().map(|entry| &*entry.name)
    }
    /// Adds a component the health round checks, or replaces the one with the same name:
    /// see [`component`](crate::component).
    ///
    /// Defaults to no component; `components` is then `null` in the health body.
    ///
    /// The first invalid value `spec`'s setters were given is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn component(mut self, spec: ComponentSpec) -> Self {
        self.error.absorb(&spec.error);
        match self
            .components
            .iter_mut()
            .find(|existing| existing.name == spec.name)
        {
            Some(existing) => *existing = spec,
            None => self.components.push(spec),
        }
        self
    }
    /// The names of the registered components, in the order they were added.
    pub fn component_names(&self) -> impl Iterator<Item = &str> {
        self.components.iter().map(|spec| &*spec.name)
    }
    /// How a component counts toward the overall status before its first conclusive
    /// result; it is shown `unknown` either way. Environment:
    /// `TOWER_HEALTH_UNKNOWN_COMPONENTS=ignored|in_trouble`.
    ///
    /// Defaults to [`UnknownComponents::Ignored`]: counted as fine.
    pub fn unknown_components(mut self, policy: UnknownComponents) -> Self {
        self.unknown_components = policy;
        self
    }
    /// Whether the monitor also watches itself: a non-critical component named `monitor`
    /// reports readiness rounds that lag (none finished for two intervals plus the
    /// deadline), so `/health` reads `degraded` with the lag before the verdicts go stale.
    /// A component registered under the name `monitor` takes its place.
    ///
    /// Defaults to `false` (the health body's `components` stays `null` without components).
    pub fn self_monitoring(mut self, enabled: bool) -> Self {
        self.self_monitoring = enabled;
        self
    }
    /// The index of the default database: the one named `default`, else the first.
    pub(crate) fn default_database_index(&self) -> Option<usize> {
        if self.databases.is_empty() {
            return None;
        }
        Some(
            self.databases
                .iter()
                .position(|entry| &*entry.name == DEFAULT_DATABASE)
                .unwrap_or(0),
        )
    }
}

/// Whether `name` can name a database, as the error of `setter`.
fn check_name(setter: &str, name: &str) -> Result<(), ConfigError> {
    if is_valid_check_name(name) {
        Ok(())
    } else {
        Err(ConfigError::new(
            setter,
            name,
            "a database name must be 1 to 63 ASCII letters, digits, '_' or '-'",
        ))
    }
}
