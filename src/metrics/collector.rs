//! The two ways the families reach a `prometheus-client` encoder: a snapshot read once (the
//! cached exposition), and the view read at each of the application's scrapes.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::prometheus;
use super::snapshot::Snapshot;
use crate::monitor::HealthHandle;

/// Writes the families of a snapshot read before: what [`HealthMetrics`] renders once per
/// change of the view.
///
/// [`HealthMetrics`]: super::HealthMetrics
#[derive(Debug)]
pub(super) struct SnapshotCollector(pub(super) Arc<Snapshot>);

impl Collector for SnapshotCollector {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let Self(snapshot) = self;
        prometheus::encode(snapshot, encoder)
    }
}

/// Reads the view at each scrape of the registry it is registered with: what
/// [`HealthMetrics::register`](super::HealthMetrics::register) adds. Reading never runs a
/// check.
#[derive(Debug)]
pub(super) struct LiveCollector(pub(super) HealthHandle);

impl Collector for LiveCollector {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let Self(handle) = self;
        let snapshot = Snapshot::read(handle);
        prometheus::encode(&snapshot, encoder)
    }
}
