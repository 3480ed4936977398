//! The actions of the `browser` command on the current tab.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::address::runs_script;
use super::{Browser, Change, Loaded, POLL, Property, Seen, TabInfo, WaitFor, normalize_url, text_of, url_matches};
use crate::cdp::Event;
use crate::error::{BrowserError, Result};
use crate::keys::key_event;
use crate::settings::host_of;

impl Browser {
    /// `browser open URL`: loads it in the current tab and waits for the load.
    pub async fn open(&mut self, url: &str, cwd: &Path, limit: Duration) -> Result<Change> {
        let url = normalize_url(url, cwd);
        if runs_script(&url) && !self.settings.eval {
            return Err(BrowserError::Usage(
                "a javascript: address runs a script in the page, as browser eval does, and that is off; \
                 use browser click/fill/get, or a person can turn scripts on with [browser] eval = true in config.toml"
                    .into(),
            ));
        }
        if !self.rules.allows(&url) {
            return Err(self.blocked(&url));
        }
        // A page the agent wrote runs no script of its own while eval is off:
        // otherwise `write p.html` and `open file://…/p.html` would be eval.
        let scripts_off = !self.settings.eval && url.starts_with("file:");
        self.on_page("Emulation.setScriptExecutionDisabled", json!({ "value": scripts_off })).await?;
        let (mut events, before) = self.begin().await?;
        let answer = self.on_page("Page.navigate", json!({"url": url})).await?;
        if let Some(reason) = answer.get("errorText").and_then(Value::as_str) {
            // A file to save aborts the navigation; the download tells the rest.
            if !reason.contains("ERR_ABORTED") {
                return Err(self.load_error(&url, reason));
            }
            let session = self.tab()?.session.clone();
            let what = format!("waiting for {url} to download");
            let Ok(Loaded::Download { guid, name }) =
                self.wait_for_load(&mut events, &session, Duration::from_millis(500), &what).await
            else {
                return Err(self.load_error(&url, reason));
            };
            let saved = self.finish_download(&mut events, &guid, &name, limit).await?;
            let mut change = self.observe(false).await?;
            change.download = Some(saved);
            return Ok(self.noticed(change));
        }
        self.tabs[self.current].last.clear();
        self.follow(events, &before, true, Seen::default(), limit).await
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

    /// The centre of the element on screen, scrolled into view first.
    async fn centre(&self, reference: &str, backend: i64) -> Result<(f64, f64)> {
        let _ = self.on_node(backend, "DOM.scrollIntoViewIfNeeded", json!({})).await;
        // A node of an out-of-process frame has its frame's coordinates.
        let (dx, dy) = self.frame_offset(backend).await?;
        let quads = self.on_node(backend, "DOM.getContentQuads", json!({})).await.ok();
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
        Ok((x + dx, y + dy))
    }

    async fn mouse(&self, kind: &str, (x, y): (f64, f64), clicks: u32) -> Result<()> {
        let button = if kind == "mouseMoved" { "none" } else { "left" };
        self.act(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": button, "clickCount": clicks}),
        )
        .await?;
        Ok(())
    }

    /// Starts an action: the events it may cause, and the document before it.
    async fn begin(&self) -> Result<(broadcast::Receiver<Event>, String)> {
        let events = self.cdp.subscribe();
        self.mark_action();
        Ok((events, self.document().await?))
    }

    /// `browser click @eN`.
    pub async fn click(&mut self, reference: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let at = self.centre(reference, backend).await?;
        let (events, before) = self.begin().await?;
        for (kind, clicks) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 1)] {
            self.mouse(kind, at, clicks).await?;
        }
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
        self.act("Input.insertText", json!({"text": text})).await?;
        self.act_on_element(backend, "function() { this.dispatchEvent(new Event('change', {bubbles: true})); }", &[])
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
            self.act("Input.dispatchKeyEvent", json!({"type": "keyDown", "text": s, "key": s})).await?;
            self.act("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": s})).await?;
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
        self.act("Input.dispatchKeyEvent", down).await?;
        self.act("Input.dispatchKeyEvent", up).await?;
        self.settle(events, before, limit).await
    }

    /// `browser select @eN VALUE`: picks an option by value or visible text.
    pub async fn select(&mut self, reference: &str, value: &str, limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let (events, before) = self.begin().await?;
        let outcome = self
            .act_on_element(
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
                self.on_node(backend, "DOM.scrollIntoViewIfNeeded", json!({})).await?;
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
        self.act("Page.navigateToHistoryEntry", json!({"entryId": id})).await?;
        self.settle(events, before, limit).await
    }

    /// `browser reload`.
    pub async fn reload(&mut self, limit: Duration) -> Result<Change> {
        let (events, before) = self.begin().await?;
        self.act("Page.reload", json!({})).await?;
        self.tabs[self.current].last.clear();
        self.follow(events, &before, true, Seen::default(), limit).await
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
        let mut events = self.cdp.subscribe();
        self.call(None, "Target.closeTarget", json!({"targetId": tab.target})).await?;
        // Closing answers before the tab is gone; until it is, the browser still lists it.
        let end = Instant::now() + Duration::from_secs(2);
        while let Ok(Ok(e)) = tokio::time::timeout(end.saturating_duration_since(Instant::now()), events.recv()).await {
            if e.method == "Target.targetDestroyed"
                && e.params.get("targetId").and_then(Value::as_str) == Some(&tab.target)
            {
                break;
            }
        }
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
