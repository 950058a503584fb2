/// Generates `get_ref`, `get_mut` and `into_inner` for a service with an `inner` field.
macro_rules! define_inner_service_accessors {
    () => {
        /// Gets a reference to the underlying service.
        pub fn get_ref(&self) -> &S {
            &self.inner
        }

        /// Gets a mutable reference to the underlying service.
        pub fn get_mut(&mut self) -> &mut S {
            &mut self.inner
        }

        /// Consumes `self`, returning the underlying service.
        pub fn into_inner(self) -> S {
            self.inner
        }
    };
}

/// Generates `from_env` and `from_vars` for a settings type with a
/// `pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError>`.
macro_rules! define_env_constructors {
    ($table:literal) => {
        /// Reads the settings from the process environment; see
        #[doc = $table]
        /// for the variables.
        ///
        /// # Errors
        ///
        /// When a variable has a value that cannot be used, or the settings do not fit
        /// together; the error names the variable and the value (never a password or a key).
        /// In strict mode (`TOWER_HEALTH_STRICT_ENV=true`), also when a set `TOWER_HEALTH_*` or
        /// `BALDUR_*` variable is read by no setting of this build; and wherever the admin
        /// keys are read, when a set variable looks like a misspelt key variable
        /// (`TOWER_HEALTH_ADMIN_KYE`). See the [environment
        /// variables](crate::config#environment-variables).
        pub fn from_env() -> Result<Self, crate::config::ConfigError> {
            let env = crate::config::Env::from_process()?;
            crate::config::log_warnings(&crate::config::unread_warnings(&env));
            crate::config::refuse_unread_if_strict(&env)?;
            Self::from_env_snapshot(&env)
        }

        /// Like `from_env`, but reads the given variables instead of the process environment:
        /// handy in tests and for settings that come from a file.
        ///
        /// # Errors
        ///
        /// As for `from_env`.
        pub fn from_vars<I, K, V>(vars: I) -> Result<Self, crate::config::ConfigError>
        where
            I: IntoIterator<Item = (K, V)>,
            K: Into<String>,
            V: Into<String>,
        {
            let env = crate::config::Env::from_vars(vars);
            crate::config::refuse_unread_if_strict(&env)?;
            Self::from_env_snapshot(&env)
        }
    };
}
