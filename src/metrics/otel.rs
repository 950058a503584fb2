//! [`OpenTelemetry`]: the families as observable instruments on the application's `Meter`,
//! whose callbacks read the snapshot current at each collection.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter};

use super::families::{FAMILIES, Read, Series};
use super::snapshot::Snapshot;
use crate::monitor::HealthHandle;

/// The unit of the families in seconds, as OpenTelemetry spells it (UCUM): what an
/// OpenTelemetry-to-Prometheus pipeline turns into the `_seconds` suffix.
const SECONDS: &str = "s";

/// OpenTelemetry instruments of a monitor's published verdicts: the metrics of the
/// [module docs](super)' table, by the same names, units, attributes and values, through the
/// application's [`Meter`].
///
/// [`register`](Self::register) adds one observable instrument per metric (gauges, and
/// counters for the `_total` ones). Their callbacks read what the monitor has published, as
/// every reader does, and never run a check: the load on the databases stays set by the
/// monitor's cadence, however often the application's reader collects. They read the view
/// once per change of it (and once more when a verdict goes stale), as the Prometheus
/// exposition is rendered, so the instruments of one collection read one snapshot unless a
/// round publishes in the middle of it.
///
/// Cheap to clone: clones share what they read.
///
/// See the [module docs](super#opentelemetry) for an example.
#[derive(Clone)]
pub struct OpenTelemetry {
    inner: Arc<Inner>,
}

// Moved into the callbacks, which the SDK calls from its reader's thread.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<OpenTelemetry>();
};

struct Inner {
    handle: HealthHandle,
    /// The snapshot the last collection read.
    last: ArcSwap<Snapshot>,
    /// Snapshots read so far.
    reads: AtomicU64,
}

impl Inner {
    /// The last snapshot while it is current, else one read now.
    fn current(&self) -> Arc<Snapshot> {
        let last = self.last.load_full();
        if last.is_current(&self.handle) {
            return last;
        }
        let snapshot = Arc::new(Snapshot::read(&self.handle));
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.last.store(Arc::clone(&snapshot));
        snapshot
    }
}

impl OpenTelemetry {
    /// Instruments of the monitor behind `handle`, not registered yet.
    #[must_use]
    pub fn new(handle: &HealthHandle) -> Self {
        Self {
            inner: Arc::new(Inner {
                handle: handle.clone(),
                last: ArcSwap::from_pointee(Snapshot::read(handle)),
                reads: AtomicU64::new(1),
            }),
        }
    }

    /// Adds the instruments to `meter`, once per meter.
    ///
    /// Their callbacks are kept by the meter's provider, and with them a handle on the
    /// monitor: there is nothing to hold. They live as long as the provider does
    /// (OpenTelemetry has no way to remove an observable instrument), and keep the monitor
    /// running meanwhile, as a layer does; shutting the provider down and dropping it lets
    /// both go.
    pub fn register(&self, meter: &Meter) {
        for family in &FAMILIES {
            let inner = Arc::clone(&self.inner);
            match family.series {
                Series::Flags(read) => {
                    meter
                        .u64_observable_gauge(family.name)
                        .with_description(family.help)
                        .with_callback(observe(inner, read, u64::from))
                        .build();
                }
                Series::Seconds(read) => {
                    meter
                        .f64_observable_gauge(family.name)
                        .with_description(family.help)
                        .with_unit(SECONDS)
                        .with_callback(observe(inner, read, |seconds| seconds))
                        .build();
                }
                Series::Counts(read) => {
                    meter
                        .u64_observable_counter(family.name)
                        .with_description(family.help)
                        .with_callback(observe(inner, read, |count| count))
                        .build();
                }
                Series::Number(read) => {
                    meter
                        .u64_observable_gauge(family.name)
                        .with_description(family.help)
                        .with_callback(observe(inner, read, |number| number))
                        .build();
                }
            }
        }
    }

    /// How many snapshots the callbacks read (the one read by `new` included).
    #[cfg(test)]
    pub(crate) fn reads(&self) -> u64 {
        self.inner.reads.load(Ordering::Relaxed)
    }
}

/// The callback of one family's instrument: each series of the current snapshot, its labels
/// as attributes, its value as `measure` makes it.
fn observe<T: 'static, M: 'static>(
    inner: Arc<Inner>,
    read: Read<T>,
    measure: fn(T) -> M,
) -> impl Fn(&dyn AsyncInstrument<M>) + Send + Sync + 'static {
    move |instrument| {
        let snapshot = inner.current();
        read(&snapshot, &mut |labels, value| {
            let attributes: Vec<_> = labels
                .iter()
                .map(|&(key, value)| KeyValue::new(key, value.to_owned()))
                .collect();
            instrument.observe(measure(value), &attributes);
        });
    }
}

impl fmt::Debug for OpenTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { inner } = self;
        let Inner {
            handle,
            last,
            reads,
        } = &**inner;
        f.debug_struct("OpenTelemetry")
            .field("monitor", handle)
            .field("generation", &last.load().generation)
            .field("reads", &reads.load(Ordering::Relaxed))
            .finish()
    }
}
