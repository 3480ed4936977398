//! Finding Chromium and starting it in the sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clix_sandbox::{Sandbox, ServiceRequest, pipe};
use serde_json::json;

use super::{Browser, CALL_LIMIT};
use crate::cdp::Cdp;
use crate::error::{BrowserError, Result};
use crate::settings::{BrowserSettings, HostRules};

/// Names looked up on PATH when `[browser] executable` is not set.
pub const CANDIDATES: &[&str] = &["chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"];

/// The Chromium `settings` names, or the first candidate on PATH.
pub fn find_executable(settings: &BrowserSettings, path_var: Option<&str>) -> Result<PathBuf> {
    let exe = &settings.executable;
    if !exe.as_os_str().is_empty() {
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
        let argv = chromium_argv(&exe, settings, &rules, &profile)?;
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
        let watch = super::watch::Watch::start(&cdp, &settings.dialog);
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
            downloads: downloads.to_path_buf(),
            host_profile,
            started,
            watch,
            frame_nodes: Default::default(),
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
}

/// The Chromium command line: headless, no GPU, `/dev/shm` unused, no
/// background traffic, the network confined by resolver rules.
fn chromium_argv(exe: &Path, settings: &BrowserSettings, rules: &HostRules, profile: &Path) -> Result<Vec<String>> {
    let (w, h) = settings.window_size().map_err(BrowserError::Usage)?;
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
        // Cross-site frames in processes of their own, in every build (the
        // headless shell leaves it off): a hostile frame shares no memory
        // with the page, and frames are read the one way `frames` knows.
        "--site-per-process".into(),
        "--hide-scrollbars".into(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        format!("--user-data-dir={}", profile.display()),
        format!("--window-size={w},{h}"),
    ];
    if let Some(rules) = rules.resolver_rules() {
        argv.push(format!("--host-resolver-rules={rules}"));
    }
    argv.push("about:blank".into());
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_executable_says_what_to_install() {
        let settings = BrowserSettings::default();
        let err = find_executable(&settings, Some("/nonexistent")).unwrap_err();
        assert!(err.to_string().contains("apt-get install chromium-headless-shell"), "{err}");
        assert_eq!(err.exit_code(), 127);
        let named = BrowserSettings { executable: "/no/chrome".into(), ..BrowserSettings::default() };
        assert!(find_executable(&named, None).unwrap_err().to_string().contains("/no/chrome"));
    }
}
