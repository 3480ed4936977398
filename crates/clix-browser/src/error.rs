//! Why a browser command failed, worded to say what to do next.

use clix_common::exit;
use clix_sandbox::SandboxError;

use crate::cdp::CdpError;

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
            BrowserError::Timeout { .. } => exit::TIMEOUT,
            BrowserError::Usage(_) => exit::USAGE,
            BrowserError::NotInstalled { .. } => exit::NOT_FOUND,
            _ => exit::FAILURE,
        }
    }
}

/// Chromium's answers to a call whose page, or tab, went away while it was
/// answered: the document navigated (its execution context destroyed) or
/// the target closed. For an action these are its result, not its failure.
const LOST_TO_NAVIGATION: &[&str] = &[
    "Inspected target navigated or closed",
    "Execution context was destroyed",
    "Cannot find context with specified id",
    "Cannot find default execution context",
    "Session with given id not found",
    "No target with given id found",
    "Target closed",
];

impl BrowserError {
    /// Whether the call's answer was lost to a navigation or to its tab closing.
    pub(crate) fn lost_to_navigation(&self) -> bool {
        matches!(self, BrowserError::Protocol(m) if LOST_TO_NAVIGATION.iter().any(|lost| m.contains(lost)))
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

/// What the browser's operations return.
pub(crate) type Result<T> = std::result::Result<T, BrowserError>;
