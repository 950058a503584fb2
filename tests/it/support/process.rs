//! What a process holds, read from `/proc`: its resident memory and its open file
//! descriptors. Shared by the tests (`support::process`) and the soak bench (which includes
//! this file by path).

/// This process's resident set size in KiB (`VmRSS`); 0 where `/proc` cannot tell.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Open file descriptors of process `pid`.
pub(crate) fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}
