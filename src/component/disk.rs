use std::path::PathBuf;
use std::sync::Arc;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};

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
        }
    }

    /// In trouble below `percent` percent of the file system's size available.
    ///
    /// Defaults to 10.
    ///
    /// # Panics
    ///
    /// When `percent` is above 100.
    #[must_use]
    pub fn min_available_percent(mut self, percent: u8) -> Self {
        assert!(percent <= 100, "min_available_percent must be at most 100");
        self.minimum = Minimum::Percent(percent);
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
}
