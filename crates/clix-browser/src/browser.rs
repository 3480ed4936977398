//! One headless Chromium in the sandbox, its tabs, and the actions the
//! `browser` command offers on them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use clix_sandbox::{Sandbox, SandboxError, Service, ServiceRequest};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::cdp::{Cdp, CdpError, Event, pipe};
use crate::keys::key_event;
use crate::settings::{BrowserSettings, HostRules, host_of};
use crate::snapshot::{Rendered, SnapshotOptions, render};

/// Names looked up on PATH when `[browser] executable` is not set.
pub const CANDIDATES: &[&str] = &["chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"];

/// A single protocol call that is not a page load: answered in well under this.
const CALL_LIMIT: Duration = Duration::from_secs(10);
/// How long an action waits for a navigation it may have started.
const SETTLE: Duration = Duration::from_millis(25);
/// Lines of a new page shown after an action navigated.
const NAVIGATED_LINES: usize = 25;
/// Changed lines shown after an action, each way.
const CHANGED_LINES: usize = 20;
/// How often `wait` looks again.
const POLL: Duration = Duration::from_millis(50);

/// Why a browser command failed; each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium to run.
    #[error(
        "no Chromium found (looked for {looked} on PATH). Install it: apt-get install chromium-headless-shell \
         (or chromium), or set [browser] executable in config.toml"
    )]
    NotInstalled {
        /// What was looked for.
        looked: String,
    },
    /// The sandbox cannot start it.
    #[error("{0}")]
    Sandbox(#[from] SandboxError),
    /// It started but did not answer, or died.
    #[error("the browser did not start: {0}")]
    Start(String),
    /// A page outside the network allowance.
    #[error(
        "{url}: {host} is not allowed: with sandbox.network off the browser reaches only loopback, file:// pages \
         and the hosts in [browser] allow ({allowed}). To open it, add \"{host}\" to [browser] allow in config.toml"
    )]
    Blocked {
        /// The page asked for.
        url: String,
        /// Its host.
        host: String,
        /// The allow list in force, for the message.
        allowed: String,
    },
    /// A page that could not load.
    #[error("{url}: {reason}")]
    Load {
        /// The page asked for.
        url: String,
        /// Chromium's network error.
        reason: String,
    },
    /// A ref the agent gave that means nothing now.
    #[error("{0}")]
    Ref(String),
    /// An element that cannot take this action.
    #[error("{0}")]
    Element(String),
    /// Waited too long.
    #[error("timed out after {ms} ms {what}")]
    Timeout {
        /// What was being waited for, worded to follow "timed out after N ms".
        what: String,
        /// How long.
        ms: u128,
    },
    /// The browser went away, or answered with an error.
    #[error("{0}")]
    Protocol(String),
    /// A wrong argument (a bad tab number, a disabled feature).
    #[error("{0}")]
    Usage(String),
}

impl BrowserError {
    /// The exit code a command line sees.
    pub fn exit_code(&self) -> i32 {
        match self {
            BrowserError::Timeout { .. } => 124,
            BrowserError::Usage(_) => 2,
            BrowserError::NotInstalled { .. } => 127,
            _ => 1,
        }
    }
}

impl From<CdpError> for BrowserError {
    fn from(e: CdpError) -> Self {
        match e {
            CdpError::Closed => BrowserError::Protocol(
                "the browser is no longer running (it crashed or was closed); the next browser command starts a new one"
                    .into(),
            ),
            CdpError::Timeout(method, ms) => BrowserError::Timeout { what: format!("waiting for the browser ({method})"), ms },
            CdpError::Protocol(m) => BrowserError::Protocol(m),
        }
    }
}

type Result<T> = std::result::Result<T, BrowserError>;

/// Where a page element a ref names lives.
#[derive(Debug, Clone)]
struct RefTarget {
    target: String,
    document: String,
    backend: i64,
}

/// One tab: its target and protocol session, and its last snapshot (what
/// an action's result is compared with).
#[derive(Debug, Clone)]
struct Tab {
    target: String,
    session: String,
    last: Vec<String>,
}

/// What an action did to the page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// The page navigated to a new document.
    pub navigated: bool,
    /// The page's address and title after the action.
    pub url: String,
    /// The title after the action.
    pub title: String,
    /// Lines that appeared (or, after a navigation, the start of the new page).
    pub added: Vec<String>,
    /// Lines that went away (empty after a navigation).
    pub removed: Vec<String>,
    /// Lines left out of `added` and `removed` to keep the result short.
    pub more: usize,
    /// Tabs the action opened, by number.
    pub new_tabs: Vec<usize>,
}

/// A snapshot: the text and the refs in it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Snapshot {
    /// The page's address.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The lines.
    pub lines: Vec<String>,
    /// Refs and what they are, in order.
    pub refs: Vec<String>,
}

/// A tab as `browser tabs` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TabInfo {
    /// 1-based number, as `tabs switch N` takes it.
    pub number: usize,
    /// The tab being acted on.
    pub current: bool,
    /// Its address.
    pub url: String,
    /// Its title.
    pub title: String,
}

/// What `wait` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitFor {
    /// Text somewhere on the page.
    Text(String),
    /// The address matching a pattern (`*` any characters; otherwise a substring).
    Url(String),
    /// The page finished loading.
    Load,
    /// A fixed time.
    Ms(u64),
}

/// What `get` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// Visible text.
    Text,
    /// HTML.
    Html,
    /// A form field's value.
    Value,
    /// The address.
    Url,
    /// The title.
    Title,
}

/// The browser of one engine session.
pub struct Browser {
    service: Option<Service>,
    cdp: Cdp,
    tabs: Vec<Tab>,
    current: usize,
    rules: HostRules,
    settings: BrowserSettings,
    next_ref: u64,
    refs: HashMap<String, RefTarget>,
    by_node: HashMap<(String, String, i64), String>,
    /// The profile folder, as Chromium's command line names it.
    profile: PathBuf,
    /// A profile folder on the host (host mode only), removed at close.
    host_profile: Option<PathBuf>,
    /// When it was started, for the benchmark's cold start.
    pub started: Instant,
}

/// The Chromium `settings` names, or the first candidate on PATH.
pub fn find_executable(settings: &BrowserSettings, path_var: Option<&str>) -> Result<PathBuf> {
    if let Some(exe) = &settings.executable {
        return if is_executable(exe) {
            Ok(exe.clone())
        } else {
            Err(BrowserError::NotInstalled { looked: format!("[browser] executable = {}", exe.display()) })
        };
    }
    let path = path_var.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    CANDIDATES
        .iter()
        .flat_map(|name| path.split(':').filter(|d| !d.is_empty()).map(move |dir| Path::new(dir).join(name)))
        .find(|p| is_executable(p))
        .ok_or_else(|| BrowserError::NotInstalled { looked: CANDIDATES.join(", ") })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl Browser {
    /// Starts Chromium in `sandbox`, downloads going to `downloads` (a
    /// folder of the workspace the caller made), and opens one blank tab.
    pub async fn launch(
        settings: &BrowserSettings,
        sandbox: &Sandbox,
        workspace: &Path,
        downloads: &Path,
    ) -> Result<Browser> {
        let started = Instant::now();
        let exe = find_executable(settings, std::env::var("PATH").ok().as_deref())?;
        let rules = HostRules { open: sandbox.settings().network, allow: settings.allow.clone() };
        let sandboxed = sandbox.settings().mode != clix_sandbox::SandboxMode::Host;
        // Named after this process, so a person (and a test) can tell whose browser a Chromium is.
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("clix-browser-{}-{n}", std::process::id());
        // In the sandbox /tmp is private; on the host it is shared, and the folder is removed at close.
        let profile = if sandboxed { Path::new("/tmp").join(&name) } else { std::env::temp_dir().join(&name) };
        let host_profile = (!sandboxed).then(|| profile.clone());
        let argv = chromium_argv(&exe, settings, &rules, &profile);
        let mut read_only: Vec<PathBuf> = ["/etc/fonts"].iter().map(PathBuf::from).filter(|p| p.exists()).collect();
        // A Chromium outside the system folders (/opt/google/chrome) needs its own folder.
        if let Ok(real) = std::fs::canonicalize(&exe)
            && let Some(dir) = real.parent()
            && !clix_sandbox::SYSTEM_DIRS.iter().any(|s| dir.starts_with(s))
        {
            read_only.push(dir.to_path_buf());
        }
        let io = |e: std::io::Error| BrowserError::Start(e.to_string());
        let (child_reads, we_write) = pipe().map_err(io)?;
        let (we_read, child_writes) = pipe().map_err(io)?;
        let request = ServiceRequest {
            argv: &argv,
            cwd: workspace,
            read_only: &read_only,
            share_network: true,
            fds: vec![(3, child_reads), (4, child_writes)],
        };
        let mut service = sandbox.start_service(request).await?;
        let cdp = Cdp::new(we_write, we_read);
        if let Err(e) = cdp.call(None, "Browser.getVersion", json!({}), CALL_LIMIT).await {
            let exit = service.exited().map(|c| format!(" (exit {c})")).unwrap_or_default();
            let tail = service.stderr_tail();
            let tail: Vec<&str> = tail.lines().filter(|l| !l.contains("dbus")).rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(BrowserError::Start(format!("{e}{exit}; its last output: {}", tail.join(" | "))));
        }
        let mut browser = Browser {
            service: Some(service),
            cdp,
            tabs: Vec::new(),
            current: 0,
            rules,
            settings: settings.clone(),
            next_ref: 1,
            refs: HashMap::new(),
            by_node: HashMap::new(),
            profile,
            host_profile,
            started,
        };
        browser
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({"behavior": "allow", "downloadPath": downloads, "eventsEnabled": true}),
            )
            .await?;
        browser.call(None, "Target.setDiscoverTargets", json!({"discover": true})).await?;
        let targets = browser.page_targets().await?;
        match targets.first() {
            Some(target) => {
                let tab = browser.attach(&target.0).await?;
                browser.tabs.push(tab);
            }
            None => {
                browser.new_tab().await?;
            }
        }
        tracing::debug!(executable = %exe.display(), ms = started.elapsed().as_millis() as u64, "browser: started");
        Ok(browser)
    }

    /// The profile folder Chromium was started with (its command line names it).
    pub fn profile(&self) -> &Path {
        &self.profile
    }

    /// Whether the browser process is still there.
    pub fn alive(&mut self) -> bool {
        self.service.as_mut().is_some_and(|s| s.exited().is_none())
    }

    /// Ends the browser and everything it started.
    pub async fn close(mut self) {
        if let Some(service) = self.service.take() {
            service.stop().await;
        }
        if let Some(dir) = self.host_profile.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        Ok(self.cdp.call(session, method, params, CALL_LIMIT).await?)
    }

    fn tab(&self) -> Result<&Tab> {
        self.tabs.get(self.current).ok_or_else(|| BrowserError::Protocol("no tab is open; browser tabs new".into()))
    }

    async fn on_page(&self, method: &str, params: Value) -> Result<Value> {
        let session = self.tab()?.session.clone();
        self.call(Some(&session), method, params).await
    }

    /// `(target id, url, title)` of every page, in the browser's order.
    async fn page_targets(&self) -> Result<Vec<(String, String, String)>> {
        let answer = self.call(None, "Target.getTargets", json!({})).await?;
        let infos = answer.get("targetInfos").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(infos
            .iter()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("page"))
            .map(|t| {
                let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                (field("targetId"), field("url"), field("title"))
            })
            .collect())
    }

    async fn attach(&self, target: &str) -> Result<Tab> {
        let answer = self.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true})).await?;
        let session = answer.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();
        for method in ["Page.enable", "Runtime.enable", "Accessibility.enable"] {
            self.call(Some(&session), method, json!({})).await?;
        }
        Ok(Tab { target: target.to_string(), session, last: Vec::new() })
    }

    /// Tabs the page opened itself (`target=_blank`, `window.open`), attached at the end.
    async fn adopt_new_tabs(&mut self) -> Result<Vec<usize>> {
        let mut opened = Vec::new();
        for (target, _, _) in self.page_targets().await? {
            if !self.tabs.iter().any(|t| t.target == target) {
                let tab = self.attach(&target).await?;
                self.tabs.push(tab);
                opened.push(self.tabs.len());
            }
        }
        Ok(opened)
    }

    /// The current document of the current tab (its loader id).
    async fn document(&self) -> Result<String> {
        let tree = self.on_page("Page.getFrameTree", json!({})).await?;
        Ok(tree.pointer("/frameTree/frame/loaderId").and_then(Value::as_str).unwrap_or_default().to_string())
    }

    async fn eval(&self, expression: &str) -> Result<Value> {
        let answer = self
            .on_page("Runtime.evaluate", json!({"expression": expression, "returnByValue": true, "awaitPromise": true}))
            .await?;
        if let Some(exception) = answer.get("exceptionDetails") {
            let text = exception
                .pointer("/exception/description")
                .or_else(|| exception.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("an exception");
            return Err(BrowserError::Element(format!("the script threw: {text}")));
        }
        Ok(answer.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    async fn url_and_title(&self) -> Result<(String, String)> {
        let v = self.eval("[location.href, document.title]").await?;
        let part = |i: usize| v.get(i).and_then(Value::as_str).unwrap_or_default().to_string();
        Ok((part(0), part(1)))
    }

    /// The limit for a page load: the setting, capped by the caller's.
    fn load_limit(&self, limit: Duration) -> Duration {
        Duration::from_secs(self.settings.load_timeout_secs).min(limit)
    }

    /// `browser open URL`: loads it in the current tab and waits for the load.
    pub async fn open(&mut self, url: &str, cwd: &Path, limit: Duration) -> Result<Change> {
        let url = normalize_url(url, cwd);
        if !self.rules.allows(&url) {
            return Err(self.blocked(&url));
        }
        let mut events = self.cdp.subscribe();
        let answer = self.on_page("Page.navigate", json!({"url": url})).await?;
        if let Some(reason) = answer.get("errorText").and_then(Value::as_str) {
            return Err(self.load_error(&url, reason));
        }
        let session = self.tab()?.session.clone();
        self.wait_for_load(&mut events, &session, self.load_limit(limit), &format!("waiting for {url} to load"))
            .await?;
        self.tabs[self.current].last.clear();
        self.observe(true).await
    }

    fn blocked(&self, url: &str) -> BrowserError {
        let allowed = if self.rules.allow.is_empty() { "none".into() } else { self.rules.allow.join(", ") };
        BrowserError::Blocked { url: url.into(), host: host_of(url).unwrap_or_default(), allowed }
    }

    fn load_error(&self, url: &str, reason: &str) -> BrowserError {
        if reason.contains("ERR_NAME_NOT_RESOLVED") && !self.rules.allows(url) {
            return self.blocked(url);
        }
        let hint = if reason.contains("ERR_CONNECTION_REFUSED") {
            "; nothing listens there: is the server running?"
        } else if reason.contains("ERR_FILE_NOT_FOUND") {
            "; no such file in the workspace"
        } else {
            ""
        };
        BrowserError::Load { url: url.into(), reason: format!("{reason}{hint}") }
    }

    async fn wait_for_load(
        &self,
        events: &mut broadcast::Receiver<Event>,
        session: &str,
        limit: Duration,
        what: &str,
    ) -> Result<()> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, events.recv()).await {
                Err(_) => {
                    return Err(BrowserError::Timeout {
                        what: format!(
                            "{what}; the page may still be loading: browser wait --load, or browser snapshot to see what is there"
                        ),
                        ms: limit.as_millis(),
                    });
                }
                Ok(Ok(e)) if e.method == "Page.loadEventFired" && e.session.as_deref() == Some(session) => {
                    return Ok(());
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return Err(CdpError::Closed.into()),
                Ok(_) => {}
            }
        }
    }

    /// After an action: waits briefly for a navigation it started (and then
    /// for the load), takes a snapshot and tells what changed.
    async fn settle(
        &mut self,
        mut events: broadcast::Receiver<Event>,
        before: String,
        limit: Duration,
    ) -> Result<Change> {
        let session = self.tab()?.session.clone();
        let end = Instant::now() + SETTLE;
        let mut navigating = false;
        while let Ok(Ok(e)) = tokio::time::timeout(end.saturating_duration_since(Instant::now()), events.recv()).await {
            let main_frame = e.params.get("frameId").is_some() && e.params.pointer("/frame/parentId").is_none();
            if e.session.as_deref() == Some(session.as_str())
                && main_frame
                && matches!(
                    e.method.as_str(),
                    "Page.frameRequestedNavigation" | "Page.frameStartedLoading" | "Page.frameNavigated"
                )
            {
                navigating = true;
                break;
            }
        }
        if navigating {
            self.wait_for_load(&mut events, &session, self.load_limit(limit), "waiting for the page it opened to load")
                .await?;
        }
        let navigated = self.document().await? != before;
        if navigated {
            self.tabs[self.current].last.clear();
        }
        let mut change = self.observe(navigated).await?;
        change.new_tabs = self.adopt_new_tabs().await?;
        Ok(change)
    }

    /// Takes the compact snapshot and compares it with the tab's last.
    async fn observe(&mut self, navigated: bool) -> Result<Change> {
        let (url, title) = self.url_and_title().await?;
        let rendered = self.rendered(SnapshotOptions { compact: true, ..Default::default() }, None).await?;
        let tab = &mut self.tabs[self.current];
        let before = std::mem::replace(&mut tab.last, rendered.lines.clone());
        let mut change =
            Change { navigated, url, title, added: Vec::new(), removed: Vec::new(), more: 0, new_tabs: Vec::new() };
        if navigated || before.is_empty() {
            change.more = rendered.lines.len().saturating_sub(NAVIGATED_LINES);
            change.added = rendered.lines.into_iter().take(NAVIGATED_LINES).collect();
            change.navigated = true;
            return Ok(change);
        }
        let (added, removed) = line_diff(&before, &rendered.lines);
        change.more = added.len().saturating_sub(CHANGED_LINES) + removed.len().saturating_sub(CHANGED_LINES);
        change.added = added.into_iter().take(CHANGED_LINES).collect();
        change.removed = removed.into_iter().take(CHANGED_LINES).collect();
        Ok(change)
    }

    async fn rendered(&mut self, options: SnapshotOptions, root: Option<i64>) -> Result<Rendered> {
        let tree = self.on_page("Accessibility.getFullAXTree", json!({})).await?;
        let nodes = tree.get("nodes").and_then(Value::as_array).cloned().unwrap_or_default();
        let document = self.document().await?;
        let target = self.tab()?.target.clone();
        let (refs, by_node, next) = (&mut self.refs, &mut self.by_node, &mut self.next_ref);
        let mut ref_for = |backend: i64| {
            by_node
                .entry((target.clone(), document.clone(), backend))
                .or_insert_with(|| {
                    let name = format!("e{next}");
                    *next += 1;
                    refs.insert(
                        name.clone(),
                        RefTarget { target: target.clone(), document: document.clone(), backend },
                    );
                    name
                })
                .clone()
        };
        Ok(render(&nodes, options, root, &mut ref_for))
    }

    /// `browser snapshot`: the page as lines with refs; `selector` scopes it.
    pub async fn snapshot(&mut self, options: SnapshotOptions, selector: Option<&str>) -> Result<Snapshot> {
        let root = match selector {
            Some(selector) => Some(self.query(selector).await?),
            None => None,
        };
        let rendered = self.rendered(options, root).await?;
        if root.is_none() {
            // What the next action is compared with.
            let compact = self.rendered(SnapshotOptions { compact: true, ..Default::default() }, None).await?;
            self.tabs[self.current].last = compact.lines;
        }
        let (url, title) = self.url_and_title().await?;
        Ok(Snapshot { url, title, lines: rendered.lines, refs: rendered.refs.into_iter().map(|(r, _)| r).collect() })
    }

    /// The whole accessibility tree as Chromium sends it (for measuring).
    pub async fn full_tree_bytes(&self) -> Result<usize> {
        let tree = self.on_page("Accessibility.getFullAXTree", json!({})).await?;
        Ok(tree.to_string().len())
    }

    /// The DOM node a CSS selector names.
    async fn query(&self, selector: &str) -> Result<i64> {
        let document = self.on_page("DOM.getDocument", json!({"depth": 0})).await?;
        let root = document.pointer("/root/nodeId").cloned().unwrap_or(json!(0));
        let found = self
            .on_page("DOM.querySelector", json!({"nodeId": root, "selector": selector}))
            .await
            .map_err(|e| BrowserError::Usage(format!("bad selector {selector:?}: {e}")))?;
        let node = found.get("nodeId").and_then(Value::as_i64).unwrap_or(0);
        if node == 0 {
            return Err(BrowserError::Element(format!("nothing on the page matches {selector:?}")));
        }
        let described = self.on_page("DOM.describeNode", json!({"nodeId": node})).await?;
        described
            .pointer("/node/backendNodeId")
            .and_then(Value::as_i64)
            .ok_or_else(|| BrowserError::Element(format!("{selector:?} has no node")))
    }

    /// The DOM node of `@eN` on the current page, or why there is none.
    async fn element(&self, reference: &str) -> Result<i64> {
        let name = reference.trim_start_matches('@');
        let target = self.refs.get(name).ok_or_else(|| {
            BrowserError::Ref(format!(
                "no element {reference}: refs come from the last snapshot; take one: browser snapshot -i"
            ))
        })?;
        let tab = self.tab()?;
        if target.target != tab.target {
            let number = self.tabs.iter().position(|t| t.target == target.target).map(|i| i + 1);
            return Err(BrowserError::Ref(match number {
                Some(n) => format!("{reference} is on tab {n}: browser tabs switch {n}"),
                None => format!("{reference} was on a tab that is closed; take a new snapshot: browser snapshot -i"),
            }));
        }
        if target.document != self.document().await? {
            return Err(BrowserError::Ref(format!(
                "{reference} is stale: the page navigated since that snapshot; take a new one: browser snapshot -i"
            )));
        }
        Ok(target.backend)
    }

    /// Runs `function` (a JS function source) with `this` = the element.
    async fn on_element(&self, backend: i64, function: &str, args: &[Value]) -> Result<Value> {
        let resolved = self.on_page("DOM.resolveNode", json!({"backendNodeId": backend})).await.map_err(|_| {
            BrowserError::Ref(
                "that element is gone from the page (it changed); take a new snapshot: browser snapshot -i".into(),
            )
        })?;
        let object = resolved.pointer("/object/objectId").cloned().unwrap_or(Value::Null);
        let arguments: Vec<Value> = args.iter().map(|a| json!({"value": a})).collect();
        let answer = self
            .on_page(
                "Runtime.callFunctionOn",
                json!({"objectId": object, "functionDeclaration": function, "arguments": arguments,
                       "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(exception) = answer.get("exceptionDetails") {
            let text = exception.pointer("/exception/description").and_then(Value::as_str).unwrap_or("an exception");
            return Err(BrowserError::Element(text.lines().next().unwrap_or(text).to_string()));
        }
        Ok(answer.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    /// The centre of the element on screen, scrolled into view first.
    async fn centre(&self, reference: &str, backend: i64) -> Result<(f64, f64)> {
        let _ = self.on_page("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": backend})).await;
        let quads = self.on_page("DOM.getContentQuads", json!({"backendNodeId": backend})).await.ok();
        let quad: Vec<f64> = quads
            .as_ref()
            .and_then(|q| q.pointer("/quads/0"))
            .and_then(Value::as_array)
            .map(|q| q.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if quad.len() != 8 {
            return Err(BrowserError::Element(format!(
                "{reference} is not visible on the page (it has no box); scroll or open what hides it, then take a new snapshot"
            )));
        }
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        Ok((x, y))
    }

    async fn mouse(&self, kind: &str, (x, y): (f64, f64), clicks: u32) -> Result<()> {
        let button = if kind == "mouseMoved" { "none" } else { "left" };
        self.on_page(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": button, "clickCount": clicks}),
        )
        .await?;
        Ok(())
    }

    /// Starts an action: the events it may cause, and the document before it.
    async fn begin(&self) -> Result<(broadcast::Receiver<Event>, String)> {
        let events = self.cdp.subscribe();
        Ok((events, self.document().await?))
    }

    /// `browser click @eN`.
    pub async fn click(&mut self, reference: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let at = self.centre(reference, backend).await?;
        let (events, before) = self.begin().await?;
        self.mouse("mouseMoved", at, 0).await?;
        self.mouse("mousePressed", at, 1).await?;
        self.mouse("mouseReleased", at, 1).await?;
        self.settle(events, before, limit).await
    }

    /// `browser hover @eN`.
    pub async fn hover(&mut self, reference: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let at = self.centre(reference, backend).await?;
        let (events, before) = self.begin().await?;
        self.mouse("mouseMoved", at, 0).await?;
        self.settle(events, before, limit).await
    }

    /// `browser fill @eN TEXT`: replaces the field's value, as typing would.
    pub async fn fill(&mut self, reference: &str, text: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        self.focus_field(reference, backend, true).await?;
        let (events, before) = self.begin().await?;
        self.on_page("Input.insertText", json!({"text": text})).await?;
        self.on_element(backend, "function() { this.dispatchEvent(new Event('change', {bubbles: true})); }", &[])
            .await?;
        self.settle(events, before, limit).await
    }

    /// `browser type @eN TEXT`: types after what is there, key by key.
    pub async fn type_text(&mut self, reference: &str, text: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        self.focus_field(reference, backend, false).await?;
        let (events, before) = self.begin().await?;
        for ch in text.chars() {
            let s = ch.to_string();
            self.on_page("Input.dispatchKeyEvent", json!({"type": "keyDown", "text": s, "key": s})).await?;
            self.on_page("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": s})).await?;
        }
        self.settle(events, before, limit).await
    }

    async fn focus_field(&self, reference: &str, backend: i64, clear: bool) -> Result<()> {
        let editable = self
            .on_element(
                backend,
                "function(clear) { const f = this; \
                   const field = f.isContentEditable || ['INPUT','TEXTAREA'].includes(f.tagName); \
                   if (!field) return f.tagName === 'SELECT' ? 'select' : 'no'; \
                   if (f.disabled || f.readOnly) return 'disabled'; \
                   f.focus(); \
                   if (clear) { if (f.isContentEditable) { f.textContent = ''; } else { f.select(); f.value = ''; } } \
                   return 'ok'; }",
                &[json!(clear)],
            )
            .await?;
        match editable.as_str() {
            Some("ok") => Ok(()),
            Some("select") => Err(BrowserError::Element(format!(
                "{reference} is a drop-down; choose with: browser select {reference} VALUE"
            ))),
            Some("disabled") => Err(BrowserError::Element(format!("{reference} is disabled or read-only"))),
            _ => Err(BrowserError::Element(format!(
                "{reference} is not a text field; fill and type work on textboxes (look for textbox in browser snapshot -i)"
            ))),
        }
    }

    /// `browser press KEY` (Enter, Tab, Escape, ArrowDown, a letter…), on the focused element.
    pub async fn press(&mut self, key: &str, limit: Duration) -> Result<Change> {
        let (down, up) = key_event(key).ok_or_else(|| {
            BrowserError::Usage(format!(
                "unknown key {key:?}; use Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp/Down/Left/Right, \
                 Home, End, PageUp, PageDown, or one character"
            ))
        })?;
        let (events, before) = self.begin().await?;
        self.on_page("Input.dispatchKeyEvent", down).await?;
        self.on_page("Input.dispatchKeyEvent", up).await?;
        self.settle(events, before, limit).await
    }

    /// `browser select @eN VALUE`: picks an option by value or visible text.
    pub async fn select(&mut self, reference: &str, value: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let (events, before) = self.begin().await?;
        let outcome = self
            .on_element(
                backend,
                "function(v) { if (this.tagName !== 'SELECT') return {error: 'not'}; \
                   const o = [...this.options].find(o => o.value === v) || [...this.options].find(o => o.text.trim() === v); \
                   if (!o) return {error: 'none', options: [...this.options].map(o => o.text.trim() || o.value)}; \
                   this.value = o.value; \
                   this.dispatchEvent(new Event('input', {bubbles: true})); \
                   this.dispatchEvent(new Event('change', {bubbles: true})); return {ok: o.value}; }",
                &[json!(value)],
            )
            .await?;
        match outcome.get("error").and_then(Value::as_str) {
            Some("not") => Err(BrowserError::Element(format!("{reference} is not a drop-down (select)"))),
            Some(_) => {
                let options: Vec<String> = outcome
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|o| o.iter().filter_map(Value::as_str).map(|s| format!("{s:?}")).collect())
                    .unwrap_or_default();
                Err(BrowserError::Element(format!(
                    "{reference} has no option {value:?}; it has {}",
                    options.join(", ")
                )))
            }
            None => self.settle(events, before, limit).await,
        }
    }

    /// `browser check @eN` (`checked = false`: uncheck): clicks when needed.
    pub async fn check(&mut self, reference: &str, checked: bool, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let state = self
            .on_element(backend, "function() { return ('checked' in this && (this.type === 'checkbox' || this.type === 'radio')) ? this.checked : (this.getAttribute('aria-checked') === null ? null : this.getAttribute('aria-checked') === 'true'); }", &[])
            .await?;
        let Some(now) = state.as_bool() else {
            return Err(BrowserError::Element(format!("{reference} is not a checkbox or radio button")));
        };
        if now == checked {
            let (events, before) = self.begin().await?;
            return self.settle(events, before, limit).await;
        }
        self.click(reference, limit).await
    }

    /// `browser scroll up|down|@eN`.
    pub async fn scroll(&mut self, target: &str, limit: Duration) -> Result<Change> {
        let (events, before) = self.begin().await?;
        match target {
            "up" | "down" => {
                let sign = if target == "up" { "-" } else { "" };
                self.eval(&format!("window.scrollBy(0, {sign}Math.round(window.innerHeight * 0.8))")).await?;
            }
            r if r.starts_with('@') => {
                let backend = self.element(r).await?;
                self.on_page("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": backend})).await?;
            }
            other => {
                return Err(BrowserError::Usage(format!("scroll where? {other:?}: use up, down or @eN")));
            }
        }
        self.settle(events, before, limit).await
    }

    /// `browser back|forward`.
    pub async fn history(&mut self, step: i64, limit: Duration) -> Result<Change> {
        let history = self.on_page("Page.getNavigationHistory", json!({})).await?;
        let index = history.get("currentIndex").and_then(Value::as_i64).unwrap_or(0) + step;
        let entry = history.get("entries").and_then(Value::as_array).and_then(|e| e.get(usize::try_from(index).ok()?));
        let Some(id) = entry.and_then(|e| e.get("id")).cloned() else {
            let way = if step < 0 { "back" } else { "forward" };
            return Err(BrowserError::Usage(format!("there is no page to go {way} to in this tab")));
        };
        let (events, before) = self.begin().await?;
        self.on_page("Page.navigateToHistoryEntry", json!({"entryId": id})).await?;
        self.settle(events, before, limit).await
    }

    /// `browser reload`.
    pub async fn reload(&mut self, limit: Duration) -> Result<Change> {
        let mut events = self.cdp.subscribe();
        self.on_page("Page.reload", json!({})).await?;
        let session = self.tab()?.session.clone();
        self.wait_for_load(&mut events, &session, self.load_limit(limit), "waiting for the page to reload").await?;
        self.tabs[self.current].last.clear();
        self.observe(true).await
    }

    /// `browser wait …`: polls until the condition holds or `limit`.
    pub async fn wait(&mut self, what: &WaitFor, limit: Duration) -> Result<String> {
        let start = Instant::now();
        if let WaitFor::Ms(ms) = what {
            let wanted = Duration::from_millis(*ms);
            tokio::time::sleep(wanted.min(limit)).await;
            if wanted > limit {
                return Err(BrowserError::Timeout {
                    what: "(the line's time limit is shorter)".into(),
                    ms: limit.as_millis(),
                });
            }
            return Ok(format!("waited {ms} ms"));
        }
        loop {
            let holds = match what {
                WaitFor::Text(text) => self
                    .eval("document.body ? document.body.innerText : ''")
                    .await?
                    .as_str()
                    .is_some_and(|t| t.contains(text.as_str())),
                WaitFor::Url(pattern) => self.url_and_title().await.is_ok_and(|(url, _)| url_matches(pattern, &url)),
                WaitFor::Load => self.eval("document.readyState").await?.as_str() == Some("complete"),
                WaitFor::Ms(_) => true,
            };
            if holds {
                let (url, _) = self.url_and_title().await?;
                return Ok(format!("ready after {} ms: {url}", start.elapsed().as_millis()));
            }
            if start.elapsed() + POLL > limit {
                let what = match what {
                    WaitFor::Text(t) => format!("waiting for the text {t:?}; see what is there: browser get text"),
                    WaitFor::Url(p) => format!("waiting for an address like {p:?}; it is: browser get url"),
                    _ => "waiting for the page to load".into(),
                };
                return Err(BrowserError::Timeout { what, ms: limit.as_millis() });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `browser get text|html|value|url|title [@eN]`.
    pub async fn get(&self, property: Property, reference: Option<&str>) -> Result<String> {
        let value = match (property, reference) {
            (Property::Url, _) => self.url_and_title().await?.0,
            (Property::Title, _) => self.url_and_title().await?.1,
            (_, Some(r)) => {
                let backend = self.element(r).await?;
                let function = match property {
                    Property::Text => "function() { return this.innerText ?? this.textContent ?? ''; }",
                    Property::Html => "function() { return this.outerHTML ?? ''; }",
                    _ => "function() { return 'value' in this ? String(this.value) : null; }",
                };
                match self.on_element(backend, function, &[]).await? {
                    Value::String(s) => s,
                    _ => return Err(BrowserError::Element(format!("{r} has no value; use browser get text {r}"))),
                }
            }
            (Property::Text, None) => text_of(self.eval("document.body ? document.body.innerText : ''").await?),
            (Property::Html, None) => text_of(self.eval("document.documentElement.outerHTML").await?),
            (Property::Value, None) => {
                return Err(BrowserError::Usage("get value needs an element: browser get value @eN".into()));
            }
        };
        Ok(value)
    }

    /// `browser screenshot [--full]`: a PNG of the viewport or the whole page.
    pub async fn screenshot(&self, full: bool) -> Result<Vec<u8>> {
        let mut params = json!({"format": "png"});
        if full {
            let metrics = self.on_page("Page.getLayoutMetrics", json!({})).await?;
            let size =
                |k: &str| metrics.pointer(&format!("/cssContentSize/{k}")).and_then(Value::as_f64).unwrap_or(0.0);
            // Chromium refuses textures past 16384 px; a longer page is cut there.
            params = json!({"format": "png", "captureBeyondViewport": true,
                            "clip": {"x": 0, "y": 0, "width": size("width").max(1.0), "height": size("height").clamp(1.0, 16384.0), "scale": 1}});
        }
        let shot = self.on_page("Page.captureScreenshot", params).await?;
        let data = shot.get("data").and_then(Value::as_str).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Protocol(format!("the screenshot was not base64: {e}")))
    }

    /// `browser eval JS`, when `[browser] eval = true`.
    pub async fn evaluate(&self, script: &str) -> Result<String> {
        if !self.settings.eval {
            return Err(BrowserError::Usage(
                "browser eval is off: a person can turn it on with [browser] eval = true in config.toml".into(),
            ));
        }
        let value = self.eval(script).await?;
        Ok(match value {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    /// `browser tabs`: every tab, the current one marked.
    pub async fn tabs(&mut self) -> Result<Vec<TabInfo>> {
        self.adopt_new_tabs().await?;
        let targets = self.page_targets().await?;
        Ok(self
            .tabs
            .iter()
            .enumerate()
            .map(|(i, tab)| {
                let (url, title) =
                    targets.iter().find(|t| t.0 == tab.target).map(|t| (t.1.clone(), t.2.clone())).unwrap_or_default();
                TabInfo { number: i + 1, current: i == self.current, url, title }
            })
            .collect())
    }

    /// `browser tabs new`: a blank tab, made current; its number.
    pub async fn new_tab(&mut self) -> Result<usize> {
        let created = self.call(None, "Target.createTarget", json!({"url": "about:blank"})).await?;
        let target = created.get("targetId").and_then(Value::as_str).unwrap_or_default().to_string();
        let tab = self.attach(&target).await?;
        self.tabs.push(tab);
        self.current = self.tabs.len() - 1;
        Ok(self.tabs.len())
    }

    fn tab_index(&self, number: usize) -> Result<usize> {
        if number == 0 || number > self.tabs.len() {
            return Err(BrowserError::Usage(format!(
                "no tab {number}: there are {} (see them: browser tabs)",
                self.tabs.len()
            )));
        }
        Ok(number - 1)
    }

    /// `browser tabs switch N`.
    pub async fn switch_tab(&mut self, number: usize) -> Result<()> {
        self.adopt_new_tabs().await?;
        self.current = self.tab_index(number)?;
        let target = self.tab()?.target.clone();
        self.call(None, "Target.activateTarget", json!({"targetId": target})).await?;
        Ok(())
    }

    /// `browser tabs close N`: the last tab closed leaves a blank one.
    pub async fn close_tab(&mut self, number: usize) -> Result<()> {
        let index = self.tab_index(number)?;
        let tab = self.tabs.remove(index);
        self.call(None, "Target.closeTarget", json!({"targetId": tab.target})).await?;
        self.refs.retain(|_, r| r.target != tab.target);
        self.by_node.retain(|(target, _, _), _| *target != tab.target);
        if self.tabs.is_empty() {
            self.new_tab().await?;
        }
        if self.current >= index && self.current > 0 {
            self.current -= 1;
        }
        Ok(())
    }
}

fn text_of(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Lines of `after` not in `before`, and of `before` not in `after`,
/// counted as multisets and kept in page order.
fn line_diff(before: &[String], after: &[String]) -> (Vec<String>, Vec<String>) {
    (only_in(after, before), only_in(before, after))
}

/// Lines of `from` left once each line of `other` has cancelled one equal line.
fn only_in(from: &[String], other: &[String]) -> Vec<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in other {
        *counts.entry(line.as_str()).or_default() += 1;
    }
    from.iter()
        .filter(|l| match counts.get_mut(l.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(|l| l.trim_start().to_string())
        .collect()
}

/// `pattern` with `*` wildcards against the whole address, or as a substring without any.
pub fn url_matches(pattern: &str, url: &str) -> bool {
    if !pattern.contains('*') {
        return url.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = url;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else { return false };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

/// What the agent typed as an address: a scheme is kept; a workspace path
/// becomes `file://`; `host:port/...` gets `http://`.
pub fn normalize_url(url: &str, cwd: &Path) -> String {
    if url.contains("://") || url.starts_with("about:") || url.starts_with("data:") {
        return url.to_string();
    }
    const FILE_ENDINGS: &[&str] = &["html", "htm", "xhtml", "svg", "txt", "md", "json", "xml", "pdf", "png", "jpg"];
    let first = url.split('/').next().unwrap_or_default();
    let ending = first.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let looks_like_host = !url.starts_with(['.', '/'])
        && (first.starts_with("localhost")
            || first.contains(':')
            || ending
                .is_some_and(|e| !FILE_ENDINGS.contains(&e.as_str()) && e.chars().all(|c| c.is_ascii_alphanumeric())));
    if looks_like_host {
        return format!("http://{url}");
    }
    let path = if url.starts_with('/') { PathBuf::from(url) } else { cwd.join(url) };
    format!("file://{}", path.display())
}

/// The Chromium command line: headless, no GPU, `/dev/shm` unused, no
/// background traffic, the network confined by resolver rules.
fn chromium_argv(exe: &Path, settings: &BrowserSettings, rules: &HostRules, profile: &Path) -> Vec<String> {
    let (w, h) = settings.window_size();
    let mut argv = vec![
        exe.display().to_string(),
        "--headless=new".into(),
        "--remote-debugging-pipe".into(),
        // bubblewrap is the sandbox; Chromium's own needs namespaces the filter refuses.
        "--no-sandbox".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--disable-extensions".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-breakpad".into(),
        "--mute-audio".into(),
        "--hide-scrollbars".into(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        format!("--user-data-dir={}", profile.display()),
        format!("--window-size={w},{h}"),
    ];
    if let Some(rules) = rules.resolver_rules() {
        argv.push(format!("--host-resolver-rules={rules}"));
    }
    argv.push("about:blank".into());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_the_agent_types() {
        let cwd = Path::new("/ws/site");
        let table = [
            ("http://127.0.0.1:8000/x", "http://127.0.0.1:8000/x"),
            ("localhost:3000", "http://localhost:3000"),
            ("127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
            ("example.com/page", "http://example.com/page"),
            ("index.html", "file:///ws/site/index.html"),
            ("./docs/a.html", "file:///ws/site/./docs/a.html"),
            ("/ws/p.html", "file:///ws/p.html"),
            ("about:blank", "about:blank"),
        ];
        for (typed, url) in table {
            assert_eq!(normalize_url(typed, cwd), url, "{typed}");
        }
    }

    #[test]
    fn url_patterns() {
        assert!(url_matches("*/done*", "http://h/done?x=1"));
        assert!(url_matches("done", "http://h/done"));
        assert!(!url_matches("http://h/a*", "http://h/b"));
        assert!(url_matches("http://h/*", "http://h/"));
    }

    #[test]
    fn diffs_count_repeated_lines() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (added, removed) = line_diff(&s(&["a", "b", "b"]), &s(&["a", "b", "  c"]));
        assert_eq!(added, ["c"]);
        assert_eq!(removed, ["b"]);
    }

    #[test]
    fn a_missing_executable_says_what_to_install() {
        let settings = BrowserSettings::default();
        let err = find_executable(&settings, Some("/nonexistent")).unwrap_err();
        assert!(err.to_string().contains("apt-get install chromium-headless-shell"), "{err}");
        assert_eq!(err.exit_code(), 127);
        let named = BrowserSettings { executable: Some("/no/chrome".into()), ..BrowserSettings::default() };
        assert!(find_executable(&named, None).unwrap_err().to_string().contains("/no/chrome"));
    }
}
