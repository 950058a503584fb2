use super::*;

fn outcome(name: &str, error: Option<CheckError>) -> CheckOutcome {
    CheckOutcome {
        name: name.into(),
        status: if error.is_some() {
            CheckStatus::Failed
        } else {
            CheckStatus::Passed
        },
        elapsed: Duration::from_micros(1234),
        running_for: None,
        error,
        detail: None,
        critical: true,
        target: Some("db:5432/app".into()),
        details: None,
    }
}

fn entry() -> Entry {
    let refused = CheckError::new(
        CheckErrorKind::Refused,
        "connecting to postgres://app:hunter2@replica/app: refused",
    );
    Entry {
        computed_at: UNIX_EPOCH + Duration::from_millis(1_767_225_600_123),
        computed_by: "web-1/42".into(),
        database: Some(outcome("default", None)),
        databases: vec![outcome("replica", Some(refused.clone()))],
        components: vec![ComponentReport {
            name: "search".into(),
            status: ComponentStatus::Degraded,
            critical: false,
            gates_readiness: false,
            target: None,
            outcome: Some(outcome("search", Some(refused))),
            reason: "1 failed check in a row, failures_before_trouble is 1".into(),
            since: UNIX_EPOCH + Duration::from_millis(1_767_225_000_000),
            consecutive_failures: 1,
            consecutive_successes: 0,
        }],
    }
}

#[test]
fn an_entry_reads_back_as_it_was_written() {
    let json = entry().encode();
    assert!(!json.contains("hunter2"), "{json}");
    let read = Entry::decode(json.as_bytes()).unwrap();
    assert_eq!(read.computed_at, entry().computed_at);
    assert_eq!(&*read.computed_by, "web-1/42");
    let replica = &read.databases[0];
    assert_eq!(replica.status, CheckStatus::Failed);
    assert_eq!(replica.error_kind(), Some(CheckErrorKind::Refused));
    assert_eq!(replica.elapsed, Duration::from_micros(1234));
    assert_eq!(replica.target.as_deref(), Some("db:5432/app"));
    let search = &read.components[0];
    assert_eq!(search.status, ComponentStatus::Degraded);
    assert_eq!(search.consecutive_failures, 1);
    assert_eq!(search.since, entry().components[0].since);
    assert_eq!(search.reason, entry().components[0].reason);
}

#[test]
fn the_format_is_documented_json() {
    let value: serde_json::Value = serde_json::from_str(&entry().encode()).unwrap();
    assert_eq!(value["format"], 1);
    assert_eq!(value["computed_at_ms"], 1_767_225_600_123_u64);
    assert_eq!(value["computed_by"], "web-1/42");
    assert_eq!(value["database"]["name"], "default");
    assert_eq!(value["database"]["status"], "ready");
    assert_eq!(value["databases"][0]["error_kind"], "refused");
    assert_eq!(value["components"][0]["status"], "degraded");
}

#[test]
fn what_cannot_be_served_says_why() {
    let garbage = Entry::decode(b"\xff not json").unwrap_err();
    assert!(garbage.starts_with("not a tower-health entry"), "{garbage}");
    let mut value: serde_json::Value = serde_json::from_str(&entry().encode()).unwrap();
    value["format"] = 2.into();
    let newer = Entry::decode(value.to_string().as_bytes()).unwrap_err();
    assert_eq!(newer, "written in format 2, this process reads format 1");
    value["format"] = 1.into();
    value["databases"][0]["error_kind"] = "gremlins".into();
    let kind = Entry::decode(value.to_string().as_bytes()).unwrap_err();
    assert_eq!(kind, "unknown error kind \"gremlins\"");
}

#[test]
fn every_error_kind_reads_back() {
    use CheckErrorKind as Kind;
    // Exhaustive: a new kind does not compile until it is listed here and in `kind_named`.
    let listed = |kind: Kind| match kind {
        Kind::Refused
        | Kind::Dns
        | Kind::Auth
        | Kind::Tls
        | Kind::Timeout
        | Kind::PoolSaturated
        | Kind::Closed
        | Kind::Query
        | Kind::Panicked
        | Kind::Other => kind,
    };
    for kind in [
        Kind::Refused,
        Kind::Dns,
        Kind::Auth,
        Kind::Tls,
        Kind::Timeout,
        Kind::PoolSaturated,
        Kind::Closed,
        Kind::Query,
        Kind::Panicked,
        Kind::Other,
    ] {
        assert_eq!(kind_named(listed(kind).as_str()), Ok(kind));
    }
}

#[test]
fn what_a_passing_check_reported_is_shared_with_it() {
    let mut entry = entry();
    let mut details = serde_json::Map::new();
    details.insert("version".into(), "7.2.4".into());
    details.insert("latency_ms".into(), 0.25.into());
    let default = entry.database.as_mut().unwrap();
    default.details = Some(Arc::new(details.clone()));
    default.target = Some("reached:5432".into());
    let json = entry.encode();
    let read = Entry::decode(json.as_bytes()).unwrap();
    let default = read.database.unwrap();
    assert_eq!(default.details.as_deref(), Some(&details));
    assert_eq!(default.target.as_deref(), Some("reached:5432"));
    // None reported: the key is left out, and reads back as none.
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(value["databases"][0].get("details").is_none(), "{value}");
    assert_eq!(read.databases[0].details, None);
}
