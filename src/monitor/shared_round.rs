//! The health round with a shared cache: serve the fleet's entry when it is fresh, else race
//! for the lock and compute, falling back to this process's own verdict whenever Redis is in
//! trouble. See [`crate::shared`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::components::{Forced, TrackedComponent};
use super::published::Published;
use super::state::{HealthRound, MonitorState};
use crate::component::ComponentSpec;
use crate::config::HealthConfig;
use crate::shared::{CacheStatus, Entry, Read, SHARED_CACHE_COMPONENT, SharedVerdicts, age};
use crate::verdict::{ComponentReport, HealthVerdict};

/// The shared cache of a monitor, and the component that reports it.
#[derive(Debug)]
pub(crate) struct SharedRounds {
    verdicts: SharedVerdicts,
    cache: TrackedComponent,
}

impl SharedRounds {
    pub(crate) fn new(config: &HealthConfig, limit: Duration) -> Option<Self> {
        let cache = config.shared_cache.as_ref()?;
        let verdicts = SharedVerdicts::new(cache, config.health_interval, config.readiness_timeout);
        let status = CacheStatus {
            verdicts: verdicts.clone(),
            target: cache.target.as_deref().map(str::to_owned),
        };
        let spec = ComponentSpec::new(SHARED_CACHE_COMPONENT, status);
        Some(Self {
            verdicts,
            cache: TrackedComponent::new(&spec, limit),
        })
    }

    /// The `shared_cache` component, as the last round left it.
    pub(crate) fn report(&self) -> ComponentReport {
        self.cache.report()
    }

    /// Whether a `?nocache=true` computation writes the entry.
    pub(crate) fn nocache_writes(&self) -> bool {
        self.verdicts.nocache_writes
    }

    /// Writes a `?nocache=true` computation's shared part as the entry.
    pub(crate) async fn write_fresh(&self, monitor: &MonitorState, round: &HealthRound) {
        if let Err(error) = monitor.write_entry(&self.verdicts, round).await {
            self.record(Some(error), &monitor.spawner).await;
        }
    }

    /// Records how the round went with Redis, and updates the component from it.
    async fn record(
        &self,
        problem: Option<crate::check::CheckError>,
        spawner: &super::spawner::Spawner,
    ) {
        self.verdicts.record(problem);
        let started = Instant::now();
        let claim = self.cache.claim(started, spawner, Forced::Yes);
        // The check reads what was just recorded: it finishes at once.
        claim
            .report(started, started + Duration::from_secs(1))
            .await;
    }
}

impl MonitorState {
    pub(super) async fn shared_health_round(
        &self,
        shared: &SharedRounds,
    ) -> Arc<Published<HealthVerdict>> {
        let deadline = Instant::now() + self.config.readiness_timeout;
        let names = self.database_order();
        let (previous, problem) = match shared.verdicts.read(deadline, &names).await {
            Read::Found(entry) if shared.verdicts.is_fresh(&entry) => {
                shared.record(None, &self.spawner).await;
                return self.serve_shared(entry).await;
            }
            Read::Found(entry) => (Some(entry), None),
            Read::Missing => (None, None),
            Read::Invalid(error) => (None, Some(error)),
            Read::Failed(error) => {
                // Redis is in trouble: no lock, no write, this process's own verdict.
                shared.record(Some(error), &self.spawner).await;
                return self.compute_and_publish(None).await;
            }
        };
        match shared.verdicts.lock(deadline).await {
            Ok(true) => self.compute_and_publish(Some((shared, problem))).await,
            Ok(false) => {
                shared.record(problem, &self.spawner).await;
                match previous {
                    // Another process computes: keep serving the entry there is.
                    Some(entry) if age(&entry) < shared.verdicts.keep => {
                        self.serve_shared(entry).await
                    }
                    // None to serve (the fleet's first round): this process's own, unwritten.
                    _ => self.compute_and_publish(None).await,
                }
            }
            Err(error) => {
                shared.record(Some(error), &self.spawner).await;
                self.compute_and_publish(None).await
            }
        }
    }

    /// Computes this process's verdict; with `write` (the lock won, and what the read found
    /// wrong, if anything), writes the entry before publishing.
    async fn compute_and_publish(
        &self,
        write: Option<(&SharedRounds, Option<crate::check::CheckError>)>,
    ) -> Arc<Published<HealthVerdict>> {
        let round = self.computed_health().await;
        if let Some((shared, problem)) = write {
            let written = self.write_entry(&shared.verdicts, &round).await.err();
            shared.record(problem.or(written), &self.spawner).await;
        }
        self.publish_health(
            round.default,
            round.others,
            round.components,
            round.finished_at,
        )
    }

    /// Writes the shared part of `round` as the entry, bounded by the round's deadline.
    pub(super) async fn write_entry(
        &self,
        verdicts: &SharedVerdicts,
        round: &HealthRound,
    ) -> Result<(), crate::check::CheckError> {
        let components = self
            .components
            .iter()
            .zip(&round.components)
            .filter(|(component, _)| component.is_shared())
            .map(|(_, report)| report.clone())
            .collect();
        let entry = Entry {
            computed_at: round.finished_at,
            computed_by: verdicts.process_id.clone(),
            database: round.default.clone(),
            databases: round.others.clone(),
            components,
        };
        let deadline = Instant::now() + self.config.readiness_timeout;
        verdicts.write(&entry, deadline).await
    }

    /// Serves `entry`: its databases and shared components, this process's own components
    /// checked now.
    async fn serve_shared(&self, entry: Entry) -> Arc<Published<HealthVerdict>> {
        self.counters.shared_rounds.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let deadline = started + self.config.readiness_timeout;
        for component in self.components.iter().filter(|c| c.is_shared()) {
            if let Some(report) = entry
                .components
                .iter()
                .find(|r| *r.name == *component.name())
            {
                component.adopt(report);
            }
        }
        // Every local check starts before the round waits on any.
        let claims: Vec<_> = self
            .components
            .iter()
            .map(|component| {
                (!component.is_shared())
                    .then(|| component.claim(started, &self.spawner, Forced::No))
            })
            .collect();
        let mut components = Vec::with_capacity(claims.len());
        for (component, claim) in self.components.iter().zip(claims) {
            components.push(match claim {
                Some(claim) => claim.report(started, deadline).await,
                None => component.report(),
            });
        }
        let computed = (entry.computed_by.clone(), age(&entry));
        self.publish_health_from(
            entry.database,
            entry.databases,
            components,
            entry.computed_at,
            Some(computed),
        )
    }

    /// The configured databases' names as a health verdict lists them: the default first.
    fn database_order(&self) -> Vec<&str> {
        let names: Vec<&str> = self.config.database_names().collect();
        match self.default_index {
            Some(index) => std::iter::once(names[index])
                .chain(
                    names
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != index)
                        .map(|(_, n)| *n),
                )
                .collect(),
            None => names,
        }
    }
}
