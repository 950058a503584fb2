//! Which process a page belongs to: the instance's name, its host, its process id, the
//! crate's version and how long the process has run. Read once per rendering; nothing here
//! fails (what cannot be read is said so).

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

/// The process's identity, in words.
#[derive(Debug)]
pub(super) struct Identity {
    /// [`HealthConfig::instance`](crate::HealthConfig::instance), else the program's name.
    pub(super) instance: Arc<str>,
    pub(super) host: Arc<str>,
    pub(super) pid: u32,
    pub(super) version: &'static str,
    /// How long the process has run: `3h 12m`, `41s`.
    pub(super) uptime: String,
}

impl Identity {
    /// The identity of this process, named `instance` if the application named it.
    pub(super) fn now(instance: Option<&Arc<str>>) -> Self {
        Self {
            instance: instance.cloned().unwrap_or_else(|| PROGRAM.clone()),
            host: HOST.clone(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION"),
            uptime: uptime(STARTED.elapsed()),
        }
    }
}

/// The program's name: its executable's file name, else its first argument's, else the
/// crate's.
static PROGRAM: LazyLock<Arc<str>> = LazyLock::new(|| {
    let named = |path: std::path::PathBuf| {
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .filter(|name| !name.is_empty())
    };
    std::env::current_exe()
        .ok()
        .and_then(named)
        .or_else(|| std::env::args_os().next().map(Into::into).and_then(named))
        .map_or_else(|| Arc::from("tower-health"), |name| Arc::from(clean(&name)))
});

/// The host's name: `HOSTNAME` (a pod's name under Kubernetes), else the kernel's.
static HOST: LazyLock<Arc<str>> = LazyLock::new(|| {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|name| clean(name.trim()))
        .filter(|name| !name.is_empty())
        .map_or_else(|| Arc::from("unknown host"), Arc::from)
});

/// `text` on one line of at most 100 characters: what it is read from (a variable, a file
/// name) is outside the process.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(100).collect()
}

/// When the process started, read once (a page renders often: an open page's every update):
/// from its age in `/proc` on Linux, else when the page was first rendered.
static STARTED: LazyLock<Instant> = LazyLock::new(|| {
    let now = Instant::now();
    from_proc()
        .and_then(|age| now.checked_sub(age))
        .unwrap_or(now)
});

/// The process's age from `/proc/self/stat` (its start, in clock ticks after the boot) and
/// `/proc/uptime` (seconds since the boot). The ticks are `USER_HZ`, which Linux fixes at 100
/// for what `/proc` reports on the architectures it runs servers on.
fn from_proc() -> Option<Duration> {
    const USER_HZ: f64 = 100.0;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command's name, in parentheses, may hold spaces: the fields follow its last `)`.
    let fields = &stat[stat.rfind(')')? + 1..];
    // `starttime` is the 22nd field; the 3rd (`state`) comes first after the name.
    let start_ticks: f64 = fields.split_whitespace().nth(19)?.parse().ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let since_boot: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    let age = since_boot - start_ticks / USER_HZ;
    (age.is_finite() && age >= 0.0).then(|| Duration::from_secs_f64(age))
}

/// `2d 3h`, `3h 12m`, `4m 5s`, `41s`: the two largest units.
pub(super) fn uptime(age: Duration) -> String {
    let secs = age.as_secs();
    let (days, hours, minutes, seconds) =
        (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    if days > 0 {
        format!("{days}d {hours}h")
    } else if hours > 0 {
        format!("{hours}h {minutes}m")
    } else if minutes > 0 {
        format!("{minutes}m {seconds}s")
    } else {
        format!("{seconds}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uptime_in_its_two_largest_units() {
        assert_eq!(uptime(Duration::from_secs(41)), "41s");
        assert_eq!(uptime(Duration::from_secs(245)), "4m 5s");
        assert_eq!(
            uptime(Duration::from_secs(3 * 3600 + 12 * 60 + 9)),
            "3h 12m"
        );
        assert_eq!(uptime(Duration::from_secs(2 * 86_400 + 3 * 3600)), "2d 3h");
    }

    #[test]
    fn the_identity_names_this_process() {
        let identity = Identity::now(None);
        assert_eq!(identity.pid, std::process::id());
        assert_eq!(identity.version, env!("CARGO_PKG_VERSION"));
        assert!(!identity.instance.is_empty() && !identity.host.is_empty());
        let named = Identity::now(Some(&Arc::from("chat 1.4.2")));
        assert_eq!(&*named.instance, "chat 1.4.2");
        // This test process started before this test did, and not days ago.
        if cfg!(target_os = "linux") {
            let age = from_proc().expect("Linux tells a process's start");
            assert!(age < Duration::from_secs(86_400), "{age:?}");
        }
    }

    #[test]
    fn text_from_outside_is_one_bounded_line() {
        assert_eq!(clean("pod-1\n<b>"), "pod-1<b>");
        assert_eq!(clean(&"x".repeat(300)).len(), 100);
    }
}
