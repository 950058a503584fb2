//! ORCA's dialect (Open Request Cost Aggregation): the load report an application's response
//! carries for the balancers that weigh endpoints by it (Envoy, gRPC's
//! `weighted_round_robin`), a pure function of the load estimate.
//!
//! One header, in its `TEXT` form, which Envoy parses as `TEXT ` followed by comma-separated
//! `key=value` pairs: `endpoint-load-metrics: TEXT application_utilization=0.42`. One key:
//! the estimate ([`crate::load`]), in hundredths (the resolution of HAProxy's weight too).
//! No `cpu_utilization` (the process does not read its CPU time: that would be a system
//! call per sample for a figure the lag already stands for), no `rps_fractional` (a rate
//! would need one more counter that every request writes), no named metrics.

use std::sync::LazyLock;

use http::HeaderValue;
use http::header::HeaderName;

use crate::load::Utilization;

/// `endpoint-load-metrics`, the header Envoy reads a per-call ORCA report from.
const HEADER: HeaderName = HeaderName::from_static("endpoint-load-metrics");

/// What precedes the figure.
const PREFIX: &[u8] = b"TEXT application_utilization=";

/// The length of a report: the prefix and a figure of four characters (`0.00` to `1.00`).
const LEN: usize = PREFIX.len() + 4;

/// The report for every hundredth from 0 to 1, rendered at compile time: a response's
/// report is a value chosen, never written.
static TEXTS: [[u8; LEN]; 101] = {
    let mut texts = [[0; LEN]; 101];
    let mut hundredths = 0;
    while hundredths <= 100 {
        texts[hundredths] = text(hundredths as u8);
        hundredths += 1;
    }
    texts
};

/// `TEXT application_utilization=<hundredths / 100>`, with two decimals.
const fn text(hundredths: u8) -> [u8; LEN] {
    let mut text = [0; LEN];
    let mut at = 0;
    while at < PREFIX.len() {
        text[at] = PREFIX[at];
        at += 1;
    }
    text[at] = b'0' + hundredths / 100;
    text[at + 1] = b'.';
    text[at + 2] = b'0' + hundredths % 100 / 10;
    text[at + 3] = b'0' + hundredths % 10;
    text
}

/// The reports as header values, made once from [`TEXTS`] (static bytes: a clone copies no
/// byte and counts no reference).
static VALUES: LazyLock<[HeaderValue; 101]> = LazyLock::new(|| {
    std::array::from_fn(|hundredths| {
        let text = std::str::from_utf8(&TEXTS[hundredths]).expect("a report is ASCII");
        HeaderValue::from_static(text)
    })
});

/// The header an application's response carries for a process whose load estimate is
/// `load`: one ORCA report in `TEXT` form, the estimate rounded to the nearest hundredth.
pub(crate) fn on_application_response(load: Utilization) -> (HeaderName, HeaderValue) {
    // In [0, 100]: a utilization is in [0, 1], never NaN.
    let hundredths = (load.get() * 100.0).round() as usize;
    (HEADER, VALUES[hundredths.min(100)].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(fraction: f64) -> String {
        let (name, value) = on_application_response(Utilization::new(fraction));
        assert_eq!(name, "endpoint-load-metrics");
        value.to_str().unwrap().to_owned()
    }

    #[test]
    fn one_text_report_of_the_application_utilization() {
        // (the estimate): the report.
        for (fraction, expected) in [
            (0.0, "TEXT application_utilization=0.00"),
            (0.004, "TEXT application_utilization=0.00"),
            (0.006, "TEXT application_utilization=0.01"),
            (0.07, "TEXT application_utilization=0.07"),
            (0.3, "TEXT application_utilization=0.30"),
            (0.426, "TEXT application_utilization=0.43"),
            (0.999, "TEXT application_utilization=1.00"),
            (1.0, "TEXT application_utilization=1.00"),
            // Whatever a computation gave, the report is a number from 0 to 1.
            (f64::NAN, "TEXT application_utilization=0.00"),
            (f64::INFINITY, "TEXT application_utilization=1.00"),
            (-3.0, "TEXT application_utilization=0.00"),
        ] {
            assert_eq!(report(fraction), expected, "{fraction}");
        }
    }

    #[test]
    fn every_report_parses_as_envoy_reads_it() {
        for (hundredths, text) in TEXTS.iter().enumerate() {
            let text = std::str::from_utf8(text).unwrap();
            // `TEXT `, then comma-separated `key=value` pairs: here exactly one.
            let pairs = text.strip_prefix("TEXT ").unwrap();
            let pairs: Vec<(&str, &str)> = pairs
                .split(',')
                .map(|pair| pair.trim().split_once('=').unwrap())
                .collect();
            assert_eq!(pairs.len(), 1, "{text}");
            let (key, value) = pairs[0];
            assert_eq!(key, "application_utilization");
            let value: f64 = value.parse().unwrap();
            assert!(value.is_finite() && (0.0..=1.0).contains(&value), "{text}");
            assert!((value * 100.0 - hundredths as f64).abs() < 1e-9, "{text}");
        }
    }
}
