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
    /// Checkouts currently waiting for a connection.
    pub pending_gets: u64,
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

    /// Every connection is busy, the pool cannot grow, and checkouts are waiting.
    #[must_use]
    pub fn is_saturated(&self) -> bool {
        self.max_size > 0
            && self.connections >= self.max_size
            && self.idle_connections == 0
            && self.pending_gets > 0
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
}
