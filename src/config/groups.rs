//! Health groups: named sets of checks with a path, a gRPC service name and a metrics label
//! of their own, as Spring Boot Actuator's groups and ASP.NET Core's tagged endpoints are.
//! Declared in code ([`HealthConfig::group`]) or in the environment
//! (`TOWER_HEALTH_GROUP_<NAME>=database/default,component/cache:optional`).

use std::sync::Arc;

use super::databases::name_after;
use super::{ConfigError, Env, HealthConfig, is_valid_check_name};

/// A named set of checks and its rule: it answers 503 when a member fails, 200 `degraded`
/// when only an optional member does.
///
/// A member is named as in the Kubernetes-style answers: `database/<name>` or
/// `component/<name>`, each a database or a component of the same configuration
/// ([`HealthMonitor::new`](crate::HealthMonitor::new) refuses a name that is neither). The
/// group answers at `<prefix>/group/<name>` on every layer (`/health/group/<name>` on the
/// admin server), as gRPC service `group/<name>`, and in the metrics with label
/// `group="<name>"`. It is judged like readiness: 503 while draining, held, before the first
/// round and once its verdict is stale.
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{self, ComponentSpec};
/// use tower_health::config::HealthGroup;
///
/// let payments = component::from_fn(|| async { Ok(()) }); // ask the payment provider
/// let fraud = component::from_fn(|| async { Ok(()) });
/// let config = HealthConfig::from_env()? // TOWER_HEALTH_DATABASE_URL: `database/default`
///     .component(ComponentSpec::new("payments", payments))
///     .component(ComponentSpec::new("fraud", fraud))
///     .group(
///         HealthGroup::new("checkout")
///             .member("component/payments")
///             .optional("component/fraud"),
///     );
/// # Ok::<(), tower_health::config::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthGroup {
    pub(crate) name: Arc<str>,
    pub(crate) members: Vec<GroupMember>,
}

/// One member of a [`HealthGroup`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupMember {
    /// `database/<name>` or `component/<name>`.
    pub(crate) check: Arc<str>,
    /// Whether its failure only degrades the group (200 `degraded`) instead of failing it.
    pub(crate) optional: bool,
}

impl HealthGroup {
    /// An empty group named `name` (1 to 63 ASCII letters, digits, `_` or `-`; anything
    /// else is an error of [`HealthMonitor::new`](crate::HealthMonitor::new)).
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            members: Vec::new(),
        }
    }

    /// Adds a member whose failure fails the group (503).
    #[must_use]
    pub fn member(self, check: &str) -> Self {
        self.with(check, false)
    }

    /// Adds a member whose failure only degrades the group (200 `degraded`).
    #[must_use]
    pub fn optional(self, check: &str) -> Self {
        self.with(check, true)
    }

    fn with(mut self, check: &str, optional: bool) -> Self {
        self.members.retain(|member| *member.check != *check);
        self.members.push(GroupMember {
            check: check.into(),
            optional,
        });
        self
    }

    /// The group's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The prefix of the variables that declare groups.
const PREFIX: &str = "TOWER_HEALTH_GROUP_";

/// What marks an optional member in a variable's list.
const OPTIONAL: &str = ":optional";

/// # Health groups
impl HealthConfig {
    /// Adds a health group, or replaces the one with its name. Environment:
    /// `TOWER_HEALTH_GROUP_<NAME>=database/default,component/cache:optional` (the members,
    /// comma-separated; `:optional` after one that only degrades the group).
    pub fn group(mut self, group: HealthGroup) -> Self {
        self.groups.retain(|existing| existing.name != group.name);
        self.groups.push(group);
        self
    }

    /// The names of the health groups, in the order they were added.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(|group| &*group.name)
    }

    /// Adds the groups the environment declares.
    pub(super) fn groups_from_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        for (variable, suffix, value) in env.with_prefix(PREFIX) {
            let name = name_after(PREFIX, variable, suffix, value)?;
            let mut group = HealthGroup::new(&name);
            for member in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                group = match member.strip_suffix(OPTIONAL) {
                    Some(check) => group.optional(check),
                    None => group.member(member),
                };
            }
            if group.members.is_empty() {
                return Err(ConfigError::new(
                    variable,
                    value,
                    "expected the group's checks separated by commas (`database/<name>`, `component/<name>`, `:optional` after one that only degrades it)",
                ));
            }
            self = self.group(group);
        }
        Ok(self)
    }

    /// Whether every group has a valid name and members, each a check of this
    /// configuration: checked where the monitor is made, when every check is known.
    pub(super) fn check_groups(&self) -> Result<(), ConfigError> {
        for group in &self.groups {
            let setting = format!("HealthConfig::group({:?})", &*group.name);
            if !is_valid_check_name(&group.name) {
                return Err(ConfigError::new(
                    &setting,
                    &group.name,
                    "a group's name is 1 to 63 ASCII letters, digits, '_' or '-'",
                ));
            }
            if group.members.is_empty() {
                return Err(ConfigError::new(&setting, "", "a group needs members"));
            }
            for member in &group.members {
                let known = match member.check.split_once('/') {
                    Some(("database", name)) => self.database_names().any(|known| known == name),
                    Some(("component", name)) => self.component_names().any(|known| known == name),
                    _ => false,
                };
                if !known {
                    return Err(ConfigError::new(
                        &setting,
                        &member.check,
                        "a member is `database/<name>` or `component/<name>` of a database or component of this configuration",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_helpers::FakeCheck;

    #[test]
    fn groups_from_the_environment() {
        let config = HealthConfig::from_vars([
            ("TOWER_HEALTH_DATABASE_URL", "postgres://db/app"),
            ("TOWER_HEALTH_DATABASE_URL_ORDERS", "postgres://db/orders"),
            (
                "TOWER_HEALTH_GROUP_CHECKOUT",
                "database/default, database/orders:optional",
            ),
        ])
        .unwrap();
        assert_eq!(
            config.groups,
            [HealthGroup::new("checkout")
                .member("database/default")
                .optional("database/orders")]
        );
        assert!(config.checked().is_ok());
        let error = HealthConfig::from_vars([("TOWER_HEALTH_GROUP_EMPTY", " , ")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_GROUP_EMPTY");
    }

    #[test]
    fn a_member_must_be_a_check_of_the_configuration() {
        let config = HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .group(HealthGroup::new("checkout").member("database/payments"));
        let error = config.checked().unwrap_err();
        assert_eq!(error.variable(), r#"HealthConfig::group("checkout")"#);
        assert!(error.to_string().contains("database/payments"), "{error}");
        let bad_name = HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .group(HealthGroup::new("check out").member("database/default"));
        assert!(bad_name.checked().is_err());
        let fine = HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .group(HealthGroup::new("checkout").member("database/default"));
        assert!(fine.checked().is_ok());
    }
}
