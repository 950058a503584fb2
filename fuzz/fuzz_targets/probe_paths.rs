//! Probe-path matching: any prefix, any path. A path is a probe (or one of its checks) only
//! at one of that probe's (or check's) exact paths.
//!
//! Input: a flag byte (bit 0: Kubernetes aliases), then `prefix\npath`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower_health::__fuzz;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (prefix, path) = text.split_once('\n').unwrap_or(("/health", text));
    let aliases = flags & 1 == 1;
    if let Some((probe, check)) = __fuzz::classify(prefix, aliases, path) {
        let paths = __fuzz::probe_paths(prefix, aliases, probe, check);
        assert!(
            paths.iter().any(|answered| answered == path),
            "{path:?} answered as {probe:?} ({check:?}) under {prefix:?}, whose paths are {paths:?}"
        );
    }
});
