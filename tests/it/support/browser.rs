//! A real browser: Debian's `chromium`, headless, driven over the DevTools protocol (a
//! WebSocket) to load a page, answer its Basic challenge as a user would, read its live DOM,
//! run checks in it and keep screenshots.
//!
//! Every request the page makes is let through (`Fetch.requestPaused`), a Basic challenge is
//! answered with the credentials given (`Fetch.authRequired`, what a user types into the
//! browser's dialog) or, without any, cancelled as a user would dismiss the dialog (and
//! counted: [`Browser::challenges`]), and a JavaScript dialog (`alert`) is counted and
//! dismissed: a test of a page that must run no script but its own reads
//! [`Browser::dialogs`].

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::bounded;

/// The `chromium` binary, if this machine has one. Under `CI` a missing binary fails the
/// test (`.ci/run` installs Debian's `chromium` package); elsewhere the test is skipped,
/// saying so.
pub fn binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed and CI is set; install it (apt-get install -y chromium)"
        );
        // Written to the process's stderr directly: the harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: chromium is not installed (apt-get install -y chromium); set CI to make this a failure"
        );
    }
    found
}

/// Skips the test (or, under CI, fails it) when Chromium is not installed; else its path.
#[macro_export]
macro_rules! require_chromium {
    () => {
        match $crate::support::browser::binary() {
            Some(binary) => binary,
            None => return,
        }
    };
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A headless Chromium with one page, killed when dropped.
pub struct Browser {
    child: Child,
    dir: PathBuf,
    session: String,
    outgoing: mpsc::UnboundedSender<Value>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    dialogs: Arc<AtomicUsize>,
    challenges: Arc<AtomicUsize>,
    exceptions: Arc<Mutex<Vec<String>>>,
    reader: JoinHandle<()>,
}

impl Browser {
    /// Starts `binary` headless, opens a page, and answers Basic challenges with
    /// `credentials` (user name, password); without, it cancels them, as a user dismissing
    /// the browser's dialog does (a page opened with the credentials in its URL needs none).
    pub async fn start(binary: &Path, credentials: Option<(&str, &str)>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tower-health-chromium-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", dir.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        // `DevTools listening on ws://127.0.0.1:<port>/devtools/browser/<id>`, on stderr.
        let stderr = child.stderr.take().unwrap();
        let endpoint = tokio::task::spawn_blocking(move || {
            let mut lines = BufReader::new(stderr).lines();
            let endpoint = lines.by_ref().map_while(Result::ok).find_map(|line| {
                line.split_once("DevTools listening on ")
                    .map(|(_, url)| url.trim().to_owned())
            });
            // Keep draining, so that Chromium never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            endpoint
        });
        let endpoint = bounded("chromium's DevTools endpoint", endpoint)
            .await
            .unwrap()
            .expect("chromium printed its DevTools endpoint");
        let (socket, _) = bounded(
            "the DevTools WebSocket",
            tokio_tungstenite::connect_async(&endpoint),
        )
        .await
        .expect("the DevTools WebSocket connects");
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut to_send) = mpsc::unbounded_channel::<Value>();
        tokio::spawn(async move {
            while let Some(message) = to_send.recv().await {
                if sink.send(Message::text(message.to_string())).await.is_err() {
                    return;
                }
            }
        });
        let pending: Pending = Arc::default();
        let next_id = Arc::new(AtomicU64::new(1));
        let dialogs = Arc::new(AtomicUsize::new(0));
        let challenges = Arc::new(AtomicUsize::new(0));
        let exceptions = Arc::new(Mutex::new(Vec::new()));
        let credentials =
            credentials.map(|(user, password)| (user.to_owned(), password.to_owned()));
        let reader = {
            let (pending, outgoing, dialogs, challenges, exceptions, next_id) = (
                pending.clone(),
                outgoing.clone(),
                dialogs.clone(),
                challenges.clone(),
                exceptions.clone(),
                next_id.clone(),
            );
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let message: Value = serde_json::from_str(&text).unwrap();
                    if let Some(id) = message["id"].as_u64() {
                        if let Some(waiting) = pending.lock().unwrap().remove(&id) {
                            let _ = waiting.send(message);
                        }
                        continue;
                    }
                    let session = message["sessionId"].clone();
                    let params = &message["params"];
                    let reply = |method: &str, params: Value| {
                        let id = next_id.fetch_add(1, Ordering::Relaxed);
                        let _ = outgoing.send(json!({
                            "id": id, "sessionId": session, "method": method, "params": params,
                        }));
                    };
                    match message["method"].as_str().unwrap_or_default() {
                        "Fetch.requestPaused" => reply(
                            "Fetch.continueRequest",
                            json!({"requestId": params["requestId"]}),
                        ),
                        "Fetch.authRequired" => {
                            challenges.fetch_add(1, Ordering::SeqCst);
                            let response = match &credentials {
                                Some((user, password)) => json!({
                                    "response": "ProvideCredentials",
                                    "username": user,
                                    "password": password,
                                }),
                                None => json!({"response": "CancelAuth"}),
                            };
                            reply(
                                "Fetch.continueWithAuth",
                                json!({
                                    "requestId": params["requestId"],
                                    "authChallengeResponse": response,
                                }),
                            );
                        }
                        "Page.javascriptDialogOpening" => {
                            dialogs.fetch_add(1, Ordering::SeqCst);
                            reply("Page.handleJavaScriptDialog", json!({"accept": true}));
                        }
                        "Runtime.exceptionThrown" => {
                            exceptions.lock().unwrap().push(params.to_string());
                        }
                        _ => {}
                    }
                }
            })
        };
        let mut browser = Self {
            child,
            dir,
            session: String::new(),
            outgoing,
            pending,
            next_id,
            dialogs,
            challenges,
            exceptions,
            reader,
        };
        let targets = browser.call("Target.getTargets", json!({})).await;
        let page = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|target| target["type"] == "page")
            .expect("chromium opened a page")["targetId"]
            .clone();
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": page, "flatten": true}),
            )
            .await;
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        for (method, params) in [
            ("Page.enable", json!({})),
            ("Runtime.enable", json!({})),
            (
                "Fetch.enable",
                json!({"handleAuthRequests": true, "patterns": [{"urlPattern": "*"}]}),
            ),
            (
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
            ),
        ] {
            browser.call(method, params).await;
        }
        browser
    }

    /// Sends `method` (to the page, once attached) and returns its result; fails the test on
    /// a protocol error.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = self.session.clone().into();
        }
        self.outgoing.send(message).unwrap();
        let answer = bounded(method, rx).await.unwrap();
        assert!(answer["error"].is_null(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Loads `url` and waits for its `load` event.
    pub async fn open(&self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        let loaded = super::eventually(super::LIMIT, || async {
            self.eval("document.readyState === 'complete' && location.href !== 'about:blank'")
                .await
                == true
        })
        .await;
        assert!(loaded, "{url} did not load within {:?}", super::LIMIT);
    }

    /// Runs `expression` in the page and returns its value (a promise awaited).
    pub async fn eval(&self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Writes a PNG of the whole page to `path`, and prints where.
    pub async fn screenshot(&self, path: &Path) {
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
        let _ = writeln!(std::io::stderr(), "screenshot: {}", path.display());
    }

    /// JavaScript dialogs (`alert`, `confirm`, `prompt`) the page opened.
    pub fn dialogs(&self) -> usize {
        self.dialogs.load(Ordering::SeqCst)
    }

    /// Basic challenges the browser met (each answered or cancelled).
    pub fn challenges(&self) -> usize {
        self.challenges.load(Ordering::SeqCst)
    }

    /// Exceptions the page's scripts threw, as the protocol reported them.
    pub fn exceptions(&self) -> Vec<String> {
        self.exceptions.lock().unwrap().clone()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.reader.abort();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
