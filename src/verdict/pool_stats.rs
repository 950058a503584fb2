/// A snapshot of a connection pool, reported under `pool_info` by the pool endpoint.
///
/// Build one with [`PoolStats::new`] and fill in the fields your pool knows.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The most connections the pool will open.
    pub max_size: u32,
    /// Connections the pool currently manages (idle or in use).
    pub connections: u32,
    /// Connections idle in the pool.
    pub idle_connections: u32,
    /// Checkouts currently waiting for a connection (0 when
    /// [`pending_gets_unknown`](Self::pending_gets_unknown)).
    pub pending_gets: u64,
    /// The pool does not count the checkouts waiting for a connection (sqlx's do not):
    /// [`is_saturated`](Self::is_saturated) then reads a full pool with every connection in
    /// use as saturated, whether or not a checkout waits.
    pub pending_gets_unknown: bool,
    /// Checkouts that gave up waiting, since the pool was built.
    pub gets_timed_out: u64,
    /// Connections opened, since the pool was built.
    pub connections_created: u64,
    /// Connections closed because they were broken, since the pool was built.
    pub connections_closed_broken: u64,
    /// Connections the check opened for itself beside the pool (the connection it reserves
    /// next to an application's pool, the first and every replacement), since the check was
    /// built; 0 for a check that goes through a pool of its own. Not counted in the figures
    /// above, which are the pool's.
    pub reserved_connections_opened: u64,
}

impl PoolStats {
    /// A snapshot with the given sizes and every counter at zero.
    #[must_use]
    pub fn new(max_size: u32, connections: u32, idle_connections: u32) -> Self {
        Self {
            max_size,
            connections,
            idle_connections,
            ..Self::default()
        }
    }

    /// Connections currently checked out.
    #[must_use]
    pub fn in_use(&self) -> u32 {
        self.connections.saturating_sub(self.idle_connections)
    }

    /// Every connection is busy, the pool cannot grow, and checkouts are waiting (or, where
    /// the pool does not count them, [`pending_gets_unknown`](Self::pending_gets_unknown),
    /// the next checkout would wait).
    #[must_use]
    pub fn is_saturated(&self) -> bool {
        self.max_size > 0
            && self.connections >= self.max_size
            && self.idle_connections == 0
            && (self.pending_gets > 0 || self.pending_gets_unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_needs_a_full_pool_and_waiters() {
        let mut stats = PoolStats::new(2, 2, 0);
        assert!(!stats.is_saturated());
        stats.pending_gets = 1;
        assert!(stats.is_saturated());
        stats.idle_connections = 1;
        assert!(!stats.is_saturated());
        assert_eq!(stats.in_use(), 1);
    }

    #[test]
    fn without_a_count_of_waiters_a_full_busy_pool_is_saturated() {
        let mut stats = PoolStats::new(2, 2, 0);
        stats.pending_gets_unknown = true;
        assert!(stats.is_saturated());
        stats.idle_connections = 1;
        assert!(!stats.is_saturated());
        let mut growing = PoolStats::new(2, 1, 0);
        growing.pending_gets_unknown = true;
        assert!(!growing.is_saturated(), "the pool can still open one");
    }
}
