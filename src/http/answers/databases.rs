//! Databases have a criticality: an optional one moves health to `degraded` and leaves
//! readiness alone; every database is shown on `/health`.

use std::time::Duration;

use http::StatusCode;

use super::get;
use crate::config::HealthConfig;
use crate::monitor::testing::{monitor, rounds};
use crate::probe::Probe;
use crate::test_helpers::FakeCheck;
use crate::verdict::Status;

fn config(replica: FakeCheck) -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", FakeCheck::Ready)
        .database("replica", replica)
}

#[tokio::test]
async fn an_optional_database_refused_is_degraded_and_ready() {
    let handle = monitor(config(FakeCheck::Refused).optional_database("replica"));
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::OK,
            r#"{"causes":[{"kind":"database","name":"replica","text":"optional database replica is not_ready (refused)"}],"checks":{"database":"healthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready"},"database_replica":{"critical":false,"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","status":"not_ready"}},"reason":"optional database replica is not_ready (refused)","self_healing":true,"started":true,"status":"degraded","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::OK,
            r#"{"checks":{"database_default":"ready","database_replica":"not_ready"},"details":{"database_default":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"status":"ready"},"database_replica":{"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","status":"not_ready"}},"status":"ready","timestamp":"T"}"#.to_owned()
        )
    );
}

#[tokio::test]
async fn a_critical_database_refused_depools_and_health_shows_it() {
    // The seed's default: every database gates readiness; health follows the default one.
    let handle = monitor(config(FakeCheck::Refused));
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(handle.view().health.status, Status::Healthy);
    assert!(
        body.contains(r#""database_replica":{"critical":true,"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)""#),
        "{body}"
    );
}

#[tokio::test]
async fn an_optional_default_database_degrades_instead_of_unhealthy() {
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .optional_database("default")
        .database("default", FakeCheck::Refused);
    let handle = monitor(config);
    rounds(&handle).await;
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""status":"degraded""#), "{body}");
    assert!(
        body.contains(r#""reason":"optional database default is not_ready (refused)""#),
        "{body}"
    );
    assert_eq!(get(&handle, Probe::Ready).await.0, StatusCode::OK);
}

/// A health round that met the database refusing keeps `/health` failing only until the
/// next readiness round hears it again, not for a whole health interval; and a readiness
/// round that finds it refused makes `/health` unhealthy at once: one clock for every answer
/// about a database.
#[tokio::test]
async fn health_follows_each_database_the_readiness_rounds_learn() {
    use crate::test_helpers::FakeComponent;

    let database = FakeComponent::new(FakeCheck::Refused);
    let handle = monitor(
        HealthConfig::new()
            .readiness_timeout(Duration::from_secs(10))
            .database("default", database.clone()),
    );
    handle.state().health_round().await;
    assert_eq!(handle.view().health.status, Status::Unhealthy);
    database.set(FakeCheck::Ready);
    handle.state().readiness_round().await;
    assert_eq!(handle.view().health.status, Status::Healthy);
    assert_eq!(get(&handle, Probe::Health).await.0, StatusCode::OK);
    database.set(FakeCheck::Refused);
    handle.state().readiness_round().await;
    assert_eq!(handle.view().health.status, Status::Unhealthy);
    assert_eq!(
        get(&handle, Probe::Health).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}
