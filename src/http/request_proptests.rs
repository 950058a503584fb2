//! Properties of probe-path matching and of the `nocache` query, over generated paths,
//! prefixes and queries.

use proptest::prelude::*;

use super::{Probe, ProbePaths, Target, wants_nocache};

/// A prefix `validate_prefix` accepts: `/` and one to three segments.
fn prefix() -> impl Strategy<Value = String> {
    "(/[a-z0-9_.-]{1,8}){1,3}"
}

fn probe() -> impl Strategy<Value = Probe> {
    proptest::sample::select(Probe::ALL.to_vec())
}

/// Paths near the probe paths and far from them: every printable byte, dot segments,
/// encoded slashes, doubled slashes, aliases.
fn path(prefix: String) -> impl Strategy<Value = String> {
    let near = (
        proptest::sample::select(vec![
            "", "/", "//", "/.", "/..", "/./", "/../", "%2F", "%2f", "/%2e%2e/", "\\", ";", "z",
        ]),
        probe(),
        proptest::sample::select(vec![
            "",
            "/",
            "//",
            "?",
            "#",
            "%00",
            ".",
            "/..",
            "x",
            "/ping",
            "/started",
            "/hold",
            "/hold/",
            "/monitor",
            "/database",
            "/database/",
            "/database/db",
            "/component/c/",
            "/component//",
            "//database/db",
            "/shutdown/x",
        ]),
    )
        .prop_map(move |(middle, probe, end)| {
            format!(
                "{prefix}{middle}{}{end}",
                probe.layer_suffix().trim_start_matches('/')
            )
        });
    let alias = (
        proptest::sample::select(vec!["/livez", "/readyz", "/healthz", "/live", "/ready"]),
        proptest::sample::select(vec![
            "",
            "/",
            "//",
            "z",
            "/x",
            "/ping",
            "/database/db",
            "/hold/",
        ]),
    )
        .prop_map(|(alias, end)| format!("{alias}{end}"));
    prop_oneof![near, alias, "/[ -~]{0,24}", "[ -~]{0,24}"]
}

/// Every path the layer answers for `probe` (or its `check`): `<prefix><suffix>[/<check>]`,
/// with a trailing slash too, and the Kubernetes alias when they are on.
fn answered(prefix: &str, aliases: bool, probe: Probe, check: Option<&str>) -> Vec<String> {
    let check = check.map(|check| format!("/{check}")).unwrap_or_default();
    let base = format!("{prefix}{}{check}", probe.layer_suffix());
    let mut paths = vec![format!("{base}/"), base];
    if aliases && let Some(alias) = probe.kubernetes_alias() {
        paths.push(format!("{alias}{check}"));
        paths.push(format!("{alias}{check}/"));
    }
    paths
}

proptest! {
    /// A path is a probe only if it is exactly one of that probe's paths: no dot segment,
    /// encoded slash, doubled slash, or extra byte makes one.
    #[test]
    fn a_probe_only_at_its_exact_paths(
        (prefix, path) in prefix().prop_flat_map(|prefix| (Just(prefix.clone()), path(prefix))),
        aliases in any::<bool>(),
    ) {
        let paths = ProbePaths::new(&prefix, aliases);
        if let Some(target) = paths.classify(&path) {
            prop_assert!(
                answered(&prefix, aliases, target.probe, target.check).contains(&path),
                "{path:?} is answered as {target:?} under {prefix:?}"
            );
            if let Some(check) = target.check {
                prop_assert!(target.probe.may_name_check(check), "{check:?}");
            }
        }
    }

    /// Every probe path is answered, with and without its trailing slash.
    #[test]
    fn every_probe_path_is_answered(prefix in prefix(), aliases in any::<bool>(), probe in probe(), slash in any::<bool>()) {
        let paths = ProbePaths::new(&prefix, aliases);
        let path = format!("{prefix}{}{}", probe.layer_suffix(), if slash { "/" } else { "" });
        prop_assert_eq!(paths.classify(&path), Some(Target::of(probe)), "{}", path);
    }

    /// With the aliases on, `/livez` and `/readyz` are answered whatever the prefix, unless
    /// the prefix's own paths claim that very path.
    #[test]
    fn aliases_are_answered_whatever_the_prefix(
        prefix in prop_oneof![prefix(), Just("/live".to_owned()), Just("/ready".to_owned()), Just("/l".to_owned()), Just("/readyz/x".to_owned())],
        probe in probe(),
        slash in any::<bool>(),
    ) {
        let Some(alias) = probe.kubernetes_alias() else {
            return Ok(());
        };
        let path = format!("{alias}{}", if slash { "/" } else { "" });
        let claimed = Probe::ALL
            .into_iter()
            .any(|other| answered(&prefix, false, other, None).contains(&path));
        prop_assume!(!claimed);
        let paths = ProbePaths::new(&prefix, true);
        prop_assert_eq!(paths.classify(&path), Some(Target::of(probe)), "{} under {}", path, prefix);
    }

    /// `nocache` is asked for when any `&`-separated pair asks for it: duplicates and order
    /// do not matter, and no other pair does.
    #[test]
    fn nocache_is_any_pair(pairs in proptest::collection::vec("[a-z0-9=%+.;]{0,12}", 0..6)) {
        let query = pairs.join("&");
        let any_pair = query.split('&').any(|pair| wants_nocache(Some(pair)));
        prop_assert_eq!(wants_nocache(Some(&query)), any_pair, "{}", query);
        let mut reversed: Vec<&str> = query.split('&').collect();
        reversed.reverse();
        prop_assert_eq!(wants_nocache(Some(&reversed.join("&"))), any_pair);
    }

    /// One pair asks for a bypass only as `nocache`, `nocache=1` or `nocache=true` (any
    /// case); every other value, an encoded key or a longer key does not.
    #[test]
    fn nocache_values(key in prop_oneof![Just("nocache".to_owned()), "[a-z%0-9]{0,10}"], value in proptest::option::of("[ -%'-~]{0,8}")) {
        let pair = match &value {
            Some(value) => format!("{key}={value}"),
            None => key.clone(),
        };
        let expected = key == "nocache"
            && value.as_deref().is_none_or(|value| value.eq_ignore_ascii_case("true") || value == "1");
        prop_assert_eq!(wants_nocache(Some(&pair)), expected, "{}", pair);
        // A bypass asked for anywhere in a long query still counts; not asked, it never does.
        let long = format!("{}&{pair}&{}", "a=b&".repeat(500), "c=d&".repeat(500));
        prop_assert_eq!(wants_nocache(Some(&long)), expected);
    }
}

#[test]
fn regression_an_alias_beside_a_prefix_that_starts_it() {
    // Found by `aliases_are_answered_whatever_the_prefix`: with the prefix `/live`, the path
    // `/livez` started with the prefix, matched none of its probes, and was never tried as
    // an alias.
    let paths = ProbePaths::new("/live", true);
    assert_eq!(paths.classify("/livez"), Some(Target::of(Probe::Live)));
    assert_eq!(paths.classify("/live"), Some(Target::of(Probe::Health)));
    let paths = ProbePaths::new("/ready", true);
    assert_eq!(paths.classify("/readyz/"), Some(Target::of(Probe::Ready)));
    assert_eq!(
        paths.classify("/ready/ready"),
        Some(Target::of(Probe::Ready))
    );
}
