//! What the monitor itself costs: instructions per round, counted by callgrind, for a monitor
//! of 1 database and of 20, as the README wires it (`HealthMonitor::spawn`, then
//! `HealthLayer::new(&health)`, which renders every verdict's answers as it is published).
//!
//! ```sh
//! cargo bench --bench rounds
//! ```
//!
//! Each figure is the difference between a run of `MANY` readiness rounds and a run of `FEW`,
//! divided by the difference, so that start-up and shut-down cancel out: instructions, not
//! seconds, repeatable whatever else the machine is doing. A run is this binary in a child
//! process of its own (`--child <databases> <rounds>`) under `valgrind --tool=callgrind`: a
//! monitor of `databases` in-process databases that pass at once (no I/O: what is counted is
//! the monitor's own work, the checks' aside), readiness rounds every 2 ms and health rounds
//! every 20 ms (the defaults' ratio, 1 s and 10 s), until `rounds` readiness rounds are done.
//! A readiness round's figure thus carries a tenth of a health round. It needs `valgrind`
//! (Debian's package).

use std::error::Error;
use std::process::{Command, Stdio};
use std::time::Duration;

use tower_health::check::{CheckFuture, CheckReport, DatabaseCheck};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor};

/// A database that passes at once.
#[derive(Debug)]
struct Passes;

impl DatabaseCheck for Passes {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        Box::pin(async { Ok(CheckReport::default()) })
    }
}

const FEW: u64 = 100;
const MANY: u64 = 600;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--child") {
        let databases = args[index + 1].parse()?;
        let rounds = args[index + 2].parse()?;
        child(databases, rounds);
        return Ok(());
    }
    println!("## Monitor instructions per readiness round (callgrind)\n");
    println!("| databases | instructions per round |");
    println!("|---|---|");
    for databases in [1, 20] {
        let few = instructions(databases, FEW)?;
        let many = instructions(databases, MANY)?;
        let per_round = (many as f64 - few as f64) / (MANY - FEW) as f64;
        println!("| {databases} | {per_round:.0} |");
    }
    Ok(())
}

/// Total instructions of a child that runs `rounds` readiness rounds over `databases`.
fn instructions(databases: usize, rounds: u64) -> Result<u64, Box<dyn Error>> {
    let output = std::env::temp_dir().join(format!(
        "tower-health-rounds-{}.callgrind",
        std::process::id()
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", output.display()))
        .arg(std::env::current_exe()?)
        .args(["--child", &databases.to_string(), &rounds.to_string()])
        // As the storm bench: which chunks glibc's per-thread cache happens to hold does not
        // count.
        .env("GLIBC_TUNABLES", "glibc.malloc.tcache_count=4096")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("the child under callgrind failed: {status}").into());
    }
    let report = std::fs::read_to_string(&output)?;
    std::fs::remove_file(&output)?;
    report
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|total| total.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "no instruction total in the callgrind output".into())
}

/// Runs the monitor until `rounds` readiness rounds are done.
fn child(databases: usize, rounds: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut config = HealthConfig::new()
            .readiness_interval(Duration::from_millis(2))
            .health_interval(Duration::from_millis(20))
            // Under valgrind a round is many times slower: a deadline it cannot miss.
            .readiness_timeout(Duration::from_secs(30));
        for index in 0..databases {
            let name = if index == 0 {
                "default".to_owned()
            } else {
                format!("db{index}")
            };
            config = config.database(&name, Passes);
        }
        let health = HealthMonitor::spawn(config).expect("a valid configuration");
        let _layer = HealthLayer::new(&health);
        // Looked at rarely: the waiting costs next to nothing per round.
        while health.stats().readiness_rounds < rounds {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}
