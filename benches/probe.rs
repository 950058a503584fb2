//! Criterion benchmarks of the probe path (written with the benchmarks issue).

fn main() {}
