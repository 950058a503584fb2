//! The log lines a test's own code writes: a `tracing` subscriber for the test's thread.
//!
//! `#[tokio::test]` runs on one thread (the current-thread runtime), tasks spawned by the
//! monitor included, so a subscriber set for the thread sees every line the test causes and
//! none of the tests beside it. [`Captured`] is also the writer of a subscriber a test builds
//! itself (its own filter; the fault matrix's, for the whole process).

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;
use tracing_subscriber::fmt::MakeWriter;

/// Every log line written on this thread while the guard lives.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Captures this thread's log lines (`warn` and above, or `RUST_LOG`'s level) until the
    /// guard is dropped.
    #[must_use]
    pub fn start() -> (Self, DefaultGuard) {
        let captured = Self::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        (captured, guard)
    }

    /// Everything captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The lines captured so far.
    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }

    /// Forgets the lines captured so far.
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// The lines captured so far that contain `text`.
    pub fn matching(&self, text: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|line| line.contains(text))
            .collect()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
