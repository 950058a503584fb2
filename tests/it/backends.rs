//! One contract for every backend (`support/contract.rs`), run for PostgreSQL through bb8 (the
//! application's pool, and a pool of the check's own), deadpool, sqlx (each line) and the Redis
//! component: refused, stalled, recovered, secret-free, first-round failure, and for the pool
//! backends the application's pool exhausted by its own traffic.
//!
//! The results table: `cargo test --all-features --test it backends:: 2>&1 | grep '^contract'`.

use crate::support;

use std::any::Any;
use std::net::SocketAddr;

use support::contract::{self, Backend, COMPONENT, DATABASE, Kind, PoolBackend};
use tower_health::HealthConfig;
use tower_health::check::DatabaseCheck;
use tower_health::postgres::PostgresCheck;
use tower_health::postgres::{bb8, bb8_postgres, tokio_postgres};

/// A PostgreSQL URL to `addr` (in clear: the proxy is in the path).
fn pg_url(addr: SocketAddr, credentials: Option<(&str, &str)>) -> String {
    let (user, password) = credentials.unwrap_or(("postgres", ""));
    format!("postgres://{user}:{password}@{addr}/postgres?sslmode=disable")
}

fn add_database(config: HealthConfig, check: impl DatabaseCheck) -> (HealthConfig, String) {
    let debug = format!("{check:?}");
    (config.database(DATABASE, check), debug)
}

/// The `Backend` of a PostgreSQL check: the real PostgreSQL, its URLs, and how `$add` adds the
/// check of a URL to a configuration.
macro_rules! postgres_backend {
    ($backend:ident, $name:literal, $add:expr) => {
        impl Backend for $backend {
            const NAME: &'static str = $name;
            const KIND: Kind = Kind::Database;

            async fn available() -> bool {
                support::postgres_available().await
            }

            fn upstream() -> SocketAddr {
                support::pg_addr()
            }

            fn url(addr: SocketAddr, credentials: Option<(&str, &str)>) -> String {
                pg_url(addr, credentials)
            }

            fn add(config: HealthConfig, url: &str) -> (HealthConfig, String) {
                let add: fn(HealthConfig, &str) -> (HealthConfig, String) = $add;
                add(config, url)
            }
        }
    };
}

/// The check beside a pool of `B`'s, as the application's pool.
fn beside_pool<B: PoolBackend>(config: HealthConfig, url: &str) -> (HealthConfig, String) {
    add_database(config, B::check_beside(B::pool(url, 4), url))
}

/// `PostgresCheck::new`: beside the application's bb8 pool.
struct Bb8;

postgres_backend!(Bb8, "bb8", beside_pool::<Bb8>);

impl PoolBackend for Bb8 {
    type Pool = bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>;

    fn pool(url: &str, max_size: u32) -> Self::Pool {
        let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
            url,
            tokio_postgres::NoTls,
        )
        .unwrap();
        bb8::Pool::builder()
            .max_size(max_size)
            .build_unchecked(manager)
    }

    fn check_beside(pool: Self::Pool, url: &str) -> impl DatabaseCheck {
        PostgresCheck::new(pool).with_target(url)
    }

    async fn checkout(pool: Self::Pool) -> Box<dyn Any + Send> {
        Box::new(pool.get_owned().await.unwrap())
    }
}

/// `PostgresCheck::connect`: a pool of the check's own.
struct Bb8OwnPool;

postgres_backend!(Bb8OwnPool, "bb8-own-pool", |config, url| {
    add_database(config, PostgresCheck::connect(url).unwrap())
});

/// `DeadpoolCheck`: beside the application's deadpool-postgres pool.
struct Deadpool;

postgres_backend!(Deadpool, "deadpool", beside_pool::<Deadpool>);

impl PoolBackend for Deadpool {
    type Pool = deadpool_postgres::Pool;

    fn pool(url: &str, max_size: u32) -> Self::Pool {
        use deadpool_postgres::tokio_postgres;
        let config: tokio_postgres::Config = url.parse().unwrap();
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        deadpool_postgres::Pool::builder(manager)
            .max_size(max_size as usize)
            .build()
            .unwrap()
    }

    fn check_beside(pool: Self::Pool, url: &str) -> impl DatabaseCheck {
        tower_health::postgres::DeadpoolCheck::new(pool).with_target(url)
    }

    async fn checkout(pool: Self::Pool) -> Box<dyn Any + Send> {
        Box::new(pool.get().await.unwrap())
    }
}

/// `SqlxCheck` of one sqlx line: beside the application's `PgPool`.
macro_rules! sqlx_backend {
    ($backend:ident, $name:literal, $line:ident) => {
        struct $backend;

        postgres_backend!($backend, $name, beside_pool::<$backend>);

        impl PoolBackend for $backend {
            type Pool = tower_health::postgres::$line::sqlx::PgPool;

            fn pool(url: &str, max_size: u32) -> Self::Pool {
                tower_health::postgres::$line::sqlx::postgres::PgPoolOptions::new()
                    .max_connections(max_size)
                    .connect_lazy(url)
                    .unwrap()
            }

            fn check_beside(pool: Self::Pool, _url: &str) -> impl DatabaseCheck {
                tower_health::postgres::$line::SqlxCheck::new(pool)
            }

            async fn checkout(pool: Self::Pool) -> Box<dyn Any + Send> {
                Box::new(pool.acquire().await.unwrap())
            }
        }
    };
}

sqlx_backend!(Sqlx08, "sqlx-0.8", sqlx_0_8);
sqlx_backend!(Sqlx09, "sqlx-0.9", sqlx_0_9);

/// `redis::Redis`: a component, not a database.
struct Redis;

impl Backend for Redis {
    const NAME: &'static str = "redis";
    const KIND: Kind = Kind::Component;

    async fn available() -> bool {
        support::redis_server::redis_available().await
    }

    fn upstream() -> SocketAddr {
        support::redis_server::redis_url()
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .parse()
            .expect("TEST_REDIS_URL is redis://<ip>:<port>")
    }

    fn url(addr: SocketAddr, credentials: Option<(&str, &str)>) -> String {
        match credentials {
            Some((user, password)) => format!("redis://{user}:{password}@{addr}"),
            None => format!("redis://{addr}"),
        }
    }

    fn add(config: HealthConfig, url: &str) -> (HealthConfig, String) {
        let redis = tower_health::redis::Redis::connect(url).unwrap();
        let debug = format!("{redis:?}");
        let spec = tower_health::component::ComponentSpec::new(COMPONENT, redis);
        (config.component(spec), debug)
    }
}

/// One test per backend and case.
macro_rules! contract {
    ($module:ident, $backend:ty, [$($case:ident),* $(,)?]) => {
        mod $module {
            use super::*;

            $(
                #[tokio::test]
                async fn $case() {
                    contract::$case::<$backend>().await;
                }
            )*
        }
    };
}

// `pool_exhausted` needs an application pool beside the check. `abandoned` is for the checks
// that can close their connection: not Redis's, multiplexed and shared with whoever holds the
// manager; not a bb8-postgres pool's plain `tokio_postgres::Client`, whose connection task
// keeps the socket while a query is unanswered (dropped by the check, the connection never
// serves again, but its socket stays until the network gives up: give such pools a
// `tcp_user_timeout`). `pg_bb8_own_pool`'s `PostgresCheckManager` closes it.
contract!(
    pg_bb8,
    Bb8,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        secret_free,
        first_round_failure,
        pool_exhausted
    ]
);
contract!(
    pg_bb8_own_pool,
    Bb8OwnPool,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        abandoned,
        secret_free,
        first_round_failure
    ]
);
contract!(
    pg_deadpool,
    Deadpool,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        abandoned,
        secret_free,
        first_round_failure,
        pool_exhausted
    ]
);
contract!(
    pg_sqlx_0_8,
    Sqlx08,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        abandoned,
        secret_free,
        first_round_failure,
        pool_exhausted
    ]
);
contract!(
    pg_sqlx_0_9,
    Sqlx09,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        abandoned,
        secret_free,
        first_round_failure,
        pool_exhausted
    ]
);
contract!(
    redis_component,
    Redis,
    [
        refused,
        stalled,
        recovered,
        closed_while_idle,
        secret_free,
        first_round_failure
    ]
);
