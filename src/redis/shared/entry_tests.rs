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

fn subject(name: &str, critical: bool) -> Subject {
    Subject {
        name: name.into(),
        target: Some("db:5432/app".into()),
        critical,
    }
}

/// The process of the tests: `default` and an optional `replica`, a shared `search`.
fn expected() -> Expected {
    Expected::new(
        vec![subject("default", true), subject("replica", false)],
        vec![subject("search", false)],
    )
}

fn entry() -> Entry {
    let refused = CheckError::new(
        CheckErrorKind::Refused,
        "connecting to postgres://app:hunter2@replica/app: refused",
    );
    Entry {
        computed_at: UNIX_EPOCH + Duration::from_millis(1_767_225_600_123),
        computed_by: "web-1/42".into(),
        keep: Duration::from_secs(20),
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

fn json() -> Value {
    serde_json::from_str(&entry().encode(&expected().fingerprint)).unwrap()
}

fn decode(value: &Value) -> Result<Entry, Refusal> {
    Entry::decode(value.to_string().as_bytes(), &expected())
}

#[test]
fn an_entry_reads_back_as_it_was_written() {
    let json = entry().encode(&expected().fingerprint);
    assert!(!json.contains("hunter2"), "{json}");
    let read = Entry::decode(json.as_bytes(), &expected()).unwrap();
    assert_eq!(read.computed_at, entry().computed_at);
    assert_eq!(&*read.computed_by, "web-1/42");
    assert_eq!(read.keep, Duration::from_secs(20));
    let replica = &read.databases[0];
    assert_eq!(replica.status, CheckStatus::Failed);
    assert_eq!(replica.error_kind(), Some(CheckErrorKind::Refused));
    assert_eq!(replica.elapsed, Duration::from_micros(1234));
    assert_eq!(replica.target.as_deref(), Some("db:5432/app"));
    let search = &read.components[0];
    assert_eq!(search.status, ComponentStatus::Degraded);
    assert_eq!(search.consecutive_failures, 1);
    assert_eq!(search.since, entry().components[0].since);
}

#[test]
fn the_readers_own_criticality_decides() {
    // The writer had the replica critical; this reader has it optional.
    let read = decode(&json()).unwrap();
    assert!(read.database.unwrap().critical);
    assert!(!read.databases[0].critical);
}

#[test]
fn the_format_is_documented_json() {
    let value = json();
    assert_eq!(value["format"], 2);
    assert_eq!(value["fingerprint"], expected().fingerprint.to_string());
    assert_eq!(value["computed_at_ms"], 1_767_225_600_123_u64);
    assert_eq!(value["computed_by"], "web-1/42");
    assert_eq!(value["keep_ms"], 20_000);
    assert_eq!(value["database"]["name"], "default");
    assert_eq!(value["database"]["status"], "ready");
    assert_eq!(value["databases"][0]["error_kind"], "refused");
    assert_eq!(value["components"][0]["status"], "degraded");
    assert!(value["database"].get("critical").is_none(), "{value}");
}

#[test]
fn the_fingerprint_follows_the_configuration() {
    let base = expected().fingerprint;
    assert_eq!(base.to_string().len(), 32);
    assert_eq!(expected().fingerprint, base, "stable");
    let other = |databases: Vec<Subject>, components: Vec<Subject>| {
        Expected::new(databases, components).fingerprint
    };
    let search = || vec![subject("search", false)];
    // A database made critical, another target, another name, a component not shared.
    assert_ne!(
        other(
            vec![subject("default", true), subject("replica", true)],
            search()
        ),
        base
    );
    let mut moved = subject("default", true);
    moved.target = Some("other-db:5432/app".into());
    assert_ne!(
        other(vec![moved, subject("replica", false)], search()),
        base
    );
    assert_ne!(
        other(
            vec![subject("primary", true), subject("replica", false)],
            search()
        ),
        base
    );
    assert_ne!(
        other(
            vec![subject("default", true), subject("replica", false)],
            vec![]
        ),
        base
    );
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
fn every_timeout_detail_reads_back() {
    for detail in [
        TimeoutDetail::DeadlinePassed,
        TimeoutDetail::EarlierCheckRunning,
    ] {
        let mut entry = entry();
        let default = entry.database.as_mut().unwrap();
        default.status = CheckStatus::TimedOut;
        default.detail = Some(detail);
        let read = Entry::decode(
            entry.encode(&expected().fingerprint).as_bytes(),
            &expected(),
        );
        assert_eq!(read.unwrap().database.unwrap().detail, Some(detail));
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
    let json = entry.encode(&expected().fingerprint);
    let read = Entry::decode(json.as_bytes(), &expected()).unwrap();
    let default = read.database.unwrap();
    assert_eq!(default.details.as_deref(), Some(&details));
    assert_eq!(default.target.as_deref(), Some("reached:5432"));
    // None reported: the key is left out, and reads back as none.
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(value["databases"][0].get("details").is_none(), "{value}");
    assert_eq!(read.databases[0].details, None);
}

/// The text every hostile field below carries: no refusal may quote it.
const MARKER: &str = "HOSTILE-MARKER";

/// Each hostile change of a valid entry, and what its refusal says.
fn hostile() -> Vec<(&'static str, Value, &'static str)> {
    let with = |change: &dyn Fn(&mut Value)| {
        let mut value = json();
        change(&mut value);
        value
    };
    let huge = MARKER.repeat(5_000);
    vec![
        (
            "a timestamp of the wrong type",
            with(&|v| v["computed_at_ms"] = MARKER.into()),
            "a field of the wrong type, missing or unknown",
        ),
        (
            "a negative timestamp",
            with(&|v| v["computed_at_ms"] = (-5).into()),
            "a field of the wrong type",
        ),
        (
            "a field it does not have",
            with(&|v| v["by_the_way"] = MARKER.into()),
            "a field of the wrong type, missing or unknown",
        ),
        (
            "the year 10000",
            with(&|v| v["computed_at_ms"] = 253_402_300_800_000_u64.into()),
            "computed_at_ms is past the year 9999",
        ),
        (
            "a component's since after its round",
            with(&|v| v["components"][0]["since_ms"] = 253_402_300_800_000_u64.into()),
            "search: since_ms is after the round that computed it",
        ),
        (
            "a duration past a year",
            with(&|v| v["database"]["elapsed_us"] = u64::MAX.into()),
            "elapsed_us is longer than a year",
        ),
        (
            "an unknown check status",
            with(&|v| v["database"]["status"] = MARKER.into()),
            "default: an unknown check status",
        ),
        (
            "an unknown component status",
            with(&|v| v["components"][0]["status"] = MARKER.into()),
            "search: an unknown component status",
        ),
        (
            "an unknown error kind",
            with(&|v| v["databases"][0]["error_kind"] = MARKER.into()),
            "an unknown error kind",
        ),
        (
            "a free-text detail",
            with(&|v| {
                v["database"]["status"] = "timed_out".into();
                v["database"]["detail"] = MARKER.into();
            }),
            "default: an unknown detail",
        ),
        (
            "an error beside a passing status",
            with(&|v| {
                v["database"]["error_kind"] = "refused".into();
                v["database"]["error"] = MARKER.into();
            }),
            "default: its status, error and detail disagree",
        ),
        (
            "a long error",
            with(&|v| v["databases"][0]["error"] = MARKER.repeat(200).into()),
            "error is longer than 2048 bytes",
        ),
        (
            "a long process id",
            with(&|v| v["computed_by"] = MARKER.repeat(30).into()),
            "computed_by is longer than 256 bytes",
        ),
        (
            "control characters",
            with(&|v| v["database"]["target"] = format!("{MARKER}\u{1b}[2J").into()),
            "target holds control characters",
        ),
        (
            "nested details",
            with(&|v| v["database"]["details"] = serde_json::json!({ "a": { "b": MARKER } })),
            "details holds a value that is not a scalar",
        ),
        (
            "another application's databases",
            with(&|v| v["database"]["name"] = "orders".into()),
            "its databases are not this process's",
        ),
        (
            "a shared component it does not have",
            with(&|v| v["components"][0]["name"] = "payments".into()),
            "its shared components are not this process's",
        ),
        (
            "another configuration",
            with(&|v| {
                v["fingerprint"] = "0123456789abcdef0123456789abcdef".into();
                v["computed_by"] = MARKER.into();
            }),
            "computed for another configuration (fingerprint 0123456789abcdef0123456789abcdef)",
        ),
        (
            "a fingerprint that is no fingerprint",
            with(&|v| v["fingerprint"] = MARKER.into()),
            "computed for another configuration (fingerprint malformed)",
        ),
        (
            "another format",
            with(&|v| v["format"] = 7.into()),
            "written in format 7, this process reads format 2",
        ),
        (
            "an entry past the size bound",
            with(&|v| v["computed_by"] = huge.clone().into()),
            "larger than 64 KiB",
        ),
    ]
}

#[test]
fn a_hostile_entry_is_refused_whole_and_its_refusal_quotes_nothing_of_it() {
    for (what, value, says) in hostile() {
        let refusal = decode(&value).map(|_| ()).unwrap_err().to_string();
        assert!(refusal.contains(says), "{what}: {refusal}");
        assert!(!refusal.contains(MARKER), "{what} quoted: {refusal}");
    }
    // Not JSON at all, or cut short.
    let text = entry().encode(&expected().fingerprint);
    for (what, bytes, says) in [
        (
            "garbage",
            &b"\xff not json"[..],
            "not a tower-health entry (a syntax error",
        ),
        ("truncated", &text.as_bytes()[..text.len() / 2], "truncated"),
        ("empty", &b""[..], "truncated"),
    ] {
        let refusal = Entry::decode(bytes, &expected())
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(refusal.contains(says), "{what}: {refusal}");
    }
}

#[test]
fn an_entry_a_string_field_of_which_quotes_a_secret_is_redacted_on_the_way_in() {
    let mut value = json();
    value["database"]["target"] = "postgres://app:hunter2@db/app".into();
    value["database"]["details"] = serde_json::json!({ "via": "redis://:hunter2@cache:6379" });
    let read = decode(&value).unwrap();
    let default = read.database.unwrap();
    assert!(!default.target.unwrap().contains("hunter2"));
    assert!(
        !default.details.unwrap()["via"]
            .to_string()
            .contains("hunter2")
    );
}
