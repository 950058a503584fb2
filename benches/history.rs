//! The memory of the checks' history, measured on a whole monitor: a counting allocator reads
//! the live heap of a process running a monitor of 20 components, each flapping every round
//! (a failure with a long message, then a pass), at a cadence fast enough to fill an hour's
//! worth of rounds (3,600 at the default one-second cadence) in seconds.
//!
//! ```sh
//! cargo bench --bench history
//! ```
//!
//! It prints the live heap of the process with a monitor of no check (the baseline), with
//! 20 checks after their first round, and once each check has run past the ring's capacity,
//! then the difference per check. What the monitor's module docs state is what the rings can
//! hold at most; this is what a running process holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tower_health::check::{CheckError, CheckErrorKind};
use tower_health::component::{ComponentSpec, from_fn};
use tower_health::{HealthConfig, HealthHandle, HealthMonitor};

/// The live heap, in bytes: what the process allocated and has not freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a counter is added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CHECKS: usize = 20;
/// Past the ring's 3,600 rounds, so that every ring has wrapped.
const ROUNDS: usize = 4_000;
/// The fastest cadence the settings take.
const CADENCE: Duration = Duration::from_millis(1);

/// A monitor of `checks` components, each failing every other round with a message longer
/// than the history keeps of a cause, and how many rounds each has run.
fn monitor(checks: usize) -> (HealthHandle, Vec<Arc<AtomicUsize>>) {
    let message = "a dependency that flaps, with a message past the cause's bound: ".repeat(8);
    let mut config = HealthConfig::new().health_interval(CADENCE);
    let mut counts = Vec::new();
    for index in 0..checks {
        let count = Arc::new(AtomicUsize::new(0));
        counts.push(Arc::clone(&count));
        let message = message.clone();
        let component = from_fn(move || {
            let round = count.fetch_add(1, Ordering::Relaxed);
            let message = message.clone();
            async move {
                if round.is_multiple_of(2) {
                    Err(CheckError::new(CheckErrorKind::Refused, message))
                } else {
                    Ok(())
                }
            }
        });
        config = config.component(
            ComponentSpec::new(&format!("flapping-{index}"), component)
                .cadence(CADENCE)
                .failures_before_trouble(1)
                .successes_before_recovery(1),
        );
    }
    (
        HealthMonitor::spawn(config).expect("valid settings"),
        counts,
    )
}

/// Waits until every check has run at least `rounds` times.
async fn rounds_done(counts: &[Arc<AtomicUsize>], rounds: usize) {
    while counts
        .iter()
        .any(|count| count.load(Ordering::Relaxed) < rounds)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The live heap once the runtime has settled (tasks of the last round freed).
async fn settled() -> usize {
    tokio::time::sleep(Duration::from_millis(200)).await;
    LIVE.load(Ordering::Relaxed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let before = settled().await;
    let (empty, _) = monitor(0);
    let mut views = empty.watch();
    views
        .wait_for(|view| view.health.checked_at.is_some())
        .await
        .expect("the monitor runs");
    let no_checks = settled().await - before;

    let (health, counts) = monitor(CHECKS);
    rounds_done(&counts, 2).await;
    let first = settled().await - before;
    rounds_done(&counts, ROUNDS).await;
    let full = settled().await - before;
    drop(health);

    println!("| monitor | live heap (bytes) |");
    println!("|---|---|");
    println!("| no check | {no_checks} |");
    println!("| + {CHECKS} checks, after their first rounds | {first} |");
    println!("| + {CHECKS} checks, after {ROUNDS} rounds each (every ring wrapped) | {full} |");
    println!();
    println!(
        "{CHECKS} checks: {} bytes at the start ({} per check), {} bytes after an hour's worth of rounds ({} per check)",
        first - no_checks,
        (first - no_checks) / CHECKS,
        full - no_checks,
        (full - no_checks) / CHECKS,
    );
}
