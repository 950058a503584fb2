//! ORCA's dialect (Open Request Cost Aggregation): the load report an application's response
//! carries for the balancers that weigh endpoints by it (Envoy, gRPC's
//! `weighted_round_robin`), a pure function of the load estimate and the request rates.
//!
//! One header, in its `TEXT` form, which Envoy parses as `TEXT ` followed by `key=value`
//! pairs separated by `, `:
//! `endpoint-load-metrics: TEXT application_utilization=0.42, rps_fractional=120.50, eps=0.30`.
//! Three keys, each once: the estimate ([`crate::load`]) in hundredths (the resolution of
//! HAProxy's weight too), and the server-wide requests and errors per second, in hundredths,
//! which a weighted round robin needs beside the utilization (without `rps_fractional`,
//! Envoy's and gRPC's compute no weight at all). No `cpu_utilization` (the process does not
//! read its CPU time: that would be a system call per sample for a figure the lag already
//! stands for), no named metrics.
//!
//! The monitor's sampler renders the report once per sample; a response clones it.

use std::fmt::Write as _;

use http::HeaderValue;
use http::header::HeaderName;

use crate::load::{MAX_RATE, Rates, Utilization};

/// `endpoint-load-metrics`, the header Envoy reads a per-call ORCA report from.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("endpoint-load-metrics");

/// The longest report: every figure at its bound, two decimals each.
const MAX_LEN: usize =
    "TEXT application_utilization=1.00, rps_fractional=, eps=".len() + 2 * ("100000000.00".len());

/// The report for `utilization` and `rates`: each figure rounded to the nearest hundredth,
/// finite, never negative, at most [`MAX_RATE`](crate::load::MAX_RATE) for a rate.
pub(crate) fn report(utilization: Utilization, rates: Rates) -> HeaderValue {
    // `+ 0.0`: a `-0` never shows as `-0.00`. The clamps repeat what the types promise, so
    // that the report's bounds hold here, where its length is counted.
    let bounded = |value: f64, max: f64| {
        if value.is_nan() {
            0.0
        } else {
            value.clamp(0.0, max) + 0.0
        }
    };
    let mut text = String::with_capacity(MAX_LEN);
    // Writing to a `String` cannot fail.
    let _ = write!(
        text,
        "TEXT application_utilization={:.2}, rps_fractional={:.2}, eps={:.2}",
        bounded(utilization.get(), 1.0),
        bounded(rates.requests, MAX_RATE),
        bounded(rates.errors, MAX_RATE),
    );
    debug_assert!(text.len() <= MAX_LEN, "{text}");
    HeaderValue::from_str(&text).expect("a report is ASCII digits, letters, `.`, `=`, `, `")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(utilization: f64, requests: f64, errors: f64) -> String {
        report(Utilization::new(utilization), Rates { requests, errors })
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// The pairs as Envoy reads them: `TEXT `, then `key=value` pairs separated by `, `,
    /// each value a finite number.
    fn parse(text: &str) -> Vec<(&str, f64)> {
        text.strip_prefix("TEXT ")
            .unwrap()
            .split(", ")
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap();
                let value: f64 = value.parse().unwrap();
                assert!(value.is_finite(), "{text}");
                (key, value)
            })
            .collect()
    }

    #[test]
    fn one_text_report_of_the_utilization_and_the_rates() {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        // (utilization, requests/s, errors/s): the report.
        for (utilization, requests, errors, expected) in [
            (0.0, 0.0, 0.0, "0.00, rps_fractional=0.00, eps=0.00"),
            (0.004, 0.004, 0.0, "0.00, rps_fractional=0.00, eps=0.00"),
            (0.006, 0.006, 0.006, "0.01, rps_fractional=0.01, eps=0.01"),
            (0.42, 120.5, 0.3, "0.42, rps_fractional=120.50, eps=0.30"),
            (
                0.426,
                1234.567,
                12.345,
                "0.43, rps_fractional=1234.57, eps=12.35",
            ),
            (
                1.0,
                1e6,
                1e6,
                "1.00, rps_fractional=1000000.00, eps=1000000.00",
            ),
            // Whatever a computation gave, every figure is a bounded, non-negative number.
            (nan, nan, nan, "0.00, rps_fractional=0.00, eps=0.00"),
            (
                inf,
                inf,
                inf,
                "1.00, rps_fractional=100000000.00, eps=100000000.00",
            ),
            (-3.0, -0.0, -1.0, "0.00, rps_fractional=0.00, eps=0.00"),
        ] {
            let expected = format!("TEXT application_utilization={expected}");
            assert_eq!(
                text(utilization, requests, errors),
                expected,
                "{utilization} {requests} {errors}"
            );
        }
    }

    #[test]
    fn every_report_parses_as_envoy_reads_it() {
        for (utilization, requests, errors) in [
            (0.0, 0.0, 0.0),
            (0.5, 0.05, 0.0),
            (0.999, 7.77, 7.77),
            (1.0, MAX_RATE, MAX_RATE),
            (f64::NAN, f64::INFINITY, f64::NEG_INFINITY),
        ] {
            let text = text(utilization, requests, errors);
            assert!(text.len() <= MAX_LEN, "{text}");
            let pairs = parse(&text);
            let keys: Vec<&str> = pairs.iter().map(|(key, _)| *key).collect();
            assert_eq!(
                keys,
                ["application_utilization", "rps_fractional", "eps"],
                "each key once: {text}"
            );
            assert!((0.0..=1.0).contains(&pairs[0].1), "{text}");
            for (_, rate) in &pairs[1..] {
                assert!((0.0..=MAX_RATE).contains(rate), "{text}");
            }
            if utilization.is_finite() {
                assert!((pairs[0].1 - utilization).abs() <= 0.005 + 1e-9, "{text}");
                assert!((pairs[1].1 - requests).abs() <= 0.005 + 1e-9, "{text}");
            }
        }
    }
}
