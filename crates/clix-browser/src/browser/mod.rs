//! One headless Chromium in the sandbox, its tabs, and what an action
//! changed on the page. Starting it is `launch`, the `browser` command's
//! actions are `actions`, the addresses the agent types are `address`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clix_sandbox::Service;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::cdp::{Cdp, CdpError, Event};
use crate::error::{BrowserError, Result};
use crate::settings::{BrowserSettings, HostRules};
use crate::snapshot::SnapshotOptions;

mod actions;
mod address;
mod content;
mod frames;
mod launch;
mod network;
#[cfg(test)]
mod races;
mod state;
mod watch;

pub use address::{normalize_url, url_matches};
pub use frames::FrameInfo;
pub use launch::{CANDIDATES, find_executable};
pub use network::{Request, Requests, SHOWN_REQUESTS};
pub use state::{Cookie, Item, OriginStorage, SavedState, StorageKind};
pub use watch::{ConsoleMessage, Dialog, Level, PageError, Since};

/// A single protocol call that is not a page load: answered in well under this.
const CALL_LIMIT: Duration = Duration::from_secs(10);
/// How long an action still waits for a navigation it may have started,
/// after a round trip to the page has flushed what the page already sent.
const SETTLE: Duration = Duration::from_millis(10);
/// Lines of a new page shown after an action navigated.
const NAVIGATED_LINES: usize = 25;
/// Changed lines shown after an action, each way.
const CHANGED_LINES: usize = 20;
/// The view an action's result is compared with: the compact snapshot.
const COMPARED: SnapshotOptions = SnapshotOptions { interactive: false, compact: true, depth: None };
/// How often `wait` looks again.
const POLL: Duration = Duration::from_millis(50);
/// How many times an action's page is read again because it navigated
/// during the read (a redirect chain); the last read is what is shown.
const REREADS: usize = 5;

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
    /// A file the action downloaded: its path and size.
    pub download: Option<String>,
    /// The action closed its own tab, which had this number; the tab now
    /// current is the one shown.
    pub closed_tab: Option<usize>,
    /// Errors on the page that no result mentioned yet (`browser errors` lists them).
    pub errors: usize,
    /// Dialogs the page opened, and how each was answered.
    pub dialogs: Vec<Dialog>,
}

/// What the events after an action said about its tab.
#[derive(Default)]
struct Seen {
    opened_tab: bool,
    closed: bool,
}

impl Seen {
    /// Notes `e`; true when it begins a navigation of the tab's main frame
    /// (whose frame id is the tab's target id) or closes the tab.
    fn note(&mut self, e: &Event, session: &str, target: &str) -> bool {
        let field = |path: &str| e.params.pointer(path).and_then(Value::as_str);
        match e.method.as_str() {
            "Target.targetCreated" => {
                self.opened_tab = true;
                false
            }
            "Target.targetDestroyed" | "Target.detachedFromTarget" if field("/targetId") == Some(target) => {
                self.closed = true;
                true
            }
            "Page.frameRequestedNavigation" | "Page.frameStartedLoading" => {
                e.session.as_deref() == Some(session) && field("/frameId") == Some(target)
            }
            "Page.frameNavigated" => e.session.as_deref() == Some(session) && field("/frame/id") == Some(target),
            _ => false,
        }
    }
}

/// How a navigation ended: a page loaded, a file began to download, or the tab closed.
enum Loaded {
    Page,
    Download { guid: String, name: String },
    Closed,
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
    /// Where downloads go (the workspace's `.clix/downloads`).
    downloads: PathBuf,
    /// A profile folder on the host (host mode only), removed at close.
    host_profile: Option<PathBuf>,
    /// When it was started, for the benchmark's cold start.
    pub started: Instant,
    /// What the pages did (console, errors, dialogs, requests), collected as it happens.
    watch: watch::Watch,
    /// What the refs into out-of-process frames stand for.
    frame_nodes: frames::FrameNodes,
}

impl Browser {
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
        self.watch_tab(&session).await?;
        Ok(Tab { target: target.to_string(), session, last: Vec::new() })
    }

    /// Tabs the page opened itself (`target=_blank`, `window.open`), attached at the end.
    async fn adopt_new_tabs(&mut self) -> Result<Vec<usize>> {
        let mut opened = Vec::new();
        for (target, _, _) in self.page_targets().await? {
            if self.tabs.iter().any(|t| t.target == target) {
                continue;
            }
            // A tab listed a moment ago may be gone already (closed by its page or by us).
            match self.attach(&target).await {
                Ok(tab) => {
                    self.tabs.push(tab);
                    opened.push(self.tabs.len());
                }
                Err(e) => tracing::debug!(%target, error = %e, "browser: a listed tab could not be attached"),
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

    async fn wait_for_load(
        &self,
        events: &mut broadcast::Receiver<Event>,
        session: &str,
        limit: Duration,
        what: &str,
    ) -> Result<Loaded> {
        // A page's main frame has its tab's target id.
        let target = self.tab()?.target.clone();
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
                    return Ok(Loaded::Page);
                }
                // A navigation within the document (a #fragment, pushState)
                // has no load. (Nor has one that turns into a download, but
                // its frame stops loading before the download is announced,
                // so a stop does not end the wait.)
                Ok(Ok(e))
                    if e.method == "Page.navigatedWithinDocument"
                        && e.session.as_deref() == Some(session)
                        && e.params.get("frameId").and_then(Value::as_str) == Some(target.as_str()) =>
                {
                    return Ok(Loaded::Page);
                }
                Ok(Ok(e))
                    if matches!(e.method.as_str(), "Target.targetDestroyed" | "Target.detachedFromTarget")
                        && e.params.get("targetId").and_then(Value::as_str) == Some(target.as_str()) =>
                {
                    return Ok(Loaded::Closed);
                }
                // Leaving was refused (a beforeunload dialog dismissed): the page stays.
                Ok(Ok(e)) if e.session.as_deref() == Some(session) && self.stays(&e) => return Ok(Loaded::Page),
                // The address was a file to save, not a page: no load follows.
                Ok(Ok(e)) if e.method == "Browser.downloadWillBegin" => {
                    let field = |k: &str| e.params.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    return Ok(Loaded::Download { guid: field("guid"), name: field("suggestedFilename") });
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return Err(CdpError::Closed.into()),
                Ok(_) => {}
            }
        }
    }

    /// Waits for a download to finish; its path and size, as the result says it.
    async fn finish_download(
        &self,
        events: &mut broadcast::Receiver<Event>,
        guid: &str,
        name: &str,
        limit: Duration,
    ) -> Result<String> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let event = match tokio::time::timeout(left, events.recv()).await {
                Err(_) => {
                    return Err(BrowserError::Timeout {
                        what: format!("waiting for the download of {name} to finish; it goes on in the background"),
                        ms: limit.as_millis(),
                    });
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return Err(CdpError::Closed.into()),
                Ok(Err(_)) => continue,
                Ok(Ok(e)) => e,
            };
            if event.method != "Browser.downloadProgress"
                || event.params.get("guid").and_then(Value::as_str) != Some(guid)
            {
                continue;
            }
            match event.params.get("state").and_then(Value::as_str) {
                Some("completed") => {
                    let bytes = event.params.get("receivedBytes").and_then(Value::as_f64).unwrap_or(0.0) as u64;
                    return Ok(format!("{} ({bytes} bytes)", self.downloads.join(name).display()));
                }
                Some("canceled") => {
                    return Err(BrowserError::Load { url: name.into(), reason: "the download was cancelled".into() });
                }
                _ => {}
            }
        }
    }

    /// An action's own protocol call. Its answer may be lost to the very
    /// navigation the action caused (a submit click answered "Inspected
    /// target navigated or closed" on a busy machine): that is the action's
    /// effect, which `settle` then follows, so it is not an error here.
    async fn act(&self, method: &str, params: Value) -> Result<Value> {
        match self.on_page(method, params).await {
            Err(e) if e.lost_to_navigation() => Ok(Value::Null),
            answer => answer,
        }
    }

    /// After an action: waits briefly for a navigation it started, follows
    /// each navigation to its load, takes a snapshot and tells what changed.
    /// A navigation may begin at any moment, even while the page is being
    /// read: a read lost to one, or one that began during the read, means
    /// the page is read again once the new one has loaded.
    async fn settle(
        &mut self,
        mut events: broadcast::Receiver<Event>,
        before: String,
        limit: Duration,
    ) -> Result<Change> {
        let (session, target) = {
            let tab = self.tab()?;
            (tab.session.clone(), tab.target.clone())
        };
        // A round trip through the page: what it sent before (a navigation it
        // started) is in `events` by the time the answer is.
        let mut navigating = match self.eval("0").await {
            Ok(_) => false,
            Err(e) if e.lost_to_navigation() => true,
            Err(e) => return Err(e),
        };
        let mut seen = Seen::default();
        if !navigating {
            let window = Instant::now() + SETTLE;
            while let Ok(Ok(e)) =
                tokio::time::timeout(window.saturating_duration_since(Instant::now()), events.recv()).await
            {
                if seen.note(&e, &session, &target) {
                    navigating = true;
                    break;
                }
            }
        }
        self.follow(events, &before, navigating, seen, limit).await
    }

    /// Follows a navigation (when `navigating`) to its load, then reads the
    /// page, again while it keeps navigating during the read.
    async fn follow(
        &mut self,
        mut events: broadcast::Receiver<Event>,
        before: &str,
        mut navigating: bool,
        mut seen: Seen,
        limit: Duration,
    ) -> Result<Change> {
        let (session, target) = {
            let tab = self.tab()?;
            (tab.session.clone(), tab.target.clone())
        };
        let end = Instant::now() + limit;
        let mut download = None;
        let mut read = 0;
        loop {
            if navigating && !seen.closed {
                let left = self.load_limit(end.saturating_duration_since(Instant::now()));
                let what = "waiting for the page it opened to load";
                match self.wait_for_load(&mut events, &session, left, what).await? {
                    Loaded::Page => {}
                    Loaded::Closed => seen.closed = true,
                    Loaded::Download { guid, name } => {
                        download = Some(self.finish_download(&mut events, &guid, &name, limit).await?);
                    }
                }
            }
            if seen.closed {
                return self.after_closing(&target).await.map(|c| self.noticed(c));
            }
            let change = self.read_change(before).await;
            // What arrived during the read; a navigation's later events (its
            // load) stay queued for the next wait.
            let mut again = false;
            loop {
                match events.try_recv() {
                    Ok(e) if seen.note(&e, &session, &target) => {
                        again = true;
                        break;
                    }
                    Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
            let last = read == REREADS;
            match change {
                Ok(mut change) if !again || last => {
                    if seen.opened_tab {
                        change.new_tabs = self.adopt_new_tabs().await?;
                    }
                    change.download = download;
                    return Ok(self.noticed(change));
                }
                Err(e) if !e.lost_to_navigation() || (last && !seen.closed) => return Err(e),
                _ => navigating = true,
            }
            read += 1;
        }
    }

    /// Whether the current document differs from `before`, and the snapshot.
    async fn read_change(&mut self, before: &str) -> Result<Change> {
        let navigated = self.document().await? != before;
        if navigated {
            self.tabs[self.current].last.clear();
        }
        self.observe(navigated).await
    }

    /// The action closed its own tab (`window.close()`): the tab before it
    /// becomes current (a blank one if none is left), shown as after a navigation.
    async fn after_closing(&mut self, target: &str) -> Result<Change> {
        let Some(index) = self.tabs.iter().position(|t| t.target == target) else {
            return self.observe(true).await;
        };
        self.tabs.remove(index);
        self.refs.retain(|_, r| r.target != target);
        self.by_node.retain(|(t, _, _), _| t != target);
        if self.tabs.is_empty() {
            self.new_tab().await?;
        }
        self.current = index.saturating_sub(1).min(self.tabs.len() - 1);
        let mut change = self.observe(true).await?;
        change.closed_tab = Some(index + 1);
        Ok(change)
    }

    /// Takes the compact snapshot and compares it with the tab's last.
    async fn observe(&mut self, navigated: bool) -> Result<Change> {
        let (url, title) = self.url_and_title().await?;
        let rendered = self.rendered(&[(COMPARED, None)]).await?.pop().unwrap_or_default();
        let tab = &mut self.tabs[self.current];
        let before = std::mem::replace(&mut tab.last, rendered.lines.clone());
        let mut change = Change {
            navigated,
            url,
            title,
            added: Vec::new(),
            removed: Vec::new(),
            more: 0,
            new_tabs: Vec::new(),
            download: None,
            closed_tab: None,
            errors: 0,
            dialogs: Vec::new(),
        };
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

    /// `browser snapshot`: the page as lines with refs; `selector` scopes it.
    pub async fn snapshot(&mut self, options: SnapshotOptions, selector: Option<&str>) -> Result<Snapshot> {
        let root = match selector {
            Some(selector) => Some(self.query(selector).await?),
            None => None,
        };
        // A whole-page snapshot also renders what the next action is compared with.
        let mut views = vec![(options, root)];
        if root.is_none() {
            views.push((COMPARED, None));
        }
        let mut rendered = self.rendered(&views).await?.into_iter();
        let (rendered, compared) = (rendered.next().unwrap_or_default(), rendered.next());
        if let Some(compared) = compared {
            self.tabs[self.current].last = compared.lines;
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
            // `next_ref` counts every ref ever given (they are never
            // reused): still 1, no snapshot of this browser gave one.
            BrowserError::Ref(if self.next_ref == 1 {
                // The common case: refs read in an earlier `clix run`,
                // whose browser ended with it.
                format!(
                    "no element {reference}: this browser has taken no snapshot yet. A browser lives for one \
                     session (one `clix run`, agent run or MCP session), so refs from another one mean nothing \
                     here; open the page and act in one line: browser open URL && browser snapshot -i && \
                     browser click {reference}"
                )
            } else {
                format!(
                    "no element {reference}: refs come from the last snapshot of an open tab (a closed tab's \
                     are gone); take one: browser snapshot -i"
                )
            })
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

    /// `on_element` as an action's own call (see `act`): an answer lost to
    /// the navigation it caused is `Null`.
    async fn act_on_element(&self, backend: i64, function: &str, args: &[Value]) -> Result<Value> {
        match self.on_element(backend, function, args).await {
            Err(e) if e.lost_to_navigation() => Ok(Value::Null),
            answer => answer,
        }
    }

    /// Runs `function` (a JS function source) with `this` = the element.
    async fn on_element(&self, backend: i64, function: &str, args: &[Value]) -> Result<Value> {
        let resolved = self.on_node(backend, "DOM.resolveNode", json!({})).await.map_err(|_| {
            BrowserError::Ref(
                "that element is gone from the page (it changed); take a new snapshot: browser snapshot -i".into(),
            )
        })?;
        let object = resolved.pointer("/object/objectId").cloned().unwrap_or(Value::Null);
        let arguments: Vec<Value> = args.iter().map(|a| json!({"value": a})).collect();
        let answer = self
            .in_frame_of(
                backend,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_count_repeated_lines() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (added, removed) = line_diff(&s(&["a", "b", "b"]), &s(&["a", "b", "  c"]));
        assert_eq!(added, ["c"]);
        assert_eq!(removed, ["b"]);
    }
}
