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

/// A log line as the guide shows it and the examples' subscriber writes it (without its
/// timestamp): its level, its target, its message and the names of its fields.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub level: String,
    pub target: String,
    pub message: String,
    pub fields: Vec<String>,
}

impl Line {
    /// `LEVEL target: message key=value key="value with spaces" ...`, the level padded.
    pub fn parse(line: &str) -> Option<Self> {
        let line = line.trim();
        let (level, rest) = line.split_once(' ')?;
        if !["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) {
            return None;
        }
        let (target, rest) = rest.trim_start().split_once(": ")?;
        // The message ends where the first `key=` begins (a word of letters and `_`).
        let mut message_end = rest.len();
        let mut fields = Vec::new();
        let mut at = 0;
        while at < rest.len() {
            let word_start = at;
            let word_end = rest[at..].find(' ').map_or(rest.len(), |end| at + end);
            let word = &rest[word_start..word_end];
            if let Some((key, _)) = word.split_once('=')
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                message_end = message_end.min(word_start);
                fields.push(key.to_owned());
                // A quoted value may hold spaces: skip to its closing quote.
                let value_start = word_start + key.len() + 1;
                if rest[value_start..].starts_with('"') {
                    let close = rest[value_start + 1..]
                        .find('"')
                        .map_or(rest.len(), |close| value_start + 1 + close + 1);
                    at = close;
                    continue;
                }
            }
            at = word_end + 1;
        }
        Some(Self {
            level: level.to_owned(),
            target: target.to_owned(),
            message: rest[..message_end.min(rest.len())].trim().to_owned(),
            fields,
        })
    }

    /// The lines of the `index`th `text` block after `heading` in the guide page `guide`.
    pub fn block(guide: &str, heading: &str, index: usize) -> Vec<Self> {
        let section = &guide[guide.find(heading).expect("the heading")..];
        let block = section
            .split("```text\n")
            .nth(index + 1)
            .expect("the text block");
        let block = &block[..block.find("```").expect("the block's end")];
        block
            .lines()
            .map(|line| Self::parse(line).unwrap_or_else(|| panic!("not a log line: {line}")))
            .collect()
    }
}
