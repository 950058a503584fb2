#![doc = include_str!("docs/guide.md")]

/// One page of the guide: a module with no items, its docs the page in `src/docs/`, and link
/// definitions for the items behind features, so that every page's links resolve in every
/// build (to the item where the build has it, to the feature table where it does not).
macro_rules! page {
    ($name:ident, $file:literal $(, #![$extra:meta])*) => {
        pub mod $name {
            #![doc = include_str!($file)]
            $(#![$extra])*
            #![doc = ""]
            #![cfg_attr(feature = "axum", doc = "[`axum`]: crate::axum")]
            #![cfg_attr(not(feature = "axum"), doc = "[`axum`]: crate#feature-flags")]
            #![cfg_attr(
                feature = "admin",
                doc = "[`admin`]: crate::admin\n\
                       [`AdminConfig`]: crate::admin::AdminConfig"
            )]
            #![cfg_attr(
                not(feature = "admin"),
                doc = "[`admin`]: crate#feature-flags\n\
                       [`AdminConfig`]: crate#feature-flags"
            )]
            #![cfg_attr(
                any(feature = "metrics", feature = "opentelemetry"),
                doc = "[`metrics`]: crate::metrics"
            )]
            #![cfg_attr(
                feature = "metrics",
                doc = "[`HealthMetrics`]: crate::metrics::HealthMetrics"
            )]
            #![cfg_attr(
                not(any(feature = "metrics", feature = "opentelemetry")),
                doc = "[`metrics`]: crate#feature-flags"
            )]
            #![cfg_attr(
                not(feature = "metrics"),
                doc = "[`HealthMetrics`]: crate#feature-flags"
            )]
            #![cfg_attr(
                feature = "opentelemetry",
                doc = "[`OpenTelemetry`]: crate::metrics::OpenTelemetry"
            )]
            #![cfg_attr(
                not(feature = "opentelemetry"),
                doc = "[`OpenTelemetry`]: crate#feature-flags"
            )]
            #![cfg_attr(
                feature = "grpc",
                doc = "[`grpc`]: crate::grpc\n\
                       [`HealthService`]: crate::grpc::HealthService\n\
                       [`OrcaService`]: crate::grpc::OrcaService"
            )]
            #![cfg_attr(
                not(feature = "grpc"),
                doc = "[`grpc`]: crate#feature-flags\n\
                       [`HealthService`]: crate#feature-flags\n\
                       [`OrcaService`]: crate#feature-flags"
            )]
            #![cfg_attr(
                feature = "redis",
                doc = "[`redis`]: crate::redis\n\
                       [`SharedCache`]: crate::redis::SharedCache\n\
                       [`HealthConfig::shared_cache`]: crate::HealthConfig::shared_cache"
            )]
            #![cfg_attr(
                not(feature = "redis"),
                doc = "[`redis`]: crate#feature-flags\n\
                       [`SharedCache`]: crate#feature-flags\n\
                       [`HealthConfig::shared_cache`]: crate#feature-flags"
            )]
        }
    };
}

page!(serving, "docs/serving.md");
page!(kubernetes, "docs/kubernetes.md");
page!(envoy, "docs/envoy.md");
page!(containers, "docs/containers.md");
page!(bodies, "docs/bodies.md");
page!(databases, "docs/databases.md");
page!(components, "docs/components.md");
page!(fleet, "docs/fleet.md");
page!(incident, "docs/incident.md");
// The screenshots are in the page, as data URIs: rustdoc copies no image beside its pages.
// Only where docs are built, so that no other build reads them.
page!(
    page,
    "docs/page.md",
    #![cfg_attr(doc, doc = concat!("[page-failing]: data:image/png;base64,", include_str!("docs/images/page-failing.png.b64")))],
    #![cfg_attr(doc, doc = concat!("[page-healthy]: data:image/png;base64,", include_str!("docs/images/page-healthy.png.b64")))]
);
page!(grpc, "docs/grpc.md");
page!(haproxy, "docs/haproxy.md");
page!(proxies, "docs/proxies.md");
page!(configuration, "docs/configuration.md");
page!(migrating, "docs/migrating.md");
page!(hardening, "docs/hardening.md");
page!(architecture, "docs/architecture.md");
