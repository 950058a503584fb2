//! What the README tells an application to write, held to the crate: its samples install a
//! `tracing` subscriber (else every warning the crate logs is lost), and its `Cargo.toml`
//! lines name features that exist, the ones its production sample uses, and the dependency
//! features the crate's checks are built on. The samples themselves compile as doctests
//! (`ReadmeDoctests` in `src/lib.rs`).

const README: &str = include_str!("../../README.md");
const MANIFEST: &str = include_str!("../../Cargo.toml");

/// The README is the front page, not the reference (that is rustdoc and the guide).
#[test]
fn the_readme_stays_under_200_lines() {
    let lines = README.lines().count();
    assert!(lines < 200, "README.md has {lines} lines");
}

/// Every Rust sample installs a subscriber with an environment filter, and the README says
/// which crate and feature that takes.
#[test]
fn every_rust_sample_installs_a_subscriber() {
    let samples = blocks(README, "```rust");
    assert!(samples.len() >= 2, "the Use and production samples");
    for sample in &samples {
        assert!(
            sample.contains("tracing_subscriber::fmt()")
                && sample.contains(".with_env_filter(")
                && sample.contains(".init();"),
            "a README sample installs no tracing subscriber:\n{sample}"
        );
    }
    let subscriber = dependency(cargo_toml_block(), "tracing-subscriber");
    assert!(
        list(subscriber, "features").contains(&"env-filter"),
        "{subscriber}"
    );
    let use_section = &README[README.find("## Use").unwrap()..];
    let use_prose = &use_section[..use_section.find("```").unwrap()];
    assert!(
        use_prose.contains("`tracing-subscriber`") && use_prose.contains("`env-filter`"),
        "the Use section names the crate and feature a subscriber takes:\n{use_prose}"
    );
}

/// Each `tower-health = { .. }` the README shows names only features of `[features]`; the
/// production one leaves out the default `postgres` (bb8 and tokio-postgres, unused beside
/// sqlx) and names every feature its sample's code needs.
#[test]
fn the_readme_s_tower_health_lines_name_real_features() {
    let features = manifest_features();
    let lines: Vec<&str> = README
        .match_indices("tower-health = {")
        .map(|(at, _)| &README[at..at + README[at..].find('}').unwrap() + 1])
        .collect();
    assert!(lines.len() >= 2, "the Use line and the production block");
    for line in &lines {
        assert_eq!(string(line, "version"), package_minor(), "{line}");
        for feature in list(line, "features") {
            assert!(
                features.contains(&feature),
                "{line}: no feature `{feature}` in Cargo.toml ({features:?})"
            );
        }
    }

    let block = cargo_toml_block();
    let production = dependency(block, "tower-health");
    assert!(
        production.contains("default-features = false"),
        "{production}"
    );
    let named = list(production, "features");
    let sample = blocks(README, "```rust")
        .into_iter()
        .find(|sample| sample.contains("SqlxCheck"))
        .expect("the production sample");
    for (code, feature) in [
        ("tower_health::postgres::sqlx_0_9", "sqlx-0-9"),
        ("tower_health::admin", "admin"),
        ("tower_health::haproxy", "haproxy-agent"),
        ("redis::Redis", "redis"),
        (".around(", "axum"),
        ("/metrics", "metrics"),
    ] {
        assert!(
            sample.contains(code),
            "the production sample no longer uses {code}"
        );
        assert!(
            named.contains(&feature),
            "the sample uses {code}: `{feature}` belongs in {production}"
        );
    }
}

/// The application's own `redis` and `sqlx` lines: the same major version as the crate's
/// (else two crates to the compiler, and the check does not take the application's
/// connection or pool), with the features the crate's checks are built on.
#[test]
fn the_readme_s_redis_and_sqlx_lines_match_the_crate_s() {
    let block = cargo_toml_block();
    for (name, ours) in [("redis", "redis"), ("sqlx", "sqlx_0_9")] {
        let readme = dependency(block, name);
        let crate_s = manifest_dependency(ours);
        let version = string(readme, "version");
        assert!(
            string(crate_s, "version") == version
                || string(crate_s, "version").starts_with(&format!("{version}.")),
            "README {readme} against Cargo.toml {crate_s}"
        );
        let features = list(readme, "features");
        for feature in list(crate_s, "features") {
            assert!(
                features.contains(&feature),
                "README {readme}: `{feature}` is missing (Cargo.toml: {crate_s})"
            );
        }
    }
}

/// The production sample is `examples/production.rs` byte for byte (after the example's
/// header), so that what `tests/it/production.rs` runs is what the README prints.
#[test]
fn the_production_example_is_the_readme_s_code() {
    let example = include_str!("../../examples/production.rs");
    // After the example's header: its docs, the comment and the attribute that keep rustfmt
    // out (the README's layout is not rustfmt's), and a blank line.
    let code = example
        .split_inclusive('\n')
        .skip_while(|line| line.starts_with("//") || line.starts_with("#!["))
        .skip(1)
        .collect::<String>();
    let sample = blocks(README, "```rust")
        .into_iter()
        .find(|sample| sample.contains("SqlxCheck"))
        .expect("the production sample");
    assert_eq!(code, format!("{sample}\n"));
}

/// The bodies of the fenced blocks whose opening line starts with `fence` (`"```rust"` for
/// `rust,no_run` too).
fn blocks<'a>(text: &'a str, fence: &str) -> Vec<&'a str> {
    text.match_indices(&format!("\n{fence}"))
        .map(|(at, _)| {
            let body = &text[at + 1..];
            let body = &body[body.find('\n').expect("the fence's line ends") + 1..];
            &body[..body.find("\n```").expect("the block ends")]
        })
        .collect()
}

/// The README's one `toml` block: the production `Cargo.toml` lines.
fn cargo_toml_block() -> &'static str {
    let blocks = blocks(README, "```toml");
    assert_eq!(blocks.len(), 1, "one Cargo.toml block in the README");
    blocks[0]
}

/// The line of `toml` that declares `name`.
fn dependency<'a>(toml: &'a str, name: &str) -> &'a str {
    toml.lines()
        .find(|line| line.starts_with(&format!("{name} = ")))
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{toml}"))
}

/// Cargo.toml's `[dependencies]` line of `name`.
fn manifest_dependency(name: &str) -> &'static str {
    dependency(section(MANIFEST, "[dependencies]"), name)
}

/// The names of Cargo.toml's `[features]`.
fn manifest_features() -> Vec<&'static str> {
    section(MANIFEST, "[features]")
        .lines()
        .filter_map(|line| line.split_once(" = [").map(|(name, _)| name))
        .collect()
}

/// `0.2` for version `0.2.0`.
fn package_minor() -> &'static str {
    let version = string(section(MANIFEST, "[package]"), "version");
    &version[..version.rfind('.').unwrap()]
}

/// The lines of `toml`'s `header` section.
fn section<'a>(toml: &'a str, header: &str) -> &'a str {
    let open = format!("{header}\n");
    let at = if toml.starts_with(&open) {
        0
    } else {
        toml.find(&format!("\n{open}")).expect("the section") + 1
    };
    let rest = &toml[at + open.len()..];
    &rest[..rest.find("\n[").unwrap_or(rest.len())]
}

/// The string value of `key` (`key = "value"`, not `other-key = ..`) in `text`.
fn string<'a>(text: &'a str, key: &str) -> &'a str {
    let (at, _) = text
        .match_indices(&format!("{key} = \""))
        .find(|&(at, _)| at == 0 || matches!(text.as_bytes()[at - 1], b'\n' | b' ' | b'{'))
        .unwrap_or_else(|| panic!("no {key} in {text}"));
    let start = at + key.len() + 4;
    &text[start..start + text[start..].find('"').unwrap()]
}

/// The strings of the list `key` (`key = ["a", "b"]`) in `text`; empty without one.
fn list<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    let Some(at) = text.find(&format!("{key} = [")) else {
        return Vec::new();
    };
    let start = at + key.len() + 4;
    text[start..start + text[start..].find(']').unwrap()]
        .split(',')
        .map(|item| item.trim().trim_matches('"'))
        .filter(|item| !item.is_empty())
        .collect()
}
