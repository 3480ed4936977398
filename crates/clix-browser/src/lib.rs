//! A web browser as a command: one headless Chromium per engine session,
//! started lazily inside the OS tier's sandbox and driven over the Chrome
//! DevTools Protocol.
//!
//! This crate owns:
//!
//! - finding Chromium (`[browser] executable`, else PATH) and the error that
//!   says what to install;
//! - starting it in bubblewrap through `clix-sandbox`'s
//!   [`clix_sandbox::Service`] (system folders read-only, the workspace
//!   read-write for downloads, an empty HOME, a private `/tmp`,
//!   `--disable-dev-shm-usage`), ended with its whole process group when the
//!   [`Browser`] is closed or dropped, and with clix itself (clix's warden,
//!   bwrap's `--die-with-parent`);
//! - the network allowance ([`HostRules`]): the browser shares the host's
//!   network so that loopback pages work, and Chromium's resolver rules make
//!   every other host (names and IP literals alike) fail to resolve unless
//!   `[browser] allow` names it or the sandbox's network is on;
//! - a small CDP client over `--remote-debugging-pipe` (`cdp.rs`: JSON messages
//!   separated by NUL bytes on two inherited pipes). It is written here rather
//!   than taken from `chromiumoxide`, which connects over a WebSocket to
//!   `--remote-debugging-port`: a TCP port on 127.0.0.1 that any local process
//!   (another user's, or a program the agent started with the network on) could
//!   drive the browser through, with the person's session. Over the pipe only
//!   clix holds the protocol, the same code works inside bubblewrap, and the
//!   few dozen methods clix uses need no generated protocol types;
//! - snapshots of the accessibility tree as indented lines with refs (`- button
//!   "Submit" [ref=e2]`, [`render`], pure), refs stable while a document lives
//!   and never reused, so a stale one is an error and never another element;
//! - the actions (open, click, fill, type, press, select, check, hover, scroll,
//!   wait, get, screenshot, history, tabs, eval) and what each changed on the
//!   page (navigated, lines added or removed, tabs opened), whatever the
//!   timing: a call answered with "navigated or closed" is its effect, and a
//!   read overtaken by a navigation is read again once the new page loads
//!   (`browser/races.rs` plays each moment);
//! - the markers that put page text between lines naming its address as
//!   untrusted content, with a nonce a page cannot forge ([`mark_untrusted`]);
//! - what a site keeps (cookies, local and session storage): read, set,
//!   cleared, and saved and loaded as a whole ([`SavedState`], Playwright's
//!   `storageState` shape); the page as Markdown, as a PDF and as its changes
//!   since the last snapshot; files put on a file input;
//! - what pages do besides showing themselves, collected per tab as it happens
//!   and bounded (console messages, uncaught exceptions, failed requests, every
//!   request), dialogs answered as they open (an armed answer, else `[browser]
//!   dialog`), and URL patterns blocked through the Fetch domain;
//! - frames: every frame's tree shown under its `<iframe>` in a snapshot, and
//!   refs into same-origin, cross-origin and cross-site frames (the last in
//!   processes of their own, `--site-per-process`).
//!
//! It must not present results (the `browser` command in `clix-engine` prints
//! them and Layer 2 caps them), write workspace files (the command writes
//! screenshots, PDFs, state files and upload copies through the workspace
//! handle), or start Chromium other than through `clix-sandbox`.

mod boundary;
mod browser;
mod cdp;
mod command;
mod error;
mod keys;
mod settings;
mod snapshot;

pub use boundary::mark_untrusted;
pub use browser::{
    Browser, CANDIDATES, Change, ConsoleMessage, Dialog, FrameInfo, Level, PageError, Property, Request, Requests,
    SHOWN_REQUESTS, Since, Snapshot, TabInfo, WaitFor, find_executable, normalize_url, url_matches,
};
pub use browser::{Cookie, Item, OriginStorage, SavedState, StorageKind};
pub use error::BrowserError;
pub use settings::{BrowserSettings, HostRules};
pub use snapshot::{Rendered, SnapshotOptions, render};
