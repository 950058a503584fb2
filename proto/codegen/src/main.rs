//! Regenerates the Rust code checked in for this repository's .proto files, without `protoc`:
//! `protox` compiles the protos in pure Rust, and `tonic-prost-build` turns the descriptors
//! into prost messages and tonic services.
//!
//! ```not_rust
//! cargo run --manifest-path proto/codegen/Cargo.toml            # rewrite the generated files
//! cargo run --manifest-path proto/codegen/Cargo.toml -- --check # fail if they are out of date
//! ```
//!
//! | proto | generated | for |
//! |---|---|---|
//! | `proto/grpc/health/v1/health.proto` | `src/grpc/generated/grpc_health_v1.rs` | the `grpc` feature: `tower_health::grpc::pb` |
//! | `proto/xds/service/orca/v3/orca.proto` | `src/grpc/generated/xds_service_orca_v3.rs` | the `grpc` feature: ORCA load reports, `tower_health::grpc::pb::orca` |
//! | `proto/greeter/v1/greeter.proto` | `examples/greeter/generated.rs` | `examples/tonic.rs`, the application's own service |
//!
//! The code has no `connect` (no `build_transport`): the crate's `grpc` feature leaves
//! tonic's transport out, and a client is built on a channel of the caller's choosing.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// (proto file under `proto/`, the module prost writes, where the repository keeps it).
const TARGETS: [(&str, &str, &str); 3] = [
    (
        "grpc/health/v1/health.proto",
        "grpc.health.v1.rs",
        "src/grpc/generated/grpc_health_v1.rs",
    ),
    (
        "xds/service/orca/v3/orca.proto",
        "xds.service.orca.v3.rs",
        "src/grpc/generated/xds_service_orca_v3.rs",
    ),
    (
        "greeter/v1/greeter.proto",
        "greeter.v1.rs",
        "examples/greeter/generated.rs",
    ),
];

fn main() -> ExitCode {
    let check = std::env::args().any(|arg| arg == "--check");
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Generates every target; writes them, or (`check`) compares them with the checked-in
/// files. Returns whether everything is up to date.
fn run(check: bool) -> Result<bool, Box<dyn Error>> {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize()?;
    let protos = repository.join("proto");
    let scratch = std::env::temp_dir().join(format!("tower-health-codegen-{}", std::process::id()));
    fs::create_dir_all(&scratch)?;
    let mut up_to_date = true;
    for (proto, module, kept) in TARGETS {
        let descriptors = protox::compile([proto], [&protos])?;
        tonic_prost_build::configure()
            .build_transport(false)
            .out_dir(&scratch)
            .compile_fds(descriptors)?;
        let generated = fs::read_to_string(scratch.join(module))?;
        let kept: PathBuf = repository.join(kept);
        if check {
            let current = fs::read_to_string(&kept).unwrap_or_default();
            if current != generated {
                eprintln!("{} is out of date: regenerate it", kept.display());
                up_to_date = false;
            }
        } else {
            fs::create_dir_all(kept.parent().expect("a file in a folder"))?;
            fs::write(&kept, generated)?;
            println!("wrote {}", kept.display());
        }
    }
    fs::remove_dir_all(&scratch)?;
    Ok(up_to_date)
}
