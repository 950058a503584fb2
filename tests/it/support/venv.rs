//! The Python of the tests' own virtual environment, with PyPI's `grpcio`: for gRPC's
//! weighted round robin (`tests/python/wrr.py`), in the tests and in `benches/wrr.rs`.

use std::path::PathBuf;
use std::process::Command;

/// The grpcio the tests were written with, which `.ci/run` installs.
pub const GRPCIO: &str = "grpcio==1.85.4";

/// `TOWER_HEALTH_VENV`'s Python (default `~/.cache/tower-health/venv`), if it has grpcio;
/// else what to run to make it.
pub fn python_with_grpcio() -> Result<PathBuf, String> {
    let venv = std::env::var_os("TOWER_HEALTH_VENV").map_or_else(
        || {
            let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
            home.join(".cache/tower-health/venv")
        },
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let has_grpcio = Command::new(&python)
        .args(["-c", "import grpc"])
        .output()
        .is_ok_and(|output| output.status.success());
    if has_grpcio {
        Ok(python)
    } else {
        Err(format!(
            "no Python with grpcio at {}: python3 -m venv {1} && {1}/bin/pip install {GRPCIO}",
            python.display(),
            venv.display()
        ))
    }
}
