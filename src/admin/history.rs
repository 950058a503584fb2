//! `GET /health/history`: every check's history as JSON, for tools; the same data the page
//! shows, at the same detail level.

use std::time::{Duration, SystemTime};

use http::StatusCode;
use serde_json::{Value, json};

use crate::http::render::Rendered;
use crate::monitor::history::{
    CheckHistory, FLAP_WINDOW_MINUTES, ROUNDS_KEPT, Sample, TRANSITIONS_KEPT, Transition,
};
use crate::verdict::{Audience, CheckStatus};

/// What of a history `audience` sees: names, statuses, error categories, times and flap
/// counts at every level; latencies, targets and error text only with details, as in every
/// body ([`Details`](crate::config::Details)). The JSON and the page both ask here.
pub(super) fn shows_details(audience: Audience) -> bool {
    match audience {
        Audience::Full => true,
        Audience::Minimal => false,
    }
}

/// The body of `/health/history` for `audience`.
pub(super) fn response(histories: &[CheckHistory], audience: Audience) -> Rendered {
    let body = json!({
        "rounds_kept": ROUNDS_KEPT,
        "transitions_kept": TRANSITIONS_KEPT,
        "flap_window_minutes": FLAP_WINDOW_MINUTES,
        "checks": histories
            .iter()
            .map(|history| check(history, shows_details(audience)))
            .collect::<Vec<_>>(),
    });
    let body = serde_json::to_vec(&body).expect("a serde_json::Value always serializes");
    Rendered::json(StatusCode::OK, body)
}

fn check(history: &CheckHistory, details: bool) -> Value {
    json!({
        "name": &*history.name,
        "type": history.kind.as_str(),
        "critical": history.critical,
        "target": history.target.as_deref().filter(|_| details),
        "flaps": history.flaps,
        "rounds": history.rounds.iter().map(|round| self::round(round, details)).collect::<Vec<_>>(),
        "transitions": history
            .transitions
            .iter()
            .map(|transition| self::transition(transition, details))
            .collect::<Vec<_>>(),
    })
}

fn round(round: &Sample, details: bool) -> Value {
    json!({
        "at_ms": round.at_ms(),
        "status": round.status.as_str(),
        "error_kind": round.kind.map(|kind| kind.as_str()),
        "elapsed_ms": details.then(|| millis(round.elapsed())),
    })
}

fn transition(transition: &Transition, details: bool) -> Value {
    json!({
        "at": timestamp(transition.at),
        "from": transition.from.map(CheckStatus::as_str),
        "to": transition.to.as_str(),
        "error_kind": transition.kind.map(|kind| kind.as_str()),
        "cause": transition.cause.as_deref().filter(|_| details),
    })
}

fn millis(duration: Duration) -> f64 {
    // Microseconds in an `f64`: exact below 2^53 µs (285 years).
    #[allow(clippy::cast_precision_loss)]
    let micros = duration.as_micros() as f64;
    micros / 1000.0
}

/// `at` in RFC 3339, to the millisecond.
pub(super) fn timestamp(at: SystemTime) -> String {
    // 9999-12-31T23:59:59.999Z: the last instant RFC 3339 holds (the formatter panics past it).
    let last = SystemTime::UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
    humantime::format_rfc3339_millis(at.min(last)).to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::check::{CheckError, CheckErrorKind};
    use crate::monitor::history::{CheckKind, History};
    use crate::verdict::CheckOutcome;

    fn history() -> CheckHistory {
        let history = History::new();
        let mut outcome = CheckOutcome {
            name: "default".into(),
            status: CheckStatus::Passed,
            elapsed: Duration::from_micros(1_500),
            running_for: None,
            error: None,
            detail: None,
            critical: true,
            target: None,
            details: None,
        };
        history.record(&outcome, Some(Instant::now()));
        outcome.status = CheckStatus::Failed;
        outcome.error = Some(CheckError::new(
            CheckErrorKind::Refused,
            "db.internal:5432: Connection refused",
        ));
        history.record(&outcome, None);
        history.snapshot(
            Arc::from("default"),
            CheckKind::Database,
            true,
            Some(Arc::from("db.internal:5432/app")),
        )
    }

    fn body(audience: Audience) -> Value {
        let rendered = response(&[history()], audience);
        let text = futures_body(&rendered);
        serde_json::from_str(&text).unwrap()
    }

    fn futures_body(rendered: &Rendered) -> String {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(rendered.body_text())
    }

    #[test]
    fn details_show_latencies_targets_and_causes() {
        let body = body(Audience::Full);
        let check = &body["checks"][0];
        assert_eq!(check["name"], "default");
        assert_eq!(check["type"], "database");
        assert_eq!(check["target"], "db.internal:5432/app");
        assert_eq!(check["flaps"], 1);
        assert_eq!(check["rounds"][0]["status"], "passed");
        assert_eq!(check["rounds"][0]["elapsed_ms"], 1.5);
        assert_eq!(check["rounds"][1]["error_kind"], "refused");
        let transition = &check["transitions"][1];
        assert_eq!(
            (&transition["from"], &transition["to"]),
            (&json!("passed"), &json!("failed"))
        );
        assert_eq!(transition["cause"], "db.internal:5432: Connection refused");
        assert_eq!(body["rounds_kept"], 3600);
    }

    #[test]
    fn without_details_statuses_categories_and_names_only() {
        let body = body(Audience::Minimal);
        let check = &body["checks"][0];
        assert_eq!(check["name"], "default");
        assert_eq!(check["target"], Value::Null);
        assert_eq!(check["rounds"][0]["elapsed_ms"], Value::Null);
        assert_eq!(check["rounds"][1]["error_kind"], "refused");
        assert_eq!(check["transitions"][1]["cause"], Value::Null);
        assert_eq!(check["transitions"][1]["error_kind"], "refused");
        let text = body.to_string();
        assert!(!text.contains("db.internal"), "{text}");
    }
}
