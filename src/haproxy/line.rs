//! The agent's line for now, written by one function: the agent's connections and the
//! operator's page read it alike.

use std::time::Duration;

use bytes::Bytes;

use crate::dialect::haproxy::{
    AgentState, Lines, back_for, degraded, passes_debounced, slow_start, weight_ceiling,
};
use crate::monitor::HealthHandle;
use crate::probe::Probe;

/// The line for now: readiness's judgement and health's (two pointer loads and a clock
/// reading), the slow start's weight from the instant readiness came back, lowered by the
/// load estimate's (an atomic load, when a capacity is set), then one of the lines rendered
/// ahead. What the operator's page shows of the agent, too.
pub(crate) fn line_now(health: &HealthHandle, lines: &Lines, slow_start_window: Duration) -> Bytes {
    let ready = health.judge(Probe::Ready);
    let state = AgentState::of(
        ready.condition,
        ready.passing,
        passes_debounced(&ready, health.known().debounce),
        || {
            // Readiness `degraded`: the fleet guard keeps this instance in rotation while a
            // dependency the fleet shares fails; it takes less traffic meanwhile.
            degraded(ready.condition, ready.status) || {
                let health = health.judge(Probe::Health);
                degraded(health.condition, health.status)
            }
        },
    );
    let ramp = slow_start(back_for(&ready), slow_start_window);
    let ceiling = weight_ceiling(ramp, health.load());
    lines.line(state, ceiling, || health.view())
}
