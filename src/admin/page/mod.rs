//! The operator's page (feature `page`): `GET /health/page`, every check's last hour at a
//! glance, and `GET /health/page/updates`, what keeps it current while it is open. See the
//! [guide's page](crate::guide::page).
//!
//! Server-rendered through askama's templates (`page.html`, `main.html` beside this file),
//! which escape every value they write: no text reaches the page by concatenation. It reads
//! right with JavaScript off; with it on, `page.js` asks `/health/page/updates` for the next
//! change (a request the server holds until the view's watch wakes, or for
//! [`UPDATE_WAIT`]) and swaps the page's `<main>` for the one it answers. The style and the
//! script are inlined and allowed by their hashes in a Content-Security-Policy that allows
//! nothing else: no network resource, no inline code but these two.

mod identity;
mod model;
mod timeline;

use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use askama::Template;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use sha2::{Digest, Sha256};

use self::model::Model;
use super::route::PagePath;
use super::state::AdminState;
use crate::access::Role;
use crate::http::ProbeResponse;
use crate::http::render::fixed::METHOD_NOT_ALLOWED;
use crate::http::render::{ProbeBody, Rendered};
use crate::http::request::BodyMode;
use crate::monitor::HealthHandle;
use crate::side_port::Activity;
use crate::verdict::Audience;
use crate::view::View;

/// How long an update request waits for a change before it answers 204 and is asked again:
/// below the idle timeouts of the proxies an operator may reach the port through.
pub(crate) const UPDATE_WAIT: Duration = Duration::from_secs(25);

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The whole page.
#[derive(Template)]
#[template(path = "page.html")]
struct Document<'a> {
    m: &'a Model,
    style: &'static str,
    script: &'static str,
}

/// The page's `<main>` alone, for an update.
#[derive(Template)]
#[template(path = "main.html")]
struct Main<'a> {
    m: &'a Model,
}

/// `'sha256-<base64>'` of `text`, for the Content-Security-Policy.
fn csp_hash(text: &str) -> String {
    use base64::Engine as _;

    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The page's headers: HTML, never cached, and a policy that allows its own inline style
/// and script (by their hashes), requests to its own origin (the updates), and nothing else.
static HEADERS: LazyLock<HeaderMap> = LazyLock::new(|| {
    let policy = format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE),
    );
    let mut headers = HeaderMap::with_capacity(6);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&policy).expect("the policy is ASCII"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
});

/// The answer to a browser without a key (or with a wrong one): 401 with a Basic challenge,
/// so that the browser asks for the key (as the password, any user name), and nothing else.
static CHALLENGE: LazyLock<Rendered> = LazyLock::new(|| {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Basic realm="tower-health", charset="UTF-8""#),
    );
    Rendered::with_headers_of(StatusCode::UNAUTHORIZED, headers, Bytes::new())
});

/// An update request that saw no change within [`UPDATE_WAIT`], or whose server is closing:
/// the script asks again.
static NO_CHANGE: LazyLock<Rendered> = LazyLock::new(|| {
    let mut headers = HeaderMap::with_capacity(1);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Rendered::with_headers_of(StatusCode::NO_CONTENT, headers, Bytes::new())
});

/// Answers one request for a page path: the viewer key (when keys are set) as the password
/// of Basic credentials, or as every admin path takes it; the details as the server's
/// setting says.
pub(super) fn respond<B>(
    state: &AdminState,
    request: &Request<B>,
    path: PagePath,
    activity: &Arc<Activity>,
) -> ProbeResponse {
    let Some(mode) = BodyMode::of(request.method()) else {
        return ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full);
    };
    let role = if state.keys.enabled() {
        match state.keys.browser_role(request.headers()) {
            Ok(role) if role >= Role::Viewer => role,
            _ => return ProbeResponse::fixed(&CHALLENGE, BodyMode::Full),
        }
    } else {
        Role::Anonymous
    };
    let audience = crate::access::audience(state.details, role >= Role::Viewer);
    match path {
        PagePath::Document => {
            let (token, view) = current(&state.health);
            let model = Model::new(
                &state.health,
                &view,
                token,
                audience,
                PagePath::Updates.path(),
            );
            let document = Document {
                m: &model,
                style: STYLE,
                script: SCRIPT,
            };
            ProbeResponse::ready(html(document.render(), mode))
        }
        PagePath::Updates => {
            let after = after(request.uri().query());
            let health = state.health.clone();
            let closing = state.closing.subscribe();
            let update = update(
                health.clone(),
                audience,
                after,
                closing,
                activity.clone(),
                mode,
            );
            ProbeResponse::Fresh(Box::pin(or_when_moved(update, health, audience, mode)))
        }
    }
}

/// The page's `<main>` once it differs from the one `after` names: at once when it already
/// does, else at the view's next change; 204 after [`UPDATE_WAIT`] without one, or when the
/// server closes. While it waits, its connection (`activity`) counts as waiting, not as an
/// answer being made: at the cap, an open page gives its place up to a probe (its script
/// asks again), so that pages never keep the kubelet's probes or an operator's control out.
async fn update(
    health: HealthHandle,
    audience: Audience,
    after: Option<u64>,
    mut closing: tokio::sync::watch::Receiver<bool>,
    activity: Arc<Activity>,
    mode: BodyMode,
) -> Response<ProbeBody> {
    let mut watch = health.watch();
    // Seen by the watch first: `changed` then waits for a view that differs from this one,
    // and a change in between wakes it at once rather than being missed.
    let _ = watch.current();
    let (token, view) = current(&health);
    let (token, view) = if after == Some(token_value(&token)) {
        let waiting = activity.waiting();
        let mut changed = false;
        crate::util::race(
            async {
                changed = watch.changed().await.is_some();
            },
            crate::util::race(tokio::time::sleep(UPDATE_WAIT), async {
                let _ = closing.wait_for(|closing| *closing).await;
            }),
        )
        .await;
        drop(waiting);
        if !changed {
            return NO_CHANGE.response(mode);
        }
        current(&health)
    } else {
        (token, view)
    };
    let model = Model::new(&health, &view, token, audience, PagePath::Updates.path());
    html(Main { m: &model }.render(), mode)
}

/// The view now, and the token that names what it shows: the publications it was read from
/// (the store's generation, read first) and every answer's state, so that a drain's start or
/// a verdict going stale, which publish nothing, change it too; and what moves without
/// touching the view ([`Moving`]: the drain's phase, the agents' lines).
fn current(health: &HealthHandle) -> (String, View) {
    let generation = health.generation();
    let moving = Moving::read(health);
    let view = health.view();
    let mut hasher = DefaultHasher::new();
    generation.hash(&mut hasher);
    view.draining.hash(&mut hasher);
    view.held.hash(&mut hasher);
    for answer in view.answers() {
        (answer.passing, answer.condition, answer.status).hash(&mut hasher);
    }
    moving.drain.phase.hash(&mut hasher);
    moving.agents.hash(&mut hasher);
    (format!("{:016x}", hasher.finish()), view)
}

/// How often an open page reads again what the page shows that moves without waking the
/// view's watch (the drain's figures while it runs, an agent's weight as it ramps): at most
/// one answer a second for them, however fast requests end during a drain.
const MOVING_EVERY: Duration = Duration::from_secs(1);

/// What the page shows that moves without a publication: the drain's figures (its phase,
/// the requests in flight, the long-lived connections) and what the HAProxy agents say.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Moving {
    drain: crate::shutdown::progress::DrainStamp,
    agents: Vec<String>,
}

impl Moving {
    fn read(health: &HealthHandle) -> Self {
        #[cfg(feature = "haproxy-agent")]
        let agents = crate::haproxy::running::lines_now(health)
            .into_iter()
            .map(|agent| agent.line)
            .collect();
        #[cfg(not(feature = "haproxy-agent"))]
        let agents = Vec::new();
        Self {
            drain: health.drain().stamp(),
            agents,
        }
    }

    /// Whether it moves with the clock alone: a drain that runs, an agent whose line may
    /// change (its weight ramps with the time since the return).
    fn ticks(&self) -> bool {
        self.drain.phase.is_running() || !self.agents.is_empty()
    }
}

/// `update`, or the page's `<main>` once what [`Moving`] reads has moved since the request
/// came (read again every [`MOVING_EVERY`] while it moves with the clock; else woken by the
/// drain's start).
async fn or_when_moved(
    update: impl Future<Output = Response<ProbeBody>>,
    health: HealthHandle,
    audience: Audience,
    mode: BodyMode,
) -> Response<ProbeBody> {
    let seen = Moving::read(&health);
    let moved = async {
        loop {
            if !seen.ticks() {
                health.drain().progressed(seen.drain).await;
            }
            tokio::time::sleep(MOVING_EVERY).await;
            if Moving::read(&health) != seen {
                return;
            }
        }
    };
    let mut answer = None;
    crate::util::race(
        async {
            answer = Some(update.await);
        },
        moved,
    )
    .await;
    answer.unwrap_or_else(|| {
        let (token, view) = current(&health);
        let model = Model::new(&health, &view, token, audience, PagePath::Updates.path());
        html(Main { m: &model }.render(), mode)
    })
}

fn token_value(token: &str) -> u64 {
    u64::from_str_radix(token, 16).unwrap_or_default()
}

/// The `after` query parameter: the token of the page the script shows.
fn after(query: Option<&str>) -> Option<u64> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("after="))
        .and_then(|token| u64::from_str_radix(token, 16).ok())
}

/// An HTML response; a template that fails to render (it cannot: every value it writes is
/// plain text) answers 500 rather than a half page.
fn html(rendered: askama::Result<String>, mode: BodyMode) -> Response<ProbeBody> {
    match rendered {
        Ok(page) => Rendered::with_headers_of(StatusCode::OK, HEADERS.clone(), Bytes::from(page))
            .response(mode),
        Err(error) => {
            tracing::error!(%error, "the operator's page failed to render");
            let mut headers = HeaderMap::with_capacity(1);
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            Rendered::with_headers_of(StatusCode::INTERNAL_SERVER_ERROR, headers, Bytes::new())
                .response(mode)
        }
    }
}

#[cfg(test)]
mod tests;
