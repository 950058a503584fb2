use super::*;

fn target(url: &str) -> String {
    parse(url).map(|(_, target)| target).unwrap()
}

fn refusal(url: &str) -> String {
    match parse(url) {
        Ok((_, target)) => panic!("{url} was accepted, target {target}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn one_server_shows_host_port_and_database() {
    assert_eq!(target("redis://app:hunter2@cache:6380/3"), "cache:6380/3");
    assert_eq!(target("redis://cache"), "cache:6379/0");
    let error = refusal("redis://app:hunter2@cache:port");
    assert!(error.contains("not a Redis URL"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}

#[test]
fn a_comma_list_is_no_url_and_the_error_shows_the_forms() {
    let error = refusal("redis://:hunter2@a:6379,b:6379");
    assert!(error.contains("redis-cluster://"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}

#[cfg(not(feature = "rustls"))]
#[test]
fn tls_needs_the_rustls_feature() {
    for url in [
        "rediss://cache.internal",
        "rediss-cluster://a:7000",
        "rediss-sentinel://s:26379?sentinelServiceName=m",
    ] {
        assert!(refusal(url).contains("`rustls` feature"), "{url}");
    }
}

#[cfg(not(feature = "redis-cluster"))]
#[test]
fn a_cluster_url_needs_the_redis_cluster_feature() {
    let error = refusal("redis-cluster://:hunter2@a:7000?node=b:7001");
    assert!(error.contains("`redis-cluster` feature"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}

#[cfg(not(feature = "redis-sentinel"))]
#[test]
fn a_sentinel_url_needs_the_redis_sentinel_feature() {
    let error = refusal("redis-sentinel://s:26379?sentinelServiceName=m");
    assert!(error.contains("`redis-sentinel` feature"), "{error}");
}

#[cfg(feature = "redis-cluster")]
#[test]
fn a_cluster_shows_its_seed_nodes() {
    assert_eq!(
        target("redis-cluster://app:hunter2@a:7000?node=b:7001&node=[::1]"),
        "cluster a:7000,b:7001,[::1]:6379"
    );
    assert_eq!(target("REDIS-CLUSTER://a/0"), "cluster a:6379");
    #[cfg(feature = "rustls")]
    assert_eq!(target("rediss-cluster://a:7000"), "cluster a:7000");
}

#[cfg(feature = "redis-cluster")]
#[test]
fn a_cluster_url_with_a_database_or_a_bad_node_is_refused() {
    for (url, why) in [
        ("redis-cluster://a:7000/2", "only database 0"),
        ("redis-cluster://a:7000?node=", "is not host[:port]"),
        (
            "redis-cluster://a:7000?node=u:p@b:7001",
            "is not host[:port]",
        ),
        ("redis-cluster://a:7000?node=b:7001/1", "is not host[:port]"),
        ("redis-cluster://a:7000?node=b:port", "is not host[:port]"),
        (
            "redis-cluster://a:7000?timeout=1",
            "unknown URL parameter \"timeout\"",
        ),
        ("redis-cluster://:7000", "host"),
        ("redis-cluster:///", "no host"),
        (
            "redis-cluster://:hunter2@a:7000?sentinelServiceName=m",
            "unknown URL parameter",
        ),
    ] {
        let error = refusal(url);
        assert!(error.contains(why), "{url}: {error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}

#[cfg(feature = "redis-sentinel")]
#[test]
fn a_sentinel_shows_the_primary_name_database_and_sentinels() {
    assert_eq!(
        target(
            "redis-sentinel://app:hunter2@s1/2?sentinelServiceName=orders&node=s2:5000&sentinelPassword=sesame"
        ),
        "sentinel orders/2 at s1:26379,s2:5000"
    );
    #[cfg(feature = "rustls")]
    assert_eq!(
        target("rediss-sentinel://s1:26380?sentinelServiceName=m"),
        "sentinel m/0 at s1:26380"
    );
}

#[cfg(feature = "redis-sentinel")]
#[test]
fn a_sentinel_url_without_its_service_name_or_with_strangers_is_refused() {
    for (url, why) in [
        ("redis-sentinel://:hunter2@s1", "needs sentinelServiceName"),
        (
            "redis-sentinel://s1?sentinelServiceName=",
            "needs sentinelServiceName",
        ),
        (
            "redis-sentinel://s1?sentinelServiceName=m&sentinel_password=hunter2",
            "unknown URL parameter \"sentinel_password\"",
        ),
        (
            "redis-sentinel://s1/x?sentinelServiceName=m",
            "database number",
        ),
    ] {
        let error = refusal(url);
        assert!(error.contains(why), "{url}: {error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}
