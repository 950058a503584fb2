//! ORCA's dialect (Open Request Cost Aggregation): the load report an application's response
//! carries for the balancers that weigh endpoints by it (Envoy, gRPC's
//! `weighted_round_robin`), a pure function of the load estimate and the request rates.
//!
//! Three figures, each once: the estimate ([`crate::load`]) as `application_utilization`,
//! and the server-wide requests and errors per second as `rps_fractional` and `eps`, which a
//! weighted round robin needs beside the utilization (without `rps_fractional`, Envoy's and
//! gRPC's compute no weight at all). No `cpu_utilization` (the process does not read its CPU
//! time: that would be a system call per sample for a figure the lag already stands for), no
//! named metrics. Two forms, one per response:
//!
//! - an HTTP response's head carries `endpoint-load-metrics` in its `TEXT` form, which Envoy
//!   parses as `TEXT ` followed by `key=value` pairs separated by `, `:
//!   `endpoint-load-metrics: TEXT application_utilization=0.42, rps_fractional=120.50, eps=0.30`,
//!   each figure in hundredths (the resolution of HAProxy's weight too);
//! - a gRPC response carries `endpoint-load-metrics-bin` in its trailers,
//!   where gRPC's clients read it: an `OrcaLoadReport` message, serialized and base64-encoded
//!   as every `-bin` metadata is, with the figures as they are. A trailers-only response (a
//!   call that failed before any message) carries it in its one header block.
//!
//! The same message is what `grpc::OrcaService`'s out-of-band stream (feature `grpc`)
//! sends. The monitor's sampler renders both per-call forms once per sample; a response
//! clones one.

use std::fmt::Write as _;

use http::header::{HeaderMap, HeaderName};
use http::{HeaderValue, header};

use crate::load::{MAX_RATE, Rates, Reports, Utilization};

/// `endpoint-load-metrics`, the header Envoy reads a per-call ORCA report from.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("endpoint-load-metrics");

/// `endpoint-load-metrics-bin`, the trailer gRPC's clients read a per-call ORCA report from.
pub(crate) const BINARY_HEADER: HeaderName = HeaderName::from_static("endpoint-load-metrics-bin");

/// `grpc-status`, in a gRPC response's trailers (or its only header block).
pub(crate) const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");

/// The longest text report: every figure at its bound, two decimals each.
const MAX_LEN: usize =
    "TEXT application_utilization=1.00, rps_fractional=, eps=".len() + 2 * ("100000000.00".len());

/// The figures of a report: finite, never negative (`-0` read as `0`), the utilization at
/// most 1 and a rate at most [`MAX_RATE`]. The clamps repeat what the types promise, so
/// that every form's bounds hold here, where it is written.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Figures {
    pub(crate) utilization: f64,
    pub(crate) requests: f64,
    pub(crate) errors: f64,
}

impl Figures {
    pub(crate) fn of(utilization: Utilization, rates: Rates) -> Self {
        let bounded = |value: f64, max: f64| {
            if value.is_nan() {
                0.0
            } else {
                value.clamp(0.0, max) + 0.0
            }
        };
        Self {
            utilization: bounded(utilization.get(), 1.0),
            requests: bounded(rates.requests, MAX_RATE),
            errors: bounded(rates.errors, MAX_RATE),
        }
    }
}

/// The per-call reports of `utilization` and `rates`, in both forms.
pub(crate) fn reports(utilization: Utilization, rates: Rates) -> Reports {
    let figures = Figures::of(utilization, rates);
    Reports {
        text: text(figures),
        binary: binary(figures),
    }
}

/// The `TEXT` form: each figure rounded to the nearest hundredth.
fn text(figures: Figures) -> HeaderValue {
    let mut text = String::with_capacity(MAX_LEN);
    // Writing to a `String` cannot fail.
    let _ = write!(
        text,
        "TEXT application_utilization={:.2}, rps_fractional={:.2}, eps={:.2}",
        figures.utilization, figures.requests, figures.errors,
    );
    debug_assert!(text.len() <= MAX_LEN, "{text}");
    HeaderValue::from_str(&text).expect("a report is ASCII digits, letters, `.`, `=`, `, `")
}

/// The binary form: an `OrcaLoadReport` message, serialized, in base64 (padded: gRPC's
/// decoders take either).
fn binary(figures: Figures) -> HeaderValue {
    use base64::Engine as _;

    let encoded = base64::engine::general_purpose::STANDARD.encode(message(figures));
    HeaderValue::from_str(&encoded).expect("base64 is ASCII")
}

// The `OrcaLoadReport` fields the report fills, by number (`proto/xds/service/orca/v3/orca.proto`).
const RPS_FRACTIONAL: u8 = 6;
const EPS: u8 = 7;
const APPLICATION_UTILIZATION: u8 = 9;

/// The `OrcaLoadReport` message of `figures`, as protobuf writes it: each figure a 64-bit
/// field (its tag, the field number and wire type 1, in one byte below field 16, then the
/// double's little-endian bits), in field order, a zero left out as proto3 leaves a default
/// out. Written here rather than through the generated message, so that the dialect needs no
/// `grpc` feature: `grpc::orca`'s tests hold it to prost's encoding byte for byte.
pub(crate) fn message(figures: Figures) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(3 * 9);
    for (field, value) in [
        (RPS_FRACTIONAL, figures.requests),
        (EPS, figures.errors),
        (APPLICATION_UTILIZATION, figures.utilization),
    ] {
        if value != 0.0 {
            bytes.push(field << 3 | 1);
            bytes.extend_from_slice(&value.to_le_bytes());
        }
    }
    bytes
}

/// Whether a response with these headers is a gRPC call's (`content-type: application/grpc`,
/// `application/grpc+proto`, ...): gRPC reads its report from the trailers.
#[inline]
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"))
}

/// Whether a gRPC call's `grpc-status` counts as an error in `eps`: the codes that gRPC's
/// own mapping to HTTP (Envoy's, grpc-gateway's) answers with a 5xx, as an HTTP response's
/// error is a 5xx. `UNKNOWN` (2), `DEADLINE_EXCEEDED` (4), `UNIMPLEMENTED` (12), `INTERNAL`
/// (13), `UNAVAILABLE` (14), `DATA_LOSS` (15); a status that is not a number is the server's
/// error too. `OK` and the client's errors (a bad argument, not found, ...) are not.
pub(crate) fn is_server_error(grpc_status: &HeaderValue) -> bool {
    !matches!(
        grpc_status.as_bytes(),
        b"0" | b"1" | b"3" | b"5" | b"6" | b"7" | b"8" | b"9" | b"10" | b"11" | b"16"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(utilization: f64, requests: f64, errors: f64) -> String {
        reports(Utilization::new(utilization), Rates { requests, errors })
            .text
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
    fn a_grpc_status_is_an_error_when_gateways_answer_it_with_a_5xx() {
        let errors: Vec<u8> = (0..=16)
            .filter(|code| is_server_error(&HeaderValue::from(u16::from(*code))))
            .collect();
        // UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
        assert_eq!(errors, [2, 4, 12, 13, 14, 15]);
        assert!(is_server_error(&HeaderValue::from_static("oops")));
        assert!(is_server_error(&HeaderValue::from_static("99")));
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
