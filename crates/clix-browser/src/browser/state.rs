//! What a site keeps in the browser: cookies, local and session storage,
//! read, set and cleared, and saved as a whole so that a login survives a
//! new browser (`browser state save|load`).
//!
//! The state's shape follows Playwright's `storageState` (cookies, and per
//! origin `localStorage`/`sessionStorage` as name/value lists), so a file
//! from one works in the other. Values are secrets: nothing here logs them,
//! and the command shows them only when asked.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Browser;
use crate::error::{BrowserError, Result};

/// A cookie as Chromium reports it (`Storage.getCookies`) and takes it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    /// Its name.
    pub name: String,
    /// Its value: a secret.
    pub value: String,
    /// The host (`127.0.0.1`) or domain (`.example.org`) it is sent to.
    pub domain: String,
    /// The path it is sent under.
    #[serde(default = "root")]
    pub path: String,
    /// When it expires, in seconds since the Unix epoch; -1 for a session cookie.
    #[serde(default = "session_expiry")]
    pub expires: f64,
    /// Hidden from the page's scripts.
    #[serde(default)]
    pub http_only: bool,
    /// Sent over HTTPS only.
    #[serde(default)]
    pub secure: bool,
    /// `Strict`, `Lax` or `None`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

fn root() -> String {
    "/".into()
}

fn session_expiry() -> f64 {
    -1.0
}

/// One stored item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Its key.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The web storage of one origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginStorage {
    /// `scheme://host[:port]`.
    pub origin: String,
    /// `localStorage`.
    #[serde(rename = "localStorage", default)]
    pub local: Vec<Item>,
    /// `sessionStorage` (of the tab it was read in).
    #[serde(rename = "sessionStorage", default)]
    pub session: Vec<Item>,
}

/// Everything `browser state save` keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedState {
    /// Every cookie of the browser.
    #[serde(default)]
    pub cookies: Vec<Cookie>,
    /// Storage of the origins open in a tab.
    #[serde(default)]
    pub origins: Vec<OriginStorage>,
}

/// Which web storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// `localStorage`: kept across tabs and sessions of the origin.
    Local,
    /// `sessionStorage`: this tab's.
    Session,
}

impl StorageKind {
    fn js(self) -> &'static str {
        match self {
            StorageKind::Local => "localStorage",
            StorageKind::Session => "sessionStorage",
        }
    }
}

/// The page shown while storage is written for an origin during
/// `state load`: nothing of the real site is fetched.
const STAND_IN: &str = "<!doctype html><title>clix: restoring storage</title>";

impl Browser {
    /// `browser cookies get`: every cookie of the browser.
    pub async fn cookies(&self) -> Result<Vec<Cookie>> {
        let answer = self.call(None, "Storage.getCookies", json!({})).await?;
        let cookies = answer.get("cookies").cloned().unwrap_or(json!([]));
        serde_json::from_value(cookies).map_err(|e| BrowserError::Protocol(format!("unexpected cookies: {e}")))
    }

    /// `browser cookies set NAME VALUE [--url U]`: a cookie for `url`, else
    /// for the current page's address.
    pub async fn set_cookie(&self, name: &str, value: &str, url: Option<&str>) -> Result<String> {
        let url = match url {
            Some(url) => url.to_string(),
            None => self.url_and_title().await?.0,
        };
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(BrowserError::Usage(format!(
                "a cookie belongs to a web address, and the page is {url:?}; open the site first or give --url http://HOST/"
            )));
        }
        let param = json!({"name": name, "value": value, "url": url});
        let refused = || {
            BrowserError::Usage(format!(
                "Chromium refused the cookie {name} for {url} (a ; in it, or a __Secure-/__Host- name over http?)"
            ))
        };
        self.call(None, "Storage.setCookies", json!({"cookies": [param]})).await.map_err(|_| refused())?;
        // A cookie Chromium drops is not an error of the call: look for it.
        if !self.cookies().await?.iter().any(|c| c.name == name && c.value == value) {
            return Err(refused());
        }
        Ok(url)
    }

    /// `browser cookies clear`: removes every cookie; how many there were.
    pub async fn clear_cookies(&self) -> Result<usize> {
        let count = self.cookies().await?.len();
        self.call(None, "Storage.clearCookies", json!({})).await?;
        Ok(count)
    }

    /// The current page's origin, or why it has no storage.
    async fn storage_origin(&self) -> Result<String> {
        let origin = super::text_of(self.eval("location.origin").await?);
        if origin.is_empty() || origin == "null" {
            return Err(BrowserError::Usage(
                "this page has no web storage of its own (about:blank or a file); open a site first".into(),
            ));
        }
        Ok(origin)
    }

    /// `browser storage local|session get [KEY]`: the page's origin and its
    /// items (the one named `key`, when given).
    pub async fn storage_items(&self, kind: StorageKind, key: Option<&str>) -> Result<(String, Vec<Item>)> {
        let origin = self.storage_origin().await?;
        let store = kind.js();
        let items = self.eval(&format!("Object.entries({store}).map(([name, value]) => ({{name, value}}))")).await?;
        let mut items: Vec<Item> = serde_json::from_value(items).unwrap_or_default();
        items.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(key) = key {
            items.retain(|i| i.name == key);
            if items.is_empty() {
                return Err(BrowserError::Element(format!(
                    "{store} of {origin} has no key {key:?}; list them: browser storage {} get",
                    if kind == StorageKind::Local { "local" } else { "session" }
                )));
            }
        }
        Ok((origin, items))
    }

    /// `browser storage local|session set KEY VALUE`; the origin.
    pub async fn storage_set(&self, kind: StorageKind, key: &str, value: &str) -> Result<String> {
        let origin = self.storage_origin().await?;
        let (key, value) = (json!(key), json!(value));
        self.eval(&format!("{}.setItem({key}, {value})", kind.js())).await?;
        Ok(origin)
    }

    /// `browser storage local|session clear`: the origin, and how many items it had.
    pub async fn storage_clear(&self, kind: StorageKind) -> Result<(String, usize)> {
        let origin = self.storage_origin().await?;
        let store = kind.js();
        let count = self.eval(&format!("(() => {{ const n = {store}.length; {store}.clear(); return n; }})()")).await?;
        Ok((origin, count.as_u64().unwrap_or(0) as usize))
    }

    /// `browser state save`: every cookie, and the storage of each origin
    /// open in a tab (a tab's session storage is its own; the first tab of
    /// an origin gives it).
    pub async fn save_state(&self) -> Result<SavedState> {
        let mut state = SavedState { cookies: self.cookies().await?, origins: Vec::new() };
        let read = "(() => { try { const all = s => Object.entries(s).map(([name, value]) => ({name, value})); \
                    return {origin: location.origin, localStorage: all(localStorage), sessionStorage: all(sessionStorage)}; \
                    } catch (e) { return null; } })()";
        for tab in &self.tabs {
            let answer = self
                .call(Some(&tab.session), "Runtime.evaluate", json!({"expression": read, "returnByValue": true}))
                .await;
            let Some(value) = answer.ok().and_then(|a| a.pointer("/result/value").cloned()) else { continue };
            let Ok(origin) = serde_json::from_value::<OriginStorage>(value) else { continue };
            let empty = origin.local.is_empty() && origin.session.is_empty();
            if empty || origin.origin == "null" || state.origins.iter().any(|o| o.origin == origin.origin) {
                continue;
            }
            state.origins.push(origin);
        }
        Ok(state)
    }

    /// `browser state load`: sets the cookies, then each origin's storage:
    /// the current page's origin in place, the others by loading a stand-in
    /// for the site (the browser answers that tab's requests to those
    /// origins with an empty page, so the site sees nothing until it is
    /// opened) in the current tab when it is blank (a new browser, where
    /// the tab keeps their session storage), else in a new tab, made
    /// current and returned by number. Either is left on about:blank.
    pub async fn load_state(&mut self, state: &SavedState, limit: Duration) -> Result<Option<usize>> {
        let cookies: Vec<Value> = state.cookies.iter().map(cookie_param).collect();
        if !cookies.is_empty() {
            self.call(None, "Storage.setCookies", json!({"cookies": cookies})).await.map_err(|e| {
                BrowserError::Usage(format!(
                    "Chromium refused the saved cookies ({e}); was the file made by state save?"
                ))
            })?;
        }
        let mut origins: Vec<&OriginStorage> =
            state.origins.iter().filter(|o| !o.local.is_empty() || !o.session.is_empty()).collect();
        if origins.is_empty() {
            return Ok(None);
        }
        let here = super::text_of(self.eval("location.origin").await?);
        if let Some(i) = origins.iter().position(|o| o.origin == here) {
            self.eval(&writer(origins.remove(i))).await?;
        }
        if origins.is_empty() {
            return Ok(None);
        }
        if self.url_and_title().await?.0 == "about:blank" {
            let (target, session) = (self.tab()?.target.clone(), self.tab()?.session.clone());
            let restored = self.restore_storage(&target, &session, &origins, limit).await;
            let _ = self.call(None, "Fetch.disable", json!({})).await;
            self.tabs[self.current].last.clear();
            return restored.map(|()| None);
        }
        let created = self.call(None, "Target.createTarget", json!({"url": "about:blank"})).await?;
        let target = created.get("targetId").and_then(Value::as_str).unwrap_or_default().to_string();
        let attached = self.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true})).await?;
        let session = attached.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();
        let restored = self.restore_storage(&target, &session, &origins, limit).await;
        let _ = self.call(None, "Fetch.disable", json!({})).await;
        let _ = self.call(None, "Target.detachFromTarget", json!({"sessionId": session})).await;
        restored?;
        let tab = self.attach(&target).await?;
        self.tabs.push(tab);
        self.current = self.tabs.len() - 1;
        Ok(Some(self.tabs.len()))
    }

    /// Writes each origin's items through `session`, the tab of `target`,
    /// while the browser answers that tab's requests to those origins with
    /// [`STAND_IN`] (a browser-wide interception, so that the block list's,
    /// whose paused requests all fail, is not asked; another tab's request
    /// meanwhile goes on as usual); leaves the tab on about:blank.
    async fn restore_storage(
        &self,
        target: &str,
        session: &str,
        origins: &[&OriginStorage],
        limit: Duration,
    ) -> Result<()> {
        let on = |method: &'static str, params: Value| self.call(Some(session), method, params);
        on("Page.enable", json!({})).await?;
        let patterns: Vec<Value> = origins
            .iter()
            .map(|o| json!({"urlPattern": format!("{}/*", o.origin.trim_end_matches('/')), "requestStage": "Request"}))
            .collect();
        self.call(None, "Fetch.enable", json!({ "patterns": patterns })).await?;
        let body = base64::engine::general_purpose::STANDARD.encode(STAND_IN);
        let end = Instant::now() + limit;
        for origin in origins {
            let mut events = self.cdp.subscribe();
            let url = format!("{}/", origin.origin.trim_end_matches('/'));
            // The navigation answers once its request is, so both go on at once.
            let navigate = on("Page.navigate", json!({"url": url}));
            let handle = async {
                loop {
                    let left = end.saturating_duration_since(Instant::now());
                    let event = match tokio::time::timeout(left, events.recv()).await {
                        Err(_) => {
                            return Err(BrowserError::Timeout {
                                what: format!("restoring the storage of {}", origin.origin),
                                ms: limit.as_millis(),
                            });
                        }
                        Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
                        Ok(Err(_)) => return Err(crate::cdp::CdpError::Closed.into()),
                        Ok(Ok(e)) => e,
                    };
                    match (event.method.as_str(), event.session.as_deref()) {
                        ("Fetch.requestPaused", None) => {
                            let id = event.params.get("requestId").cloned().unwrap_or(Value::Null);
                            let ours = event.params.get("frameId").and_then(Value::as_str) == Some(target);
                            let answer = if ours {
                                let headers = [json!({"name": "Content-Type", "value": "text/html"})];
                                let params = json!({"requestId": id, "responseCode": 200, "responseHeaders": headers, "body": body});
                                self.call(None, "Fetch.fulfillRequest", params).await
                            } else {
                                self.call(None, "Fetch.continueRequest", json!({ "requestId": id })).await
                            };
                            answer?;
                        }
                        ("Page.loadEventFired", Some(s)) if s == session => return Ok(()),
                        _ => {}
                    }
                }
            };
            let (navigated, handled) = tokio::join!(navigate, handle);
            navigated?;
            handled?;
            let write = writer(origin);
            let answer = on("Runtime.evaluate", json!({"expression": write, "returnByValue": true})).await?;
            if answer.get("exceptionDetails").is_some() {
                return Err(BrowserError::Usage(format!(
                    "the storage of {} could not be written (is it a web origin?)",
                    origin.origin
                )));
            }
        }
        on("Page.navigate", json!({"url": "about:blank"})).await?;
        Ok(())
    }
}

/// A script that writes `origin`'s items into the page's storage.
fn writer(origin: &OriginStorage) -> String {
    format!(
        "(() => {{ for (const i of {}) localStorage.setItem(i.name, i.value); \
                  for (const i of {}) sessionStorage.setItem(i.name, i.value); }})()",
        json!(origin.local),
        json!(origin.session)
    )
}

/// A saved cookie as `Storage.setCookies` takes it.
fn cookie_param(cookie: &Cookie) -> Value {
    let mut param = json!({
        "name": cookie.name, "value": cookie.value, "domain": cookie.domain, "path": cookie.path,
        "secure": cookie.secure, "httpOnly": cookie.http_only,
    });
    if let Some(same_site) = &cookie.same_site {
        param["sameSite"] = json!(same_site);
    }
    if cookie.expires > 0.0 {
        param["expires"] = json!(cookie.expires);
    }
    param
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_playwright_state_file_reads_and_a_session_cookie_has_no_expiry() {
        let file = r#"{"cookies": [{"name": "sid", "value": "s3", "domain": "127.0.0.1", "path": "/",
                        "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax", "size": 4}],
                       "origins": [{"origin": "http://127.0.0.1:8000", "localStorage": [{"name": "k", "value": "v"}]}]}"#;
        let state: SavedState = serde_json::from_str(file).unwrap_or_default();
        assert_eq!(state.cookies.len(), 1);
        assert_eq!(state.origins[0].local, [Item { name: "k".into(), value: "v".into() }]);
        assert!(state.origins[0].session.is_empty());
        let param = cookie_param(&state.cookies[0]);
        assert_eq!(param["httpOnly"], true);
        assert_eq!(param["sameSite"], "Lax");
        assert!(param.get("expires").is_none(), "{param}");
        let kept = Cookie { expires: 2e9, ..state.cookies[0].clone() };
        assert_eq!(cookie_param(&kept)["expires"], 2e9);
    }
}
