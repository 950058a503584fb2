//! The families through a `prometheus-client` encoder: each one's descriptor, then its series.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::families::{FAMILIES, Series};
use super::snapshot::Snapshot;

/// Writes every family of `snapshot` to `encoder`.
pub(super) fn encode(snapshot: &Snapshot, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
    for family in &FAMILIES {
        let (unit, metric_type) = match family.series {
            Series::Flags(_) => (None, MetricType::Gauge),
            Series::Seconds(_) => (Some(&Unit::Seconds), MetricType::Gauge),
            Series::Counts(_) => (None, MetricType::Counter),
            Series::Number(_) => (None, MetricType::Gauge),
        };
        let mut metric = encoder.encode_descriptor(family.name, family.help, unit, metric_type)?;
        // The series are read through a callback that returns nothing: the first error is
        // kept, and the series after it are not written. (An empty label set writes no
        // braces.)
        let mut written = Ok(());
        match family.series {
            Series::Flags(read) => read(snapshot, &mut |labels, on| {
                if written.is_ok() {
                    written = metric
                        .encode_family(&labels)
                        .and_then(|mut series| series.encode_gauge(&u32::from(on)));
                }
            }),
            Series::Seconds(read) => read(snapshot, &mut |labels, seconds| {
                if written.is_ok() {
                    written = metric
                        .encode_family(&labels)
                        .and_then(|mut series| series.encode_gauge(&seconds));
                }
            }),
            Series::Counts(read) => read(snapshot, &mut |labels, count| {
                if written.is_ok() {
                    written = metric.encode_family(&labels).and_then(|mut series| {
                        series.encode_counter::<NoLabelSet, _, u64>(&count, None)
                    });
                }
            }),
            Series::Number(read) => read(snapshot, &mut |labels, number| {
                if written.is_ok() {
                    written = metric
                        .encode_family(&labels)
                        .and_then(|mut series| series.encode_gauge(&number));
                }
            }),
        }
        written?;
    }
    Ok(())
}
