//! Writing one family through a `prometheus-client` encoder: a descriptor, then its series.

use std::fmt;
use std::time::SystemTime;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// One family: its descriptor, then what `series` writes.
pub(super) fn family(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    metric_type: MetricType,
    series: impl FnOnce(&mut MetricEncoder<'_>) -> fmt::Result,
) -> fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, unit, metric_type)?;
    series(&mut metric)
}

/// A gauge family of 0/1 series.
pub(super) fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, bool)>,
) -> fmt::Result {
    family(encoder, name, help, None, MetricType::Gauge, |metric| {
        for (labels, value) in series {
            metric
                .encode_family(&labels)?
                .encode_gauge(&u32::from(value))?;
        }
        Ok(())
    })
}

/// A counter family.
pub(super) fn counters<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    family(encoder, name, help, None, MetricType::Counter, |metric| {
        for (labels, count) in series {
            metric
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
        }
        Ok(())
    })
}

/// `at` in seconds since the Unix epoch (negative before it).
pub(super) fn unix_seconds(at: SystemTime) -> f64 {
    match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => since.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}
