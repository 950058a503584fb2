use std::path::PathBuf;
use std::sync::Arc;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};
use crate::env::{ConfigError, FirstError};

/// A [`Component`] that checks the free space of the file system holding a path: in
/// trouble below a minimum, by default 10% of the file system's size.
///
/// The figures come from the operating system (`statvfs` through the `fs4` crate), read on a
/// blocking thread so that a slow file system (NFS) cannot stall the runtime. Trouble is of
/// kind `other`, with the figures or the reason they could not be read; a check that passes
/// reports them (`details.available_bytes`, `details.total_bytes`).
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{ComponentSpec, DiskSpace};
///
/// let uploads = DiskSpace::new("/var/lib/app/uploads").min_available_bytes(5 << 30);
/// let config = HealthConfig::new().component(ComponentSpec::new("uploads", uploads));
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct DiskSpace {
    path: Arc<PathBuf>,
    minimum: Minimum,
    /// The first invalid value a setter was given: [`validate`](Component::validate)'s
    /// answer.
    error: FirstError,
}

#[derive(Copy, Clone, Debug)]
enum Minimum {
    /// Percent of the file system's size.
    Percent(u8),
    Bytes(u64),
}

impl DiskSpace {
    /// Checks the file system holding `path`; in trouble below 10% available.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Arc::new(path.into()),
            minimum: Minimum::Percent(10),
            error: FirstError::default(),
        }
    }

    /// In trouble below `percent` percent of the file system's size available.
    ///
    /// Defaults to 10.
    ///
    /// A `percent` above 100 is an error of [`HealthMonitor::new`](crate::HealthMonitor::new)
    /// (the setting is left as it was).
    #[must_use]
    pub fn min_available_percent(mut self, percent: u8) -> Self {
        let check = if percent <= 100 {
            Ok(())
        } else {
            Err(ConfigError::new(
                "DiskSpace::min_available_percent",
                &percent.to_string(),
                "must be at most 100",
            ))
        };
        if self.error.passes(check) {
            self.minimum = Minimum::Percent(percent);
        }
        self
    }

    /// In trouble below `bytes` available, whatever the file system's size.
    ///
    /// Defaults to a percentage instead: see
    /// [`min_available_percent`](Self::min_available_percent).
    #[must_use]
    pub fn min_available_bytes(mut self, bytes: u64) -> Self {
        self.minimum = Minimum::Bytes(bytes);
        self
    }
}

impl Component for DiskSpace {
    fn check(&self) -> CheckFuture {
        let path = Arc::clone(&self.path);
        let minimum = self.minimum;
        Box::pin(async move {
            let figures = tokio::task::spawn_blocking({
                let path = Arc::clone(&path);
                move || {
                    Ok::<_, std::io::Error>((
                        fs4::available_space(&*path)?,
                        fs4::total_space(&*path)?,
                    ))
                }
            })
            .await;
            let (available, total) = match figures {
                Ok(Ok(figures)) => figures,
                Ok(Err(error)) => {
                    return Err(CheckError::new(
                        CheckErrorKind::Other,
                        format!("reading the free space of {}: {error}", path.display()),
                    ));
                }
                Err(error) => {
                    let kind = if error.is_panic() {
                        CheckErrorKind::Panicked
                    } else {
                        CheckErrorKind::Other
                    };
                    return Err(CheckError::new(kind, error.to_string()));
                }
            };
            let required = match minimum {
                Minimum::Percent(percent) => total / 100 * u64::from(percent),
                Minimum::Bytes(bytes) => bytes,
            };
            if available < required {
                return Err(CheckError::new(
                    CheckErrorKind::Other,
                    format!(
                        "{} available on {} of {} bytes, below the minimum of {required}",
                        available,
                        path.display(),
                        total
                    ),
                ));
            }
            Ok(CheckReport::new()
                .detail("available_bytes", available)
                .detail("total_bytes", total))
        })
    }

    fn target(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.error.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HealthConfig;
    use crate::component::ComponentSpec;

    #[test]
    fn a_percent_above_100_is_the_monitors_error_naming_the_setter() {
        let disk = DiskSpace::new("/").min_available_percent(101);
        assert!(
            matches!(disk.minimum, Minimum::Percent(10)),
            "the old value kept"
        );
        let config = HealthConfig::new().component(ComponentSpec::new("disk", disk));
        let error = crate::HealthMonitor::new(config).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"DiskSpace::min_available_percent="101": must be at most 100"#
        );
    }

    #[test]
    fn the_first_bad_percent_is_the_one_returned_and_100_is_fine() {
        let disk = DiskSpace::new("/")
            .min_available_percent(200)
            .min_available_percent(150);
        assert_eq!(disk.validate().unwrap_err().value(), "200");
        assert!(
            DiskSpace::new("/")
                .min_available_percent(100)
                .validate()
                .is_ok()
        );
    }
}
