//! A check whose behaviour the schedule sets: a database (`check::DatabaseCheck`) or a
//! component (`component::Component`), in-process, on Tokio's clock.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use super::schedule::Behaviour;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport, DatabaseCheck};
use crate::component::Component;

/// A check that does what it is told: each check reads the behaviour as it starts; one that
/// hangs goes on as the next behaviour says once it changes (a stalled database's query
/// completes when the stall ends).
#[derive(Clone, Debug)]
pub(super) struct Scripted {
    behaviour: Arc<watch::Sender<Behaviour>>,
}

impl Scripted {
    pub(super) fn new(behaviour: Behaviour) -> Self {
        Self {
            behaviour: Arc::new(watch::Sender::new(behaviour)),
        }
    }

    pub(super) fn set(&self, behaviour: Behaviour) {
        self.behaviour.send_replace(behaviour);
    }

    fn run(&self) -> CheckFuture {
        let mut behaviour = self.behaviour.subscribe();
        Box::pin(async move {
            loop {
                let now = *behaviour.borrow_and_update();
                match now {
                    Behaviour::Passes(after) | Behaviour::Slow(after) => {
                        tokio::time::sleep(after).await;
                        return Ok(CheckReport::default());
                    }
                    Behaviour::Refused => {
                        return Err(CheckError::new(
                            CheckErrorKind::Refused,
                            "error connecting to server: Connection refused (os error 111)",
                        ));
                    }
                    Behaviour::QueryFails(after) => {
                        tokio::time::sleep(after).await;
                        return Err(CheckError::new(
                            CheckErrorKind::Query,
                            "db error: ERROR: the schedule says so",
                        ));
                    }
                    Behaviour::Hangs => {
                        if behaviour.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                }
            }
        })
    }
}

impl DatabaseCheck for Scripted {
    fn vendor(&self) -> &'static str {
        "scripted"
    }

    fn check(&self) -> CheckFuture {
        self.run()
    }
}

impl Component for Scripted {
    fn check(&self) -> CheckFuture {
        self.run()
    }
}

/// Lines of one `tracing` target, with the instant each was written on Tokio's clock.
#[derive(Clone, Debug, Default)]
pub(super) struct Lines(Arc<Mutex<Vec<(std::time::Instant, String)>>>);

impl Lines {
    pub(super) fn take(&self) -> Vec<(std::time::Instant, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Keeps the messages of the readiness transitions (`monitor::transitions`).
pub(super) struct Transitions(pub(super) Lines);

const TARGET: &str = "tower_health::monitor::transitions";

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Transitions {
    fn enabled(
        &self,
        metadata: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        metadata.target() == TARGET
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.starts_with("readiness is now") {
            let at = crate::clock::now();
            (self.0)
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((at, message.0));
        }
    }
}
